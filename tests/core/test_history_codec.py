"""hpactl.core.history_codec: compaction keeps every later decision, and the bytes
round-trip exactly and survive garbage."""

from __future__ import annotations

import gzip
import json
import random
import uuid
import zlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hpactl.core.behavior import (
    get_longest_policy_period,
    normalize_desired_replicas,
    normalize_desired_replicas_with_behaviors,
)
from hpactl.core.history import (
    FailingMetric,
    History,
    Recommendation,
    ScaleEvent,
    get_replicas_change_per_period,
    record_initial_recommendation,
    store_scale_event,
)
from hpactl.core.history_codec import (
    HistoryRecord,
    compact_history,
    decode_histories,
    encode_histories,
)
from hpactl.model.hpa import (
    PERCENT_POLICY,
    PODS_POLICY,
    SELECT_DISABLED,
    SELECT_MAX,
    SELECT_MIN,
    ScalingPolicy,
    ScalingRules,
)

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def recs(*pairs: tuple[int, float]) -> tuple[Recommendation, ...]:
    return tuple(Recommendation(v, at(s)) for v, s in pairs)


# ------------------------------------------------------------------ compaction: rules


def compact(
    h: History, now: float, window: float = 300, up: float = 60, down: float = 60
) -> History:
    return compact_history(h, at(now), window=window, up_period=up, down_period=down)


def test_recommendations_outside_the_window_are_dropped_tie_is_outside() -> None:
    h = History(recs((5, 0), (6, 100), (4, 200)))
    # now=300, window=300: cutoff 0; the entry exactly at the cutoff is old (is_old).
    assert compact(h, 300).recommendations == recs((6, 100), (4, 200))


def test_dominated_for_both_max_and_min_is_dropped() -> None:
    # 5@10 has a later 7 (>= 5, covers the max) and a later 3 (<= 5, covers the min).
    h = History(recs((5, 10), (7, 20), (3, 30)))
    assert compact(h, 40).recommendations == recs((7, 20), (3, 30))


def test_needed_for_max_only_or_min_only_is_kept() -> None:
    # 9@10: nothing later is >= 9 → needed for the max; 1@20: nothing later <= 1.
    h = History(recs((9, 10), (1, 20), (5, 30)))
    assert compact(h, 40).recommendations == h.recommendations


def test_equal_later_value_dominates_but_equal_timestamp_does_not() -> None:
    later = History(recs((5, 10), (5, 20)))
    assert compact(later, 30).recommendations == recs((5, 20))
    same_instant = History(recs((5, 10), (5, 10)))
    assert compact(same_instant, 30).recommendations == same_instant.recommendations


def test_order_of_the_list_is_kept() -> None:
    # Upstream overwrites old slots, so list order is not time order.
    h = History(recs((4, 50), (5, 10), (8, 40), (3, 45)))
    assert compact(h, 60).recommendations == recs((4, 50), (8, 40), (3, 45))


def test_all_outside_the_window_keeps_the_newest_as_seen_before() -> None:
    h = History(recs((5, 0), (9, 30), (7, 20)))
    out = compact(h, 1000)
    assert out.recommendations == recs((9, 30))
    # Why: an empty list would be seeded with (current, now) and change the decision.
    seeded_full = record_initial_recommendation(h, 1, at(1000))
    seeded_compact = record_initial_recommendation(out, 1, at(1000))
    assert seeded_full == h and seeded_compact == out
    assert record_initial_recommendation(History(), 1, at(1000)).recommendations == recs((1, 1000))


def test_failure_streaks_are_kept_however_old() -> None:
    streaks = (FailingMetric("0/cpu", at(-86_400), True), FailingMetric("1/pods:rps", at(-5)))
    h = History(recs((3, -900)), failing_metrics=streaks)
    assert compact(h, 0).failing_metrics == streaks
    assert compact(History(failing_metrics=streaks), 0) == History(failing_metrics=streaks)


def test_empty_stays_empty() -> None:
    assert compact(History(), 100) == History()


