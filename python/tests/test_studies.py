"""`quiclab compare` and `quiclab validate` as library calls from Python."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import quiclab

from conftest import SMALL


def _sweep(out: Path, seed: int) -> quiclab.Results:
    sc = quiclab.loads(
        SMALL, name="small.toml", vary={"link.loss": ["0%", "1%"]}, reps=3, seed=seed
    )
    return sc.sweep(str(out))


def test_compare_gives_medians_and_ratios_point_by_point(tmp: Path) -> None:
    a = _sweep(tmp / "a", seed=1)
    b = _sweep(tmp / "b", seed=2)
    c = quiclab.compare({"a": tmp / "a", "b": tmp / "b"}, metrics="flows.0.goodput_bps")
    df = c.df
    assert list(df.columns) == quiclab.studies.COMPARE_COLUMNS
    # Two sweep points × two sources, never pooled across points.
    assert len(df) == 4
    assert sorted(df["point"].unique()) == ["link.loss=0%", "link.loss=1%"]
    assert (df["n"] == 3).all() and (df["runs"] == 3).all()
    for label, res in (("a", a), ("b", b)):
        quic = res.df[res.df["flow"] == "quic"]
        for loss, part in quic.groupby("link.loss"):
            row = df[(df["source"] == label) & (df["point"] == f"link.loss={loss}")].iloc[0]
            assert row["median"] == pytest.approx(part["goodput_bps"].median(), rel=1e-12)
            assert row["mean"] == pytest.approx(part["goodput_bps"].mean(), rel=1e-12)
            # Fewer than 6 runs: no distribution-free interval of the median.
            assert math.isnan(row["median_ci95_low"])
    first = df[df["source"] == "a"]
    assert (first["ratio_to_first"] == 1.0).all()
    for point in ("link.loss=0%", "link.loss=1%"):
        ra = df[(df["source"] == "a") & (df["point"] == point)].iloc[0]
        rb = df[(df["source"] == "b") & (df["point"] == point)].iloc[0]
        assert rb["ratio_to_first"] == pytest.approx(rb["median"] / ra["median"])
    assert c.missing == []
    # A filter on a sweep axis keeps that point only.
    only = quiclab.compare([tmp / "a", tmp / "b"], "flows.0.goodput_bps", where={"link.loss": "1%"})
    assert {r["point"] for r in only.rows} == {"link.loss=1%"}
    assert {r["source"] for r in only.rows} == {str(tmp / "a"), str(tmp / "b")}


def test_compare_errors_name_what_is_wrong(tmp: Path) -> None:
    _sweep(tmp / "a", seed=1)
    with pytest.raises(quiclab.ExperimentError, match="flows.0.nope"):
        quiclab.compare([tmp / "a", tmp / "a"], "flows.0.nope")
    with pytest.raises(quiclab.ExperimentError, match="no results.jsonl"):
        quiclab.compare([tmp / "a", tmp], "flows.0.goodput_bps")


def test_validate_runs_a_case_of_the_quick_grid() -> None:
    assert "link-bandwidth" in quiclab.validation_cases()
    v = quiclab.validate("link-bandwidth")
    assert v.passed, v.text
    assert v.points and {p["case"] for p in v.points} == {"link-bandwidth"}
    assert "== link-bandwidth ==" in v.text
    assert set(v.df.columns) >= {"label", "expected", "measured", "error", "tolerance", "pass"}
    with pytest.raises(ValueError, match="unknown validation case"):
        quiclab.validate("no-such-case")
