"""Shard hashing and shard assignment: stable, uniform, balanced, and moving few shards."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from hpactl.core.sharding import assign_shards, shard_of

# -- shard_of ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "shards", "expected"),
    [
        # sha256("default/web")[:8] = 0x82b3ade9d00cd164 (checked with sha256sum)
        ("default/web", 7, 0x82B3ADE9D00CD164 % 7),
        ("default/web", 16, 4),
        ("kube-system/coredns", 7, 5),
        ("kube-system/coredns", 16, 11),
        ("prod/api-gateway", 16, 15),
        ("ns/ü-name", 16, 5),  # UTF-8, not the platform encoding
        ("default/web", 1, 0),
    ],
)
def test_shard_of_is_stable_across_processes_and_versions(
    key: str, shards: int, expected: int
) -> None:
    assert shard_of(key, shards) == expected


@pytest.mark.parametrize("shards", [2, 7, 16, 64])
def test_shard_of_is_uniform_over_10000_keys(shards: int) -> None:
    counts = Counter(shard_of(f"ns-{i % 37}/hpa-{i}", shards) for i in range(10_000))
    assert set(counts) == set(range(shards))
    expected = 10_000 / shards
    chi2 = sum((counts[s] - expected) ** 2 / expected for s in range(shards))
    # chi-square with shards-1 degrees of freedom; the 99.9th percentile is below
    # dof + 5*sqrt(2*dof) + 10 for these sizes: a skewed hash fails by far.
    dof = shards - 1
    assert chi2 < dof + 5 * (2 * dof) ** 0.5 + 10, (chi2, counts)
    assert max(counts.values()) < 1.25 * expected


def test_shard_of_refuses_no_shards() -> None:
    with pytest.raises(ValueError):
        shard_of("a/b", 0)


# -- assign_shards --------------------------------------------------------------------------


def _members(rnd: random.Random, m: int) -> list[str]:
    return [f"hpactl-{rnd.randrange(16**8):08x}_{rnd.randrange(10**6)}" for _ in range(m)]


def test_no_members_or_no_shards_assign_nothing() -> None:
    assert assign_shards(8, []) == {}
    assert assign_shards(0, ["a", "b"]) == {}


def test_one_member_gets_every_shard() -> None:
    assert assign_shards(5, ["only"]) == {i: "only" for i in range(5)}


def test_fixed_assignment() -> None:
    # Pinned: a change here changes which replica owns what across an upgrade.
    assert assign_shards(8, ["b", "a", "c"]) == {
        0: "b",
        1: "b",
        2: "a",
        3: "a",
        4: "c",
        5: "b",
        6: "a",
        7: "c",
    }


def test_balanced_floor_or_ceil_for_every_member() -> None:
    rnd = random.Random(7)
    for _ in range(300):
        n = rnd.randint(1, 100)
        ms = _members(rnd, rnd.randint(1, 12))
        a = assign_shards(n, ms)
        assert sorted(a) == list(range(n))
        counts = Counter(a.values())
        lo, hi = n // len(ms), -(-n // len(ms))
        for m in ms:
            assert lo <= counts.get(m, 0) <= hi, (n, len(ms), counts)


def test_depends_only_on_the_set_of_members() -> None:
    rnd = random.Random(11)
    for _ in range(100):
        n = rnd.randint(1, 50)
        ms = _members(rnd, rnd.randint(1, 8))
        shuffled = ms[:]
        rnd.shuffle(shuffled)
        assert assign_shards(n, ms) == assign_shards(n, shuffled + ms[:2])


def _moved_on_join_and_leave(cases: int) -> tuple[float, float, float, float]:
    """Average moved fraction on a join and a leave, and the ideal 1/m for each."""
    rnd = random.Random(3)
    join = leave = ideal_join = ideal_leave = 0.0
    for _ in range(cases):
        n = rnd.randint(8, 128)
        ms = _members(rnd, rnd.randint(1, 10))
        newcomer = _members(rnd, 1)[0]
        before = assign_shards(n, ms)
        after = assign_shards(n, [*ms, newcomer])
        moved = sum(before[s] != after[s] for s in range(n))
        # the newcomer takes its share, and only from the others: every moved shard
        # beyond its share is churn among the old members
        assert moved >= sum(1 for o in after.values() if o == newcomer)
        join += moved / n
        ideal_join += 1 / (len(ms) + 1)
        if len(ms) > 1:
            leaver = rnd.choice(ms)
            rest = [m for m in ms if m != leaver]
            after_leave = assign_shards(n, rest)
            moved = sum(before[s] != after_leave[s] for s in range(n))
            leave += moved / n
            ideal_leave += 1 / len(ms)
    return join / cases, ideal_join / cases, leave / cases, ideal_leave / cases


def test_few_shards_move_when_a_member_joins_or_leaves() -> None:
    join, ideal_join, leave, ideal_leave = _moved_on_join_and_leave(500)
    print(
        f"moved: join {join:.3f} (ideal {ideal_join:.3f}), leave {leave:.3f} (ideal {ideal_leave:.3f})"
    )
    # Ideal is 1/m (only the newcomer's share, or only the leaver's): allow 1.5x.
    assert join < 1.5 * ideal_join
    assert leave < 1.5 * ideal_leave
    # A naive modulo assignment (shard i -> sorted(members)[i % m]) moves most shards.
    assert join < 0.5


def test_shards_of_a_leaver_go_only_to_survivors_and_keepers_mostly_stay() -> None:
    rnd = random.Random(5)
    kept = total = 0
    for _ in range(200):
        n = rnd.randint(8, 64)
        ms = _members(rnd, rnd.randint(2, 8))
        leaver = rnd.choice(ms)
        before = assign_shards(n, ms)
        after = assign_shards(n, [m for m in ms if m != leaver])
        assert leaver not in after.values()
        for s, owner in before.items():
            if owner != leaver:
                total += 1
                kept += after[s] == owner
    assert kept / total > 0.85, kept / total