def test_scale_events_outside_their_period_and_outdated_ones_are_dropped() -> None:
    up = (ScaleEvent(1, at(0)), ScaleEvent(2, at(45)), ScaleEvent(3, at(90)))
    down = (ScaleEvent(4, at(10), True), ScaleEvent(5, at(50)), ScaleEvent(6, at(95)))
    out = compact(History((), up, down), 100, up=60, down=60)
    assert out.scale_up_events == (ScaleEvent(2, at(45)), ScaleEvent(3, at(90)))
    assert out.scale_down_events == (ScaleEvent(5, at(50)), ScaleEvent(6, at(95)))
    # in_window is strict: an event exactly one period old no longer counts.
    tie = compact(History((), (ScaleEvent(1, at(40)),)), 100, up=60, down=60)
    assert tie.scale_up_events == ()


def test_events_read_further_back_by_the_other_direction_are_kept_whole() -> None:
    # Scale-down policies (period 300) also sum the scale-up events: an outdated
    # scale-up event still counts there until upstream reuses its slot.
    up = (ScaleEvent(1, at(0), True), ScaleEvent(2, at(80)), ScaleEvent(3, at(90)))
    out = compact(History((), up, ()), 100, up=15, down=300)
    assert out.scale_up_events == up


# ------------------------------------------------------- compaction: equivalence


@dataclass(frozen=True)
class Spec:
    behavior: bool
    up: ScalingRules
    down: ScalingRules
    downscale: timedelta
    min_replicas: int
    max_replicas: int

    @property
    def window(self) -> float:
        if not self.behavior:
            return self.downscale.total_seconds()
        down = self.down.stabilization_window_seconds
        down_s = self.downscale.total_seconds() if down is None else down
        return max(self.up.stabilization_window_seconds or 0, down_s)

    @property
    def up_period(self) -> int:
        return get_longest_policy_period(self.up)

    @property
    def down_period(self) -> int:
        return get_longest_policy_period(self.down)

    def compact(self, h: History, now: datetime) -> History:
        return compact_history(
            h, now, window=self.window, up_period=self.up_period, down_period=self.down_period
        )


def random_rules(rng: random.Random, up: bool) -> ScalingRules:
    policies = tuple(
        ScalingPolicy(
            rng.choice([PODS_POLICY, PERCENT_POLICY]),
            rng.randint(1, 200 if up else 100),
            rng.choice([1, 5, 15, 30, 60, 90, 120, 300]),
        )
        for _ in range(rng.randint(1, 3))
    )
    window = (
        rng.choice([None, 0, 0, 10, 30, 60, 120, 300])
        if not up
        else rng.choice([None, 0, 0, 15, 60, 180])
    )
    select = rng.choice([SELECT_MAX, SELECT_MAX, SELECT_MIN, SELECT_DISABLED])
    return ScalingRules(window, select, policies)


def random_spec(rng: random.Random) -> Spec:
    lo = rng.randint(0, 3)
    return Spec(
        behavior=rng.random() < 0.75,
        up=random_rules(rng, True),
        down=random_rules(rng, False),
        downscale=timedelta(seconds=rng.choice([0, 15, 60, 120, 300])),
        min_replicas=lo,
        max_replicas=lo + rng.randint(1, 40),
    )


def sync(
    spec: Spec, h: History, current: int, proposal: int, now: datetime
) -> tuple[tuple[Any, ...], History]:
    """One reconcile's history-dependent part, with the real core functions."""
    h = record_initial_recommendation(h, current, now)
    if spec.behavior:
        norm = normalize_desired_replicas_with_behaviors(
            h,
            current,
            proposal,
            spec.min_replicas,
            spec.max_replicas,
            spec.up,
            spec.down,
            spec.downscale,
            now,
        )
    else:
        norm = normalize_desired_replicas(
            h, current, proposal, spec.min_replicas, spec.max_replicas, spec.downscale, now
        )
    # Every period a rate limit sums over (both lists, both directions' policies),
    # and a few shorter ones.
    used = {p.period_seconds for p in spec.up.policies + spec.down.policies}
    periods = sorted(used | {p for p in (1, 7, 45) if p <= max(used)})
    sums = tuple(
        (
            get_replicas_change_per_period(p, norm.history.scale_up_events, now),
            get_replicas_change_per_period(p, norm.history.scale_down_events, now),
        )
        for p in periods
    )
    decision = (norm.desired, norm.stabilized, norm.able_reason, norm.limit_reason, sums)
    return decision, norm.history


