"""Loading scenarios: files, text, overrides, axes, and errors as exceptions."""

from __future__ import annotations

from pathlib import Path

import pytest

import quiclab
from quiclab.scenario import value_text

from conftest import REPO, SMALL


def test_load_file_with_overrides_and_axes() -> None:
    sc = quiclab.load(
        REPO / "scenarios/examples/lossy-sweep.toml",
        set={"link.rate": "20Mbit", "run.duration": "4s"},
        vary={"link.loss": ["0%", "1%"]},
        reps=2,
        seed=11,
    )
    assert sc.name == "lossy-sweep"
    assert sc.reps == 2 and sc.seed == 11
    # vary replaces the file's loss axis in place; the file's cc axis stays.
    assert sc.points == [
        {"link.loss": "0%", "flow.cc": "newreno"},
        {"link.loss": "0%", "flow.cc": "cubic"},
        {"link.loss": "1%", "flow.cc": "newreno"},
        {"link.loss": "1%", "flow.cc": "cubic"},
    ]
    assert len(sc) == 8
    assert [r.id for r in sc.runs[:3]] == ["p0-r0", "p0-r1", "p1-r0"]
    resolved = sc.resolved(0)
    assert resolved["bottleneck"]["up"]["rate"] == {"Fixed": 20_000_000}
    assert resolved["duration"] == {"secs": 4, "nanos": 0}


def test_loads_names_and_seeds_like_the_cli() -> None:
    sc = quiclab.loads(SMALL, name="small.toml")
    assert sc.name == "small" and sc.seed == 7 and len(sc) == 1
    assert sc.points == [{}]
    # Each run's seed is the library's run_seed: the same for the same scenario.
    assert quiclab.loads(SMALL).runs == sc.runs


def test_scenario_error_in_text_has_file_line_col_and_allowed() -> None:
    text = SMALL.replace('cc = "cubic"\n\n[[flow]]', 'cc = "cubik"\n\n[[flow]]')
    with pytest.raises(quiclab.ScenarioError) as info:
        quiclab.loads(text, name="bad.toml")
    e = info.value
    line = text.splitlines().index('cc = "cubik"') + 1
    assert str(e).startswith(f"bad.toml:{line}:6: "), str(e)
    assert (e.file, e.line, e.column) == ("bad.toml", line, 6)
    assert "cubic" in e.allowed and "did you mean" in e.message
    assert isinstance(e, quiclab.QuiclabError)


def test_scenario_error_in_a_file_names_the_file(tmp: Path) -> None:
    path = tmp / "broken.toml"
    path.write_text('[link]\nrate = "fast"\n')
    with pytest.raises(quiclab.ScenarioError) as info:
        quiclab.load(path)
    assert str(info.value).startswith(f"{path}:2:8: "), str(info.value)


def test_override_errors_name_the_override() -> None:
    with pytest.raises(quiclab.ScenarioError) as info:
        quiclab.loads(SMALL, set={"link.rat": "5Mbit"})
    e = info.value
    assert e.file == "--set link.rat=5Mbit" and e.line is None
    assert "link.rate" in str(e)
    with pytest.raises(quiclab.ScenarioError, match=r"^--set run\.reps=0: "):
        quiclab.loads(SMALL, reps=0)


def test_missing_file_is_a_scenario_error(tmp: Path) -> None:
    with pytest.raises(quiclab.ScenarioError, match="cannot read the scenario"):
        quiclab.load(tmp / "nope.toml")


def test_value_text_reads_like_the_command_line() -> None:
    assert value_text("5Mbit") == "5Mbit"
    assert value_text(True) == "true"
    assert value_text(3) == "3"
    assert value_text(0.25) == "0.25"
    # A comma would split a --vary list: such text is quoted.
    assert value_text("a,b") == '"a,b"'
    assert value_text(["1s", 2]) == '["1s", 2]'
    with pytest.raises(TypeError):
        value_text(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        value_text(float("nan"))


def test_vary_needs_a_list() -> None:
    with pytest.raises(TypeError, match="list of values"):
        quiclab.loads(SMALL, vary={"link.loss": "1%"})  # type: ignore[dict-item]


#: A download over a path that is down for the whole run: the handshake times out.
DOWN = """\
[run]
duration = "40s"

[link]
blackout = [{ start = "0s", duration = "100s" }]

[[flow]]
name = "d"
app = "download"
size = "10kB"
"""


def test_run_raises_on_a_failed_flow_unless_asked_not_to() -> None:
    sc = quiclab.loads(DOWN)
    with pytest.raises(quiclab.FlowError) as info:
        sc.run()
    err = info.value
    assert isinstance(err, quiclab.RunError) and isinstance(err, quiclab.QuiclabError)
    assert str(err).startswith("run p0-r0 failed: flow d: "), str(err)
    assert "check=False" in str(err)
    assert err.run == "p0-r0"
    assert [name for name, _ in err.flows] == ["d"]
    assert err.result.data["flows"][0]["error"] == err.flows[0][1]
    # check=False returns the result with the flow's error.
    result = sc.run(check=False)
    assert result.data["flows"][0]["error"]
    # A run whose flows succeed is returned as before.
    assert quiclab.loads(SMALL).run().data["flows"][0]["error"] is None


def test_describe_says_what_each_flow_does() -> None:
    sc = quiclab.loads(SMALL, vary={"link.delay": ["5ms", "10ms"]})
    lines = [
        "quic: quic, cubic, bulk upload (client → server) for 1s",
        "tcp: tcp + TLS 1.3, cubic, bulk upload (client → server) for 1s",
    ]
    assert sc.describe() == lines
    assert sc.describe(1) == lines
    with pytest.raises(IndexError):
        sc.describe(2)


def test_keys_that_cannot_affect_the_flow_are_refused() -> None:
    with pytest.raises(quiclab.ScenarioError) as info:
        quiclab.loads(SMALL, set={"flow.0.zero_rtt": True})
    assert "set app = \"download\" and connections = 2 or more" in str(info.value)
