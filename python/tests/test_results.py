"""Running from Python: one run, sweeps in memory and into a directory, DataFrames, reading a
results directory."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import quiclab

from conftest import SMALL

IDENTITY = ["id", "point", "rep", "seed", "scenario"]


def test_one_run_gives_its_result_flows_and_series(small: quiclab.Scenario) -> None:
    r = small.run()
    assert r.id == "p0-r0" and r["scenario"] == "small"
    assert [f["name"] for f in r["flows"]] == ["quic", "tcp"]
    df = r.df
    assert list(df["flow"]) == ["quic", "tcp"]
    assert list(df.columns[:7]) == IDENTITY + ["flow_index", "flow"]
    assert (df["goodput_bps"] > 0).all()
    series = r.series
    assert set(series["flow"]) == {"quic", "tcp"}
    assert {"t_s", "cwnd_bytes", "srtt_ms"} <= set(series.columns)
    assert (series["id"] == "p0-r0").all()
    # The simulator is deterministic: the same run twice is the same result.
    assert small.run(0).data == r.data
    assert small.run("p0-r0", series=False).series.empty


def test_unknown_run_id_is_a_key_error(small: quiclab.Scenario) -> None:
    with pytest.raises(KeyError, match="p9-r9"):
        small.run("p9-r9")
    with pytest.raises(IndexError):
        small.run(5)


def test_sweep_in_memory_one_row_per_run_and_flow_with_axes(
    small_sweep: quiclab.Scenario,
) -> None:
    res = small_sweep.sweep(jobs=2)
    assert len(res) == 4 and res.failures == [] and res.path is None
    df = res.df
    assert df.shape[0] == 4 * 2
    # Identity, then the sweep axis as a column named after its key, values as written.
    assert list(df.columns[:6]) == IDENTITY + ["link.loss"]
    assert list(df["link.loss"]) == ["0%"] * 4 + ["1%"] * 4
    assert list(df["id"]) == ["p0-r0", "p0-r0", "p0-r1", "p0-r1", "p1-r0", "p1-r0", "p1-r1", "p1-r1"]
    assert list(df["flow"]) == ["quic", "tcp"] * 4
    # Types: measured numbers are numbers, counts integers, seeds unsigned.
    assert df["goodput_bps"].dtype == "float64"
    assert df["seed"].dtype == "uint64"
    assert df["rep"].dtype == "int64"
    # Absent = not measured, never 0: TCP has no research-model fields, QUIC no TCP config.
    assert "links.bottleneck_down.lost_packets" in df.columns
    assert df.groupby("link.loss")["goodput_bps"].mean().loc["1%"] < df.groupby("link.loss")[
        "goodput_bps"
    ].mean().loc["0%"]
    series = res.series
    assert set(series["id"]) == {"p0-r0", "p0-r1", "p1-r0", "p1-r1"}
    assert "link.loss" in series.columns


def test_sweep_into_a_directory_matches_the_cli(
    small_sweep: quiclab.Scenario, tmp: Path, quiclab_bin: Path
) -> None:
    scenario = tmp / "small.toml"
    scenario.write_text(SMALL)
    cli_out, py_out = tmp / "cli", tmp / "py"
    subprocess.run(
        [
            str(quiclab_bin), "sim", str(scenario), "--vary", "link.loss=0%,1%", "--reps", "2",
            "--out", str(cli_out), "-j", "2",
        ],
        check=True,
        capture_output=True,
    )
    sc = quiclab.load(scenario, vary={"link.loss": ["0%", "1%"]}, reps=2)
    res = sc.sweep(py_out, jobs=1)
    assert res.path == py_out and len(res) == 4
    # The same library: byte-identical results, summary and series.
    for name in ["results.jsonl", "summary.csv", "series/p1-r1.csv"]:
        assert (py_out / name).read_bytes() == (cli_out / name).read_bytes(), name
    # The directory's table equals the in-memory sweep's.
    in_memory = small_sweep.sweep()
    pd.testing.assert_frame_equal(res.df, in_memory.df)
    pd.testing.assert_frame_equal(res.series, in_memory.series)
    assert set(res.summary.columns) >= {"metric", "n", "mean"}


def test_read_results_of_a_cli_directory(tmp: Path, quiclab_bin: Path) -> None:
    scenario = tmp / "small.toml"
    scenario.write_text(SMALL)
    subprocess.run(
        [str(quiclab_bin), "sim", str(scenario), "--reps", "2", "--out", str(tmp / "out")],
        check=True,
        capture_output=True,
    )
    res = quiclab.read_results(tmp / "out")
    assert [r["id"] for r in res.runs] == ["p0-r0", "p0-r1"]
    assert res.df.shape[0] == 4
    assert len(res.series) > 0
    expected = quiclab.loads(SMALL, name="small.toml", reps=2).sweep().df
    pd.testing.assert_frame_equal(res.df, expected)


def test_parquet_via_pandas_equals_the_dataframe(small_sweep: quiclab.Scenario, tmp: Path) -> None:
    res = small_sweep.sweep(tmp / "out")
    parquet = tmp / "out" / "results.parquet"
    # Written by the Rust side with every sweep; read here by pandas alone.
    assert parquet.is_file()
    from_parquet = pd.read_parquet(parquet)
    from_jsonl = quiclab.Results(res.runs).df
    pd.testing.assert_frame_equal(from_parquet, from_jsonl)
    series_parquet = tmp / "out" / "series.parquet"
    assert series_parquet.is_file()
    pd.testing.assert_frame_equal(
        pd.read_parquet(series_parquet),
        quiclab.Results(res.runs, series_csv={
            r["id"]: (tmp / "out" / "series" / f"{r['id']}.csv").read_text() for r in res.runs
        }).series,
    )


def test_connections_one_row_each_from_parquet_or_jsonl(tmp: Path) -> None:
    """A flow of three connections (0-RTT on the second and third) has three rows, and the
    directory's connections.parquet equals the table built from results.jsonl."""
    scenario = quiclab.loads(
        SMALL.replace('app = "bulk"\ncc = "cubic"\n\n[[flow]]', 'app = "download"\n'
                      'size = "50kB"\nconnections = 3\nzero_rtt = true\ncc = "cubic"\n\n[[flow]]', 1),
        name="small.toml",
    )
    res = scenario.sweep(tmp / "out")
    parquet = tmp / "out" / "connections.parquet"
    assert parquet.is_file()
    conns = res.connections
    pd.testing.assert_frame_equal(conns, quiclab.Results(res.runs).connections)
    quic = conns[conns["flow"] == "quic"]
    assert list(quic["connection"]) == [0, 1, 2]
    assert list(quic["zero_rtt_accepted"]) == [False, True, True]
    assert quic["handshake_s"].notna().all()
    # The flow's own row counts them; its handshake is the first connection's.
    flow = res.df[res.df["flow"] == "quic"].iloc[0]
    assert flow["connections"] == 3
    assert flow["handshake_s"] == quic["handshake_s"].iloc[0]