def rescale(spec: Spec, h: History, current: int, new: int, now: datetime) -> History:
    if not spec.behavior or new == current:
        return h
    return store_scale_event(h, current, new, spec.up_period, spec.down_period, now)


class Timeline:
    """Sync instants: mostly a period with jitter, sometimes the same instant again, an
    exact multiple (ties at cutoffs) or a microsecond off one."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.t = T0 + timedelta(microseconds=rng.randrange(10**6))
        self.period = rng.choice([1, 5, 15, 15, 30])

    def next(self) -> datetime:
        r = self.rng.random()
        if r < 0.05:
            step = timedelta(0)
        elif r < 0.5:
            step = timedelta(seconds=self.period)
        elif r < 0.6:
            step = timedelta(seconds=self.rng.choice([15, 30, 60, 120, 300]))
        elif r < 0.7:  # a microsecond either side of a window or period boundary
            step = timedelta(
                seconds=self.rng.choice([15, 30, 60, 120, 180, 300]),
                microseconds=self.rng.choice([-1, 1]),
            )
        else:
            step = timedelta(microseconds=self.rng.randrange(1, 2 * self.period * 10**6))
        self.t += step
        return self.t


def run_past(rng: random.Random, spec: Spec, tl: Timeline, steps: int) -> tuple[History, int]:
    h = History()
    current = rng.randint(spec.min_replicas, spec.max_replicas)
    proposal = current
    for _ in range(steps):
        now = tl.next()
        proposal = max(0, proposal + rng.randint(-6, 6))
        decision, h = sync(spec, h, current, proposal, now)
        desired = decision[0]
        if desired != current and rng.random() < 0.9:
            h = rescale(spec, h, current, desired, now)
            current = desired
        if rng.random() < 0.03:
            current = rng.randint(0, spec.max_replicas + 5)  # someone else scaled
    return h, current


def random_history(rng: random.Random, spec: Spec, now: datetime) -> History:
    """Arbitrary (not simulated) content: any order, equal timestamps, values; events
    flagged outdated only where storeScaleEvent could have flagged them."""
    stamps = [now - timedelta(seconds=rng.choice([0, 1, 15, 30, 60, 300, 301])) for _ in range(4)]

    def ts() -> datetime:
        if rng.random() < 0.4:
            return rng.choice(stamps)
        return now - timedelta(microseconds=rng.randrange(0, 400 * 10**6))

    def events(longest: int) -> tuple[ScaleEvent, ...]:
        out = []
        for _ in range(rng.randint(0, 5)):
            t = ts()
            outdated = t <= now - timedelta(seconds=longest) and rng.random() < 0.5
            out.append(ScaleEvent(rng.randint(1, 6), t, outdated))
        return tuple(out)

    n = rng.choice([0, 1, 2, 5, 12])
    rs = tuple(Recommendation(rng.randint(0, 12), ts()) for _ in range(n))
    if not spec.behavior:
        return History(rs)
    return History(rs, events(spec.up_period), events(spec.down_period))


def check_future(
    rng: random.Random, spec: Spec, tl: Timeline, full: History, current: int, steps: int
) -> int:
    """Run both histories through the same later syncs; return how many compared."""
    small = spec.compact(full, tl.t)
    proposal = current
    compared = 0
    for _ in range(steps):
        now = tl.next()
        proposal = max(0, proposal + rng.randint(-8, 8))
        d_full, full = sync(spec, full, current, proposal, now)
        d_small, small = sync(spec, small, current, proposal, now)
        assert d_full == d_small, (spec, now, full, small)
        compared += 1
        desired = d_full[0]
        if desired != current and rng.random() < 0.9:
            full = rescale(spec, full, current, desired, now)
            small = rescale(spec, small, current, desired, now)
            current = desired
        if rng.random() < 0.03:
            current = rng.randint(0, spec.max_replicas + 5)
        if rng.random() < 0.2:
            small = spec.compact(small, now)  # compacting again at any point is safe
    return compared


@pytest.mark.parametrize("chunk", range(4))
def test_compacted_history_makes_the_same_decisions_as_the_full_one(chunk: int) -> None:
    compared = 0
    for seed in range(chunk * 1000, (chunk + 1) * 1000):
        rng = random.Random(seed)
        spec = random_spec(rng)
        tl = Timeline(rng)
        if seed % 3 == 0:
            full, current = History(), rng.randint(0, spec.max_replicas)
            full = random_history(rng, spec, tl.t)
        else:
            full, current = run_past(rng, spec, tl, rng.randint(1, 60))
        compared += check_future(rng, spec, tl, full, current, rng.randint(1, 60))
    assert compared > 20_000


def test_compaction_in_a_steady_run_keeps_few_entries() -> None:
    """Default behavior (scale-down window 300 s, 15 s syncs), noisy load: upstream's
    list holds a window's worth of entries, the compacted one a handful."""
    rng = random.Random(7)
    spec = Spec(
        True,
        ScalingRules(0, SELECT_MAX, (ScalingPolicy(PERCENT_POLICY, 100, 15),)),
        ScalingRules(None, SELECT_MAX, (ScalingPolicy(PERCENT_POLICY, 100, 15),)),
        timedelta(seconds=300),
        1,
        50,
    )
    h, current, proposal = History(), 10, 10
    full_sizes, small_sizes = [], []
    for i in range(400):
        now = at(15 * i) + timedelta(microseconds=rng.randrange(10**5))
        proposal = max(1, min(50, proposal + rng.randint(-2, 2)))
        decision, h = sync(spec, h, current, proposal, now)
        if decision[0] != current:
            h = rescale(spec, h, current, decision[0], now)
            current = decision[0]
        small = spec.compact(h, now)
        if i >= 40:
            full_sizes.append(len(h.recommendations))
            small_sizes.append(len(small.recommendations))
    assert min(full_sizes) >= 20
    assert sum(small_sizes) / len(small_sizes) < 8
    print(
        f"steady run: full {sum(full_sizes) / len(full_sizes):.1f} recommendations, "
        f"compacted {sum(small_sizes) / len(small_sizes):.1f} (max {max(small_sizes)})"
    )


