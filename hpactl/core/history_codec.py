"""Persisted form of the per-HPA history: what to keep, and its bytes.

Upstream keeps recommendations and scale events only in memory, so a new leader
starts empty. To hand them over, a leader writes them to the cluster; this module is
the pure half of that (no I/O, no clock): :func:`compact_history` drops what no later
decision can use, :func:`encode_histories` / :func:`decode_histories` turn a set of
histories into compact gzip'd JSON and back, and decoding never raises on garbage.

Format (version 1), gzip of compact JSON::

    {"v": 1, "w": writer, "e": epoch, "t": written_at_us,
     "h": {"ns/name": {"u": uid, "r": [[replicas, ts_us], ...],
                       "su": [[change, ts_us], ...], "sd": [[change, ts_us, 1], ...],
                       "f": [["0/external:queue", since_us, 1], ...]}}}

Timestamps are integer microseconds since the Unix epoch: ``datetime`` has exactly
microsecond resolution, so the round trip is exact (the tie rules of
:mod:`hpactl.core.history` compare timestamps exactly). A third element ``1`` on an
event is its ``outdated`` flag. ``f`` holds the metric fallback's failure streaks
(:class:`~hpactl.core.history.FailingMetric`: ``<index>/<label>``, the first failure,
and ``1`` when the fallback is active), so that a new leader neither waits a
``failureDuration`` again nor announces an activation twice; records written before
it existed have no ``f`` and decode with no streak. Empty lists are left out. The uid is stored whole:
it costs about 25 of the 54 compressed bytes per HPA, and 10,000 HPAs still take
only 543 KB, well below the object limit (tests/core/test_history_codec.py).
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from hpactl.core.history import FailingMetric, History, Recommendation, ScaleEvent, in_window

__all__ = [
    "FORMAT_VERSION",
    "DecodedHistories",
    "HistoryRecord",
    "compact_history",
    "decode_histories",
    "encode_histories",
]

FORMAT_VERSION = 1
#: gzip level. Measured on 10,000 HPAs (the test's data): level 6 gives 543 KB in
#: 0.17 s, level 9 536 KB (1.3% less) in 0.29 s, level 1 665 KB; a save runs every
#: sync period, so 6.
GZIP_LEVEL = 6

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_INT32 = 2**31 - 1
#: datetime.max in microseconds since the epoch: anything above cannot be a datetime.
_MAX_TS_US = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - _EPOCH) // timedelta(
    microseconds=1
)
_UID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]{0,127}$")
#: namespace (DNS label, <= 63) "/" name (DNS subdomain, <= 253).
_MAX_KEY = 63 + 1 + 253
#: A fallback's metric key, ``<index>/<label>`` (hpactl.core.metric_fallback.Fallback.key):
#: the label holds a metric or resource name (any path segment: may contain spaces,
#: "/" for an extended resource, non-ASCII), so only control characters are refused.
_FAILING_METRIC = re.compile(r"^(0|[1-9][0-9]{0,5})/[^\x00-\x1f\x7f]{1,1024}\Z")


@dataclass(frozen=True, slots=True)
class HistoryRecord:
    """One HPA's history with the uid it belongs to: an HPA deleted and created again
    under the same name has a new uid and must not inherit its predecessor's past."""

    uid: str
    history: History


@dataclass(frozen=True, slots=True)
class DecodedHistories:
    """What :func:`decode_histories` could read; ``problems`` has one line per record
    (or for the whole blob) that was dropped, saying why."""

    writer: str
    epoch: int
    written_at: datetime | None
    records: dict[str, HistoryRecord]
    problems: tuple[str, ...]


# ------------------------------------------------------------------------- compaction


def compact_history(
    history: History, now: datetime, *, window: float, up_period: float, down_period: float
) -> History:
    """Only what decisions at ``now`` or later can still use.

    ``window`` is the HPA's longest stabilization window (seconds), ``up_period`` /
    ``down_period`` the longest scale-up / scale-down policy period. For any later
    sequence of syncs (same spec, clock not going back) the stabilized values and the
    replicas changed per period are the same as with the full history:

    * a recommendation outside the window now is outside every later window;
    * a recommendation with a strictly later one of at least its value never decides
      a maximum (whenever it is inside a window, so is the later one), nor, with a
      later one of at most its value, a minimum; one that can decide neither is
      dropped;
    * if every recommendation would go, the newest stays: upstream seeds
      ``(current, now)`` only into an empty list, so "seen before" must survive;
    * scale events outside their period, or already marked outdated, never count
      again, unless the other direction's policies read further back (see
      :func:`_live_events`);
    * the metric fallback's failure streaks are all kept: a streak lives only while
      its metric keeps failing (a success ends it), and its start decides when the
      fallback begins however long ago it was.
    """
    cutoff = now - timedelta(seconds=window)
    recs = history.recommendations
    keep = _needed(recs, cutoff)
    kept = tuple(r for r, k in zip(recs, keep, strict=True) if k)
    if recs and not kept:
        newest = max(range(len(recs)), key=lambda i: (recs[i].timestamp, i))
        kept = (recs[newest],)
    return replace(
        history,
        recommendations=kept,
        scale_up_events=_live_events(history.scale_up_events, now, up_period, down_period),
        scale_down_events=_live_events(history.scale_down_events, now, down_period, up_period),
    )


