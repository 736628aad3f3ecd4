"""Which shard an HPA belongs to, and which replica owns which shard (pure).

``shard_of`` hashes its key (the controller passes the HPA's namespace, see
``HorizontalController.shard_of``) with SHA-256 (first 8 bytes, big-endian) rather
than Python's ``hash()``, which is salted per process: every replica, of any Python
version, must put an HPA in the same shard.

``assign_shards`` is rendezvous (highest-random-weight) hashing with capacities: shards
are taken in index order, each by the member with the highest weight
``H(member, shard)`` that still has room. Room is ``floor(N/m)`` for everyone plus one
extra for the first ``N mod m`` members to fill up, so every member ends with floor or
ceil of ``N/m``. Since weights do not depend on who else is a member, a join or a leave
moves mostly the shards the newcomer wins or the leaver held (about 1.2x the ideal
``1/m`` of the shards, see tests/core/test_sharding.py), and the result depends only on
the *set* of members, so replicas that see the same members agree without talking.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = ["assign_shards", "shard_of"]


def _h64(data: str) -> int:
    return int.from_bytes(hashlib.sha256(data.encode("utf-8")).digest()[:8], "big")


def shard_of(key: str, shards: int) -> int:
    """The shard (0..shards-1) of ``key`` (the controller passes an HPA's namespace)."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    return _h64(key) % shards


def _weight(member: str, shard: int) -> int:
    return _h64(f"{member}\x00{shard}")


def assign_shards(shards: int, members: Sequence[str]) -> dict[int, str]:
    """Owner of every shard 0..shards-1 among ``members`` (order and duplicates ignored)."""
    if shards < 0:
        raise ValueError(f"shards must not be negative, got {shards}")
    ms = sorted(set(members))
    if not ms or shards == 0:
        return {}
    floor, extra = divmod(shards, len(ms))
    count = dict.fromkeys(ms, 0)
    at_ceil = 0  # members already holding floor+1
    out: dict[int, str] = {}
    for shard in range(shards):
        for m in sorted(ms, key=lambda m: (-_weight(m, shard), m)):
            c = count[m]
            if c < floor or (c == floor and at_ceil < extra):
                out[shard] = m
                count[m] = c + 1
                if c == floor:
                    at_ceil += 1
                break
    return out