# ------------------------------------------------------------------------ encoding


def sample_records() -> dict[str, HistoryRecord]:
    micro = at(0) + timedelta(microseconds=123457)
    return {
        "default/web": HistoryRecord(
            "0b5f2a8e-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
            History(
                (Recommendation(3, micro), Recommendation(0, micro)),
                (ScaleEvent(2, micro + timedelta(microseconds=1)),),
                (ScaleEvent(1, at(-500), True), ScaleEvent(4, at(-10))),
                (
                    FailingMetric("1/external:queue", micro - timedelta(minutes=4), True),
                    FailingMetric("0/cpu", at(-20)),
                ),
            ),
        ),
        "prod/api": HistoryRecord("uid-2", History()),
    }


def test_round_trip_is_exact() -> None:
    records = sample_records()
    blob = encode_histories(records, writer="pod-a_1", epoch=7, written_at=at(1.5))
    out = decode_histories(blob)
    assert out.records == records
    assert out.problems == ()
    assert (out.writer, out.epoch, out.written_at) == ("pod-a_1", 7, at(1.5))
    ts = out.records["default/web"].history.recommendations[0].timestamp
    assert ts.microsecond == 123457 and ts.tzinfo is not None


def test_failure_streaks_round_trip_and_old_records_have_none() -> None:
    doc = good_doc()
    assert doc["h"]["default/web"]["f"] == [
        ["1/external:queue", doc["h"]["default/web"]["r"][0][1] - 240_000_000, 1],
        ["0/cpu", (at(-20) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)],
    ]
    # A record written before the key existed: the rest decodes, no streak.
    del doc["h"]["default/web"]["f"]
    out = decode_histories(gz(doc))
    assert out.problems == ()
    web = sample_records()["default/web"]
    assert out.records["default/web"] == HistoryRecord(
        web.uid, replace(web.history, failing_metrics=())
    )
    # Any metric or resource name a label can hold survives the round trip.
    odd = (
        FailingMetric("0/nvidia.com/gpu", at(0), True),
        FailingMetric("12/pods:requests per second", at(1)),
        FailingMetric("3/external:débit", at(2)),
        FailingMetric("4/memory(app)", at(3)),
    )
    records = {"a/b": HistoryRecord("u", History(failing_metrics=odd))}
    blob = encode_histories(records, writer="w", epoch=1, written_at=at(0))
    assert decode_histories(blob).records == records