def test_a_directory_with_results_is_refused_without_resume(
    small: quiclab.Scenario, tmp: Path
) -> None:
    small.sweep(tmp / "out")
    with pytest.raises(quiclab.ExperimentError, match="already holds results"):
        small.sweep(tmp / "out")
    # Resuming a complete sweep runs nothing and gives the same results.
    before = (tmp / "out" / "results.jsonl").read_bytes()
    again = small.sweep(tmp / "out", resume=True)
    assert (tmp / "out" / "results.jsonl").read_bytes() == before and len(again) == 1
    other = quiclab.loads(SMALL, name="small.toml", seed=8)
    with pytest.raises(quiclab.ExperimentError, match="different scenario"):
        other.sweep(tmp / "out", resume=True)


def test_reading_what_is_not_a_results_directory_raises(tmp: Path) -> None:
    with pytest.raises(quiclab.ExperimentError, match="not a quiclab results directory"):
        quiclab.read_results(tmp)


def test_error_records_are_listed_not_tabled(tmp: Path, small: quiclab.Scenario) -> None:
    small.sweep(tmp / "out")
    jsonl = tmp / "out" / "results.jsonl"
    line = json.loads(jsonl.read_text())
    crashed = {k: line[k] for k in ("point", "rep", "seed")} | {"id": "p0-r1", "error": "boom"}
    jsonl.write_text(jsonl.read_text() + json.dumps(crashed) + "\n")
    res = quiclab.read_results(tmp / "out")
    assert [e["id"] for e in res.errors] == ["p0-r1"]
    assert list(res.df["id"].unique()) == ["p0-r0"]