def _live_events(
    events: tuple[ScaleEvent, ...], now: datetime, own: float, other: float
) -> tuple[ScaleEvent, ...]:
    """The events of one direction that can still count.

    Both rate limits sum *both* lists over their own policies' periods, so a list is
    also read with the other direction's periods. When those are no longer than its
    own longest period (``own``, the one ``storeScaleEvent`` marks it outdated with),
    an event outside ``own`` (outdated or not) never counts again and the rest is
    never reused: drop it. When the other direction reads further back, an outdated
    event still counts there until ``storeScaleEvent`` overwrites its slot (the last
    outdated one in list order), and which one that is depends on the positions of
    every event, dead ones included: the list is kept as it is (it is bounded by
    upstream's slot reuse).
    """
    if other > own:
        return events
    cut = now - timedelta(seconds=own)
    return tuple(e for e in events if not e.outdated and in_window(e.timestamp, cut))


def _needed(recs: tuple[Recommendation, ...], cutoff: datetime) -> list[bool]:
    """Per entry: inside the window and not dominated for both the max and the min by
    a strictly later entry. O(n log n): newest first, equal timestamps as one group."""
    keep = [False] * len(recs)
    order = sorted(
        (i for i, r in enumerate(recs) if in_window(r.timestamp, cutoff)),
        key=lambda i: recs[i].timestamp,
        reverse=True,
    )
    later_max: int | None = None
    later_min: int | None = None
    g = 0
    while g < len(order):
        ts = recs[order[g]].timestamp
        end = g
        while end < len(order) and recs[order[end]].timestamp == ts:
            end += 1
        group = order[g:end]
        for i in group:
            v = recs[i].recommendation
            keep[i] = (later_max is None or v > later_max) or (later_min is None or v < later_min)
        values = [recs[i].recommendation for i in group]
        later_max = max(values) if later_max is None else max(later_max, *values)
        later_min = min(values) if later_min is None else min(later_min, *values)
        g = end
    return keep


# ---------------------------------------------------------------------------- encoding


def _us(ts: datetime) -> int:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (ts - _EPOCH) // timedelta(microseconds=1)