def test_encoding_is_deterministic_and_gzip() -> None:
    a = encode_histories(sample_records(), writer="w", epoch=1, written_at=at(0))
    b = encode_histories(
        dict(reversed(list(sample_records().items()))), writer="w", epoch=1, written_at=at(0)
    )
    assert a == b
    doc = json.loads(gzip.decompress(a))
    assert doc["v"] == 1 and list(doc["h"]) == ["default/web", "prod/api"]
    assert doc["h"]["prod/api"] == {"u": "uid-2"}  # empty lists left out


def gz(doc: Any) -> bytes:
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return gzip.compress(raw, mtime=0)


def good_doc() -> dict[str, Any]:
    blob = encode_histories(sample_records(), writer="w", epoch=3, written_at=at(0))
    doc: dict[str, Any] = json.loads(gzip.decompress(blob))
    return doc


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "truncated"),
        (b"\x00\x01garbage\xff", "not gzip"),
        (gzip.compress(b"x" * 100, mtime=0)[:-12], "truncated"),
        (gzip.compress(b"{}", mtime=0) + b"junk", "after the gzip data"),
        (zlib.compress(b'{"v":1}'), "not gzip"),
        (gz(b"{not json"), "not JSON"),
        (gz(b"\xff\xfe"), "not JSON"),
        (gz(b"[" * 100_000 + b"]" * 100_000), "not JSON"),
        (gz([1, 2]), "not a JSON object"),
        (gz({"v": 2, "h": {}}), "unsupported version 2"),
        (gz({"v": True, "h": {}}), "unsupported version"),
        (gz({"h": {}}), "unsupported version None"),
        (gz({"v": 1, "e": -1, "h": {}}), "bad epoch"),
        (gz({"v": 1, "e": "3", "h": {}}), "bad epoch"),
        (gz({"v": 1, "e": 1, "w": 5, "h": {}}), "writer"),
        (gz({"v": 1, "e": 1, "t": -5, "h": {}}), "written-at"),
        (gz({"v": 1, "e": 1, "h": []}), "h is not an object"),
    ],
)
def test_garbage_blob_gives_no_records_and_one_problem(data: bytes, problem: str) -> None:
    out = decode_histories(data)
    assert out.records == {}
    assert len(out.problems) == 1 and problem in out.problems[0], out.problems


def test_decompression_bomb_is_cut() -> None:
    bomb = gzip.compress(b"\x00" * (64 << 20), compresslevel=9, mtime=0)
    assert len(bomb) < 100_000
    out = decode_histories(bomb, max_decoded_bytes=1 << 20)
    assert out.records == {}
    assert "more than 1048576 bytes" in out.problems[0]


BAD_RECORDS: list[tuple[Any, str]] = [
    ("not an object", "not an object"),
    ({"r": []}, "bad uid"),
    ({"u": ""}, "bad uid"),
    ({"u": "a/b"}, "bad uid"),
    ({"u": 7}, "bad uid"),
    ({"u": "x" * 200}, "bad uid"),
    ({"u": "u", "r": {}}, "r: not a list"),
    ({"u": "u", "r": [[1]]}, "not [value, timestamp]"),
    ({"u": "u", "r": [[1, 2, 1]]}, "not [value, timestamp]"),
    ({"u": "u", "r": [[-1, 5]]}, "r value"),
    ({"u": "u", "r": [[1.5, 5]]}, "r value"),
    ({"u": "u", "r": [[True, 5]]}, "r value"),
    ({"u": "u", "r": [[2**31, 5]]}, "r value"),
    ({"u": "u", "r": [[1, -5]]}, "r timestamp"),
    ({"u": "u", "r": [[1, 10**20]]}, "r timestamp"),
    ({"u": "u", "r": [[1, "5"]]}, "r timestamp"),
    ({"u": "u", "su": [[-2, 5]]}, "su value"),
    ({"u": "u", "sd": [[2, 5, 2]]}, "sd outdated flag"),
    ({"u": "u", "sd": [[2, 5, 1, 0]]}, "not [value, timestamp]"),
    ({"u": "u", "r": [[1, 5]] * 257}, "257 entries, more than 256"),
    ({"u": "u", "su": [[1, 5]] * 300}, "300 entries"),
    ({"u": "u", "f": {}}, "f: not a list"),
    ({"u": "u", "f": [["0/cpu"]]}, "not [metric, since]"),
    ({"u": "u", "f": [["0/cpu", 5, 1, 0]]}, "not [metric, since]"),
    ({"u": "u", "f": ["0/cpu"]}, "not [metric, since]"),
    ({"u": "u", "f": [[0, 5]]}, "is not <index>/<label>"),
    ({"u": "u", "f": [["cpu", 5]]}, "is not <index>/<label>"),
    ({"u": "u", "f": [["0/", 5]]}, "is not <index>/<label>"),
    ({"u": "u", "f": [["01/cpu", 5]]}, "is not <index>/<label>"),
    ({"u": "u", "f": [["-1/cpu", 5]]}, "is not <index>/<label>"),
    ({"u": "u", "f": [["0/cpu\n", 5]]}, "is not <index>/<label>"),
    ({"u": "u", "f": [["0/" + "x" * 1025, 5]]}, "is not <index>/<label>"),
    ({"u": "u", "f": [["0/cpu", 5], ["0/cpu", 6]]}, "given twice"),
    ({"u": "u", "f": [["0/cpu", -5]]}, "f since"),
    ({"u": "u", "f": [["0/cpu", 10**20]]}, "f since"),
    ({"u": "u", "f": [["0/cpu", "5"]]}, "f since"),
    ({"u": "u", "f": [["0/cpu", 5, 2]]}, "f active flag"),
    ({"u": "u", "f": [["0/cpu", 5, True]]}, "f active flag"),
    ({"u": "u", "f": [[f"{i}/m", 5] for i in range(257)]}, "257 entries"),
]


