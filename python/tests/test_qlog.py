"""qlog files of both QUIC stacks against the JSON Schema of the records quiclab writes
(crates/transport/tests/qlog-schema.json, draft 2020-12): `quiclab sim --qlog` on a quinn flow
and a research-model flow, every record of every `.sqlog` validated, the vantage point of each
file and RTTs in milliseconds checked; the records quinn wrote before the rewrite (RTTs in
seconds, an unknown vantage point, packets without frames) fail the same checks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from conftest import REPO

SCHEMA = REPO / "crates" / "transport" / "tests" / "qlog-schema.json"

#: One-way delay of the path: every RTT sample is at least twice it.
ONE_WAY_MS = 10

#: A quinn flow and a research-model flow, two connections each (the second with 0-RTT), on a
#: lossy path: every packet type, losses and metrics appear.
SCENARIO = f"""\
[run]
name = "qlog"
duration = "5s"
seed = 3

[link]
rate = "10Mbit"
delay = "{ONE_WAY_MS}ms"
queue = "25pkt"
loss = "2%"

[[flow]]
name = "q"
stack = "quic"
app = "download"
size = "200KB"
connections = 2
zero_rtt = true
cc = "newreno"

[[flow]]
name = "m"
stack = "quic-model"
app = "download"
size = "200KB"
connections = 2
zero_rtt = true
cc = "newreno"
"""

#: What quinn-proto's own qlog writer produced: a header with an unknown vantage point, a
#: packet without frames, RTTs in seconds (and a group_id per event).
OLD_RECORDS = [
    {
        "qlog_version": "0.3",
        "qlog_format": "JSON-SEQ",
        "title": "quiclab dl client",
        "trace": {
            "vantage_point": {"type": "unknown"},
            "title": "quiclab dl client",
            "configuration": {"time_offset": 0.0},
        },
    },
    {
        "time": 0.0,
        "name": "transport:packet_sent",
        "data": {"header": {"packet_type": "initial", "packet_number": 0, "length": 1472}},
        "group_id": "0de1c7b8078f3757",
    },
    {
        "time": 22.4,
        "name": "recovery:metrics_updated",
        "data": {"min_rtt": 0.0224, "smoothed_rtt": 0.0224, "latest_rtt": 0.0224},
        "group_id": "0de1c7b8078f3757",
    },
]


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA.read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.fixture(scope="module")
def qlog_dir(tmp_path_factory: pytest.TempPathFactory, quiclab_bin: Path) -> Path:
    tmp = tmp_path_factory.mktemp("qlog")
    scenario = tmp / "qlog.toml"
    scenario.write_text(SCENARIO)
    subprocess.run(
        [str(quiclab_bin), "sim", str(scenario), "--qlog", str(tmp / "q"), "--out", str(tmp / "out")],
        check=True,
        capture_output=True,
    )
    return tmp / "q"


def records(data: bytes) -> list[dict]:
    """The records of a JSON-SEQ file (RFC 7464: 0x1E, a JSON text, a line feed each)."""
    assert data.endswith(b"\n"), "the last record ends with a line feed"
    out = []
    for raw in data[:-1].split(b"\n"):
        assert raw.startswith(b"\x1e"), f"record without the RFC 7464 separator: {raw[:60]!r}"
        out.append(json.loads(raw[1:]))
    return out


def problems(recs: list[dict], role: str, validator: Draft202012Validator) -> list[str]:
    """Everything wrong with one connection endpoint's records (empty: a good file)."""
    found = []
    for i, rec in enumerate(recs):
        for e in validator.iter_errors(rec):
            found.append(f"record {i}: {e.message[:200]}")
    if not recs or "qlog_version" not in recs[0]:
        found.append("the first record is not the header")
    elif recs[0].get("trace", {}).get("vantage_point", {}).get("type") != role:
        found.append(f"the vantage point is not {role}")
    # Milliseconds, which a schema cannot tell from seconds: no RTT below the path's round trip.
    for rec in recs[1:]:
        if rec.get("name") == "recovery:metrics_updated":
            for k in ("min_rtt", "smoothed_rtt", "latest_rtt"):
                v = rec["data"].get(k)
                if v is not None and not 2 * ONE_WAY_MS <= v < 10_000:
                    found.append(f"{k} = {v} is not the path's RTT in milliseconds")
    return found


def test_every_record_of_both_stacks_follows_the_schema(
    qlog_dir: Path, validator: Draft202012Validator
) -> None:
    names = sorted(p.name for p in qlog_dir.iterdir())
    assert names == [
        f"{flow}-{role}-{n}.sqlog" for flow in ("m", "q") for role in ("client", "server") for n in (0, 1)
    ]
    events: dict[str, set[str]] = {"m": set(), "q": set()}
    for name in names:
        flow, role, _ = name.split("-")
        recs = records((qlog_dir / name).read_bytes())
        assert problems(recs, role, validator) == [], name
        events[flow] |= {r["name"] for r in recs[1:]}
        events[flow] |= {
            f["frame_type"] for r in recs[1:] for f in r["data"].get("frames", [])
        }
    for flow, seen in events.items():
        for want in (
            "transport:packet_sent",
            "transport:packet_received",
            "recovery:packet_lost",
            "recovery:metrics_updated",
            "stream",
            "ack",
            "crypto",
        ):
            assert want in seen, f"{flow}: no {want}"


def test_quinns_former_records_fail(validator: Draft202012Validator) -> None:
    header, packet, metrics = OLD_RECORDS
    assert not validator.is_valid(header), "unknown vantage point"
    assert not validator.is_valid(packet), "a packet without frames"
    seconds = dict(metrics)
    del seconds["group_id"]
    assert validator.is_valid(seconds), "only the unit is wrong"
    found = problems([header, packet, seconds], "client", validator)
    assert any("vantage point" in p for p in found), found
    assert any("frames" in p for p in found), found
    assert any("milliseconds" in p for p in found), found