def _dt(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


def _events(events: tuple[ScaleEvent, ...]) -> list[list[int]]:
    return [
        [e.replica_change, _us(e.timestamp), 1]
        if e.outdated
        else [e.replica_change, _us(e.timestamp)]
        for e in events
    ]


def encode_histories(
    records: Mapping[str, HistoryRecord], *, writer: str, epoch: int, written_at: datetime
) -> bytes:
    """Deterministic bytes (sorted keys, gzip mtime 0): equal input, equal output."""
    h: dict[str, Any] = {}
    for key in sorted(records):
        rec = records[key]
        hist = rec.history
        item: dict[str, Any] = {"u": rec.uid}
        if hist.recommendations:
            item["r"] = [[r.recommendation, _us(r.timestamp)] for r in hist.recommendations]
        if hist.scale_up_events:
            item["su"] = _events(hist.scale_up_events)
        if hist.scale_down_events:
            item["sd"] = _events(hist.scale_down_events)
        if hist.failing_metrics:
            item["f"] = [
                [m.metric, _us(m.since), 1] if m.active else [m.metric, _us(m.since)]
                for m in hist.failing_metrics
            ]
        h[key] = item
    doc = {"v": FORMAT_VERSION, "w": writer, "e": epoch, "t": _us(written_at), "h": h}
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    return gzip.compress(raw, compresslevel=GZIP_LEVEL, mtime=0)


# ---------------------------------------------------------------------------- decoding


class _Bad(Exception):
    """A record (or the blob) that does not have the expected shape."""


def _int(v: Any, lo: int, hi: int, what: str) -> int:
    if type(v) is not int or not lo <= v <= hi:
        raise _Bad(f"{what}: {_short(v)} is not an integer in [{lo}, {hi}]")
    return v


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _list(item: Mapping[str, Any], field: str, max_entries: int) -> list[Any]:
    v = item.get(field, [])
    if not isinstance(v, list):
        raise _Bad(f"{field}: not a list")
    if len(v) > max_entries:
        raise _Bad(f"{field}: {len(v)} entries, more than {max_entries}")
    return v


def _pair(e: Any, field: str, lo: int, allow_flag: bool) -> tuple[int, datetime, bool]:
    if not isinstance(e, list) or not (len(e) == 2 or (allow_flag and len(e) == 3)):
        raise _Bad(f"{field}: entry {_short(e)} is not [value, timestamp]")
    value = _int(e[0], lo, _MAX_INT32, f"{field} value")
    ts = _dt(_int(e[1], 0, _MAX_TS_US, f"{field} timestamp"))
    flag = len(e) == 3 and _int(e[2], 0, 1, f"{field} outdated flag") == 1
    return value, ts, flag


def _record(item: Any, max_entries: int) -> HistoryRecord:
    if not isinstance(item, dict):
        raise _Bad("not an object")
    uid = item.get("u")
    if not isinstance(uid, str) or not _UID.match(uid):
        raise _Bad(f"bad uid {_short(uid)}")
    recs = []
    for e in _list(item, "r", max_entries):
        value, ts, _ = _pair(e, "r", 0, False)
        recs.append(Recommendation(value, ts))
    events: dict[str, tuple[ScaleEvent, ...]] = {}
    for field in ("su", "sd"):
        out = []
        for e in _list(item, field, max_entries):
            change, ts, outdated = _pair(e, field, 0, True)
            out.append(ScaleEvent(change, ts, outdated))
        events[field] = tuple(out)
    failing = _failing(_list(item, "f", max_entries))
    return HistoryRecord(uid, History(tuple(recs), events["su"], events["sd"], failing))


def _failing(entries: list[Any]) -> tuple[FailingMetric, ...]:
    out: list[FailingMetric] = []
    seen: set[str] = set()
    for e in entries:
        if not isinstance(e, list) or len(e) not in (2, 3):
            raise _Bad(f"f: entry {_short(e)} is not [metric, since]")
        metric = e[0]
        if not isinstance(metric, str) or not _FAILING_METRIC.match(metric):
            raise _Bad(f"f: metric {_short(metric)} is not <index>/<label>")
        if metric in seen:
            raise _Bad(f"f: metric {_short(metric)} given twice")
        seen.add(metric)
        since = _dt(_int(e[1], 0, _MAX_TS_US, "f since"))
        active = len(e) == 3 and _int(e[2], 0, 1, "f active flag") == 1
        out.append(FailingMetric(metric, since, active))
    return tuple(out)


def _valid_key(key: str) -> bool:
    ns, sep, name = key.partition("/")
    return bool(sep and ns and name) and "/" not in name and len(key) <= _MAX_KEY


def _inflate(data: bytes, limit: int) -> bytes:
    d = zlib.decompressobj(wbits=31)  # gzip only
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as exc:
        raise _Bad(f"not gzip data: {exc}") from None
    if len(out) > limit or d.unconsumed_tail:
        raise _Bad(f"more than {limit} bytes once decompressed")
    if not d.eof:
        raise _Bad("truncated gzip data")
    if d.unused_data:
        raise _Bad(f"{len(d.unused_data)} bytes after the gzip data")
    return out


def _empty(problem: str) -> DecodedHistories:
    return DecodedHistories("", 0, None, {}, (problem,))


def decode_histories(
    data: bytes, *, max_decoded_bytes: int = 32 << 20, max_entries: int = 256
) -> DecodedHistories:
    """Whatever of ``data`` is well-formed; never raises on bad input.

    A blob that is not gzip, not JSON, of another version or of the wrong shape gives
    no records and one problem; a malformed record (wrong types, negative or
    out-of-range values, more than ``max_entries`` entries in a list, a bad uid or
    key) is dropped with a problem naming its key. Decompression stops at
    ``max_decoded_bytes`` (a gzip bomb costs that much memory, no more).
    """
    try:
        raw = _inflate(data, max_decoded_bytes)
    except _Bad as exc:
        return _empty(f"history blob: {exc}")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return _empty(f"history blob: not JSON: {_short(str(exc))}")
    if not isinstance(doc, dict):
        return _empty("history blob: not a JSON object")
    version = doc.get("v")
    if type(version) is not int or version != FORMAT_VERSION:
        return _empty(f"history blob: unsupported version {_short(version)}")
    writer, epoch, at, hpas = doc.get("w", ""), doc.get("e"), doc.get("t"), doc.get("h", {})
    if not isinstance(writer, str):
        return _empty("history blob: writer is not a string")
    if type(epoch) is not int or epoch < 0:
        return _empty(f"history blob: bad epoch {_short(epoch)}")
    if at is not None and (type(at) is not int or not 0 <= at <= _MAX_TS_US):
        return _empty(f"history blob: bad written-at time {_short(at)}")
    if not isinstance(hpas, dict):
        return _empty("history blob: h is not an object")
    records: dict[str, HistoryRecord] = {}
    problems: list[str] = []
    for key, item in hpas.items():
        if not _valid_key(key):
            problems.append(f"history of {_short(key)}: dropped: not a namespace/name key")
            continue
        try:
            records[key] = _record(item, max_entries)
        except _Bad as exc:
            problems.append(f"history of {key}: dropped: {exc}")
    return DecodedHistories(
        writer, epoch, None if at is None else _dt(at), records, tuple(problems)
    )