@pytest.mark.parametrize(("item", "problem"), BAD_RECORDS)
def test_one_malformed_record_is_dropped_with_a_problem_naming_it(item: Any, problem: str) -> None:
    doc = good_doc()
    doc["h"]["ns/broken"] = item
    out = decode_histories(gz(doc))
    assert out.records == sample_records()
    assert len(out.problems) == 1
    assert out.problems[0].startswith("history of ns/broken: dropped:")
    assert problem in out.problems[0], out.problems


@pytest.mark.parametrize("key", ["nokey", "/name", "ns/", "a/b/c", "n" * 400 + "/x"])
def test_bad_key_is_dropped(key: str) -> None:
    doc = good_doc()
    doc["h"][key] = {"u": "u"}
    out = decode_histories(gz(doc))
    assert out.records == sample_records()
    assert len(out.problems) == 1 and "not a namespace/name key" in out.problems[0]


def test_max_entries_is_a_parameter() -> None:
    records = {"a/b": HistoryRecord("u", History(recs(*((i, i) for i in range(10)))))}
    blob = encode_histories(records, writer="w", epoch=1, written_at=at(0))
    assert decode_histories(blob, max_entries=10).records == records
    assert decode_histories(blob, max_entries=9).records == {}


def ten_thousand_hpas() -> dict[str, HistoryRecord]:
    """10,000 HPAs synced every 15 s at random phases: 3 recommendations, one event
    each way, real uuid4 uids."""
    rng = random.Random(1)
    now = datetime(2026, 11, 24, 17, 0, 0, tzinfo=UTC)
    out = {}
    for i in range(10_000):
        phase = timedelta(microseconds=rng.randrange(15_000_000))
        history = History(
            tuple(
                Recommendation(rng.randint(1, 50), now - phase - timedelta(seconds=15 * k))
                for k in (2, 1, 0)
            ),
            (ScaleEvent(rng.randint(1, 5), now - phase - timedelta(seconds=rng.randint(0, 60))),),
            (ScaleEvent(rng.randint(1, 5), now - phase - timedelta(seconds=rng.randint(0, 300))),),
        )
        out[f"ns-{i % 300:03d}/hpa-{i:05d}"] = HistoryRecord(str(uuid.uuid4()), history)
    return out


def test_ten_thousand_hpas_fit_in_one_object() -> None:
    records = ten_thousand_hpas()
    blob = encode_histories(records, writer="hpactl-0_x", epoch=1, written_at=T0)
    print(f"10,000 HPAs: {len(blob)} bytes encoded, {len(blob) / 10_000:.1f} bytes per HPA")
    assert len(blob) < 900 * 1024
    assert decode_histories(blob).records == records
