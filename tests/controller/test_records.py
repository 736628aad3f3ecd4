"""DecisionRecords: the last N per HPA, newest last, forgotten with the HPA; the JSON
form of the writes, shadow mode included; rendering from that JSON."""

from __future__ import annotations

import gc
import json
from datetime import UTC, datetime, timedelta

import pytest

from hpactl.controller.explain_text import render_records
from hpactl.controller.horizontal import SyncRecord
from hpactl.controller.records import DecisionRecords
from hpactl.core.decide import Explanation
from hpactl.core.metrics_eval import Event

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
RESCALE = Event("Normal", "SuccessfulRescale", "New size: 4; reason: cpu above target")


def rec(key: str = "ns/web", desired: int = 4, rescaled: bool = True) -> SyncRecord:
    expl = Explanation("metrics", 2, desired, metric_proposal=desired, metric_name="cpu")
    return SyncRecord(key, 2, desired, rescaled, "", expl, status_written=True, events=(RESCALE,))


def test_keeps_the_last_n_newest_last_and_forgets() -> None:
    records = DecisionRecords(3)
    for i in range(5):
        records.add(rec(desired=i + 2), T0 + timedelta(seconds=15 * i))
    kept = records.get("ns/web")
    assert [r.to_dict()["desiredReplicas"] for r in kept] == [4, 5, 6]
    assert [r.time for r in kept] == [T0 + timedelta(seconds=15 * i) for i in (2, 3, 4)]
    doc = records.to_json("ns/web")
    assert doc is not None and [r["desiredReplicas"] for r in doc["records"]] == [4, 5, 6]
    assert records.to_json("ns/other") is None and records.get("ns/other") == ()
    records.forget("ns/web")
    assert "ns/web" not in records and records.to_json("ns/web") is None


def test_zero_keeps_nothing_and_negative_is_refused() -> None:
    records = DecisionRecords(0)
    records.add(rec(), T0)
    assert len(records) == 0 and not records.enabled
    with pytest.raises(ValueError, match="must not be negative"):
        DecisionRecords(-1)


def test_writes_as_made() -> None:
    records = DecisionRecords(1)
    records.add(rec(), T0)
    doc = records.to_json("ns/web")
    assert doc is not None
    (r,) = doc["records"]
    assert r["writes"] == {
        "scale": {"attempted": True, "replicas": 4, "result": "ok", "error": None},
        "status": True,
        "events": [
            {
                "type": "Normal",
                "reason": "SuccessfulRescale",
                "message": "New size: 4; reason: cpu above target",
            }
        ],
    }
    assert "wouldEmit" not in r
    assert "writes: scale set to 4; status written; events: Normal SuccessfulRescale" in (
        render_records(doc)
    )


def test_shadow_records_say_nothing_was_written() -> None:
    records = DecisionRecords(1, shadow=True)
    records.add(rec(), T0)
    doc = records.to_json("ns/web")
    assert doc is not None
    (r,) = doc["records"]
    assert r["writes"] == {
        "scale": {"attempted": False, "replicas": 4, "result": "shadow", "error": None},
        "status": False,
        "events": [],
        "shadow": True,
    }
    assert r["wouldEmit"][0]["reason"] == "SuccessfulRescale"
    text = render_records(doc)
    assert text.startswith("ns/web at 2026-01-01T12:00:00Z: (shadow) would scale up from 2 to 4")
    assert "writes: none (shadow mode; a writer would set the scale to 4)" in text


def test_older_records_read_back_as_written_and_leave_the_collector() -> None:
    records = DecisionRecords(3)
    written = []
    for i in range(5):
        records.add(rec(desired=i + 2, rescaled=i % 2 == 0), T0 + timedelta(seconds=15 * i))
        written.append(records.get("ns/web")[-1].to_dict())  # while it is the newest
    kept = records.get("ns/web")
    # The same documents (as JSON: what /debug/hpa serves and hpactl explain reads).
    assert [r.to_dict() for r in kept] == [json.loads(json.dumps(d)) for d in written[-3:]]
    assert [r.time for r in kept] == [T0 + timedelta(seconds=15 * i) for i in (2, 3, 4)]
    # Only the newest is an object graph; the older ones are tuples of atoms the
    # collector stops walking once it has looked at them (the pairs, then the tuple
    # holding them): at 10,000 HPAs, ~400,000 objects fewer to walk.
    gc.collect()
    gc.collect()
    past, newest = records._by_key["ns/web"]
    assert len(past) == 2 and not gc.is_tracked(past)
    assert newest is kept[-1]
