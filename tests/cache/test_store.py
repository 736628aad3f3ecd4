"""Store: keys, projections, projection errors, indexes."""

from __future__ import annotations

import random
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from hpactl.cache.store import (
    NAMESPACE_INDEX,
    ProjectionError,
    Store,
    object_key,
    split_key,
)


@dataclass(frozen=True, slots=True)
class Thing:
    namespace: str
    name: str
    color: str
    tags: tuple[str, ...]


def project(raw: Mapping[str, Any]) -> Thing:
    meta = raw["metadata"]
    spec = raw["spec"]
    if not isinstance(spec["color"], str):
        raise TypeError(f"spec.color must be a string, not {type(spec['color']).__name__}")
    return Thing(
        meta.get("namespace", ""), meta["name"], spec["color"], tuple(spec.get("tags", ()))
    )


def raw(
    ns: str, name: str, color: Any = "red", rv: str = "1", tags: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name, "resourceVersion": rv},
        "spec": {"color": color, "tags": list(tags)},
    }


def make_store(keep_raw: bool = False) -> Store[Thing]:
    return Store(
        project,
        {"color": lambda t: (t.color,), "tag": lambda t: t.tags},
        keep_raw=keep_raw,
    )


def test_keys() -> None:
    assert object_key("ns", "a") == "ns/a"
    assert object_key("", "node1") == "node1"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("node1") == ("", "node1")


def test_upsert_get_delete_and_resource_version() -> None:
    s = make_store()
    key, old, new = s.upsert(raw("ns1", "a", rv="5"))
    assert (key, old) == ("ns1/a", None)
    assert new == Thing("ns1", "a", "red", ())
    assert s.get("ns1/a") == new
    assert s.resource_version("ns1/a") == "5"
    assert s.get_raw("ns1/a") is None  # keep_raw off
    key, old, new2 = s.upsert(raw("ns1", "a", color="blue", rv="7"))
    assert old == new and new2.color == "blue"  # type: ignore[union-attr]
    assert s.resource_version("ns1/a") == "7"
    assert s.delete("ns1/a") == new2
    assert s.get("ns1/a") is None and s.resource_version("ns1/a") is None
    assert s.delete("ns1/a") is None
    assert len(s) == 0


def test_keep_raw() -> None:
    s = make_store(keep_raw=True)
    obj = raw("ns", "a", rv="3")
    s.upsert(obj)
    assert s.get_raw("ns/a") == obj
    s.delete("ns/a")
    assert s.get_raw("ns/a") is None


def test_namespace_and_custom_indexes_follow_updates() -> None:
    s = make_store()
    s.upsert(raw("ns1", "a", color="red", tags=("x", "y")))
    s.upsert(raw("ns1", "b", color="blue", tags=("y",)))
    s.upsert(raw("ns2", "c", color="red"))
    assert [t.name for t in s.by_index(NAMESPACE_INDEX, "ns1")] == ["a", "b"]
    assert [t.name for t in s.by_index("color", "red")] == ["a", "c"]
    assert [t.name for t in s.by_index("tag", "y")] == ["a", "b"]
    # a changes colour and loses tag y
    s.upsert(raw("ns1", "a", color="blue", tags=("x",), rv="2"))
    assert [t.name for t in s.by_index("color", "red")] == ["c"]
    assert [t.name for t in s.by_index("color", "blue")] == ["a", "b"]
    assert s.index_keys("tag", "y") == ["ns1/b"]
    s.delete("ns1/b")
    assert s.by_index("tag", "y") == []
    assert s.index_values("tag") == ["x"]
    assert s.index_values(NAMESPACE_INDEX) == ["ns1", "ns2"]
    with pytest.raises(KeyError):
        s.by_index("nope", "x")


def test_namespace_index_name_is_reserved() -> None:
    with pytest.raises(ValueError):
        Store(project, {NAMESPACE_INDEX: lambda t: ()})


def test_projection_error_is_stored_not_raised_and_leaves_indexes() -> None:
    s = make_store()
    s.upsert(raw("ns1", "a", color="red"))
    _key, old, new = s.upsert(raw("ns1", "a", color=42, rv="9"))
    assert isinstance(old, Thing)
    assert isinstance(new, ProjectionError)
    assert new.key == "ns1/a" and new.resource_version == "9"
    assert new.error_type == "TypeError"
    assert new.message == "spec.color must be a string, not int"
    # readers that want objects do not see it; readers that want to report it do
    assert s.get("ns1/a") is None
    assert s.get_error("ns1/a") == new
    assert s.get_entry("ns1/a") == new
    assert s.list() == [] and s.errors() == [new]
    assert "ns1/a" in s
    assert s.by_index("color", "red") == [] and s.by_index(NAMESPACE_INDEX, "ns1") == []
    # fixed again
    s.upsert(raw("ns1", "a", color="green", rv="10"))
    assert s.get_error("ns1/a") is None
    assert [t.name for t in s.by_index("color", "green")] == ["a"]


def test_unkeyable_object_raises_value_error() -> None:
    s = make_store()
    with pytest.raises(ValueError, match=r"metadata\.name"):
        s.upsert({"metadata": {"namespace": "x"}, "spec": {"color": "red"}})


def test_failing_index_function_does_not_break_the_store() -> None:
    def bad(t: Thing) -> tuple[str, ...]:
        raise RuntimeError("boom")

    s: Store[Thing] = Store(project, {"bad": bad})
    s.upsert(raw("ns", "a"))
    assert s.get("ns/a") is not None
    assert s.by_index("bad", "x") == []
    assert [t.name for t in s.by_index(NAMESPACE_INDEX, "ns")] == ["a"]


def test_items_is_a_snapshot() -> None:
    s = make_store()
    for i in range(3):
        s.upsert(raw("ns", f"o{i}"))
    for key, _ in s.items():
        s.delete(key)  # must not raise "dict changed size"
    assert len(s) == 0


def test_indexes_match_the_stored_objects_after_any_sequence_of_changes() -> None:
    """The store keeps no per-key record of what a key is filed under (it recomputes
    the old entry's index values); after random upserts, errors, re-puts and deletes,
    every index must equal what the stored objects say, with no empty values left."""
    rng = random.Random(17)
    s = make_store()
    for step in range(2000):
        ns, name = rng.choice(("ns1", "ns2", "ns3")), f"o{rng.randrange(12)}"
        roll = rng.random()
        if roll < 0.15:
            s.delete(object_key(ns, name))
        elif roll < 0.25:
            s.upsert(raw(ns, name, color=42, rv=str(step)))  # a projection error
        elif roll < 0.3 and (entry := s.get_entry(object_key(ns, name))) is not None:
            s.put(object_key(ns, name), str(step), entry)  # the same entry again
        else:
            tags = tuple(rng.sample(("x", "y", "z", "x"), rng.randrange(4)))  # repeats too
            s.upsert(raw(ns, name, color=rng.choice(("red", "blue")), rv=str(step), tags=tags))
    things = s.list()
    expected: dict[str, dict[str, set[str]]] = {NAMESPACE_INDEX: {}, "color": {}, "tag": {}}
    for t in things:
        key = object_key(t.namespace, t.name)
        expected[NAMESPACE_INDEX].setdefault(t.namespace, set()).add(key)
        expected["color"].setdefault(t.color, set()).add(key)
        for tag in t.tags:
            expected["tag"].setdefault(tag, set()).add(key)
    assert things and s.errors()  # the sequence exercised both
    for index, by_value in expected.items():
        assert s.index_values(index) == sorted(by_value)
        for value, keys in by_value.items():
            assert s.index_keys(index, value) == sorted(keys)
    for key, _ in s.items():
        s.delete(key)
    assert all(s.index_values(index) == [] for index in expected)


def test_index_values_are_interned() -> None:
    """Objects filed under one value share one string (30,000 pods, a few labels)."""
    s = make_store()
    a = "".join(["gr", "een"])  # two equal strings, not the same object
    b = "".join(["gre", "en"])
    assert a == b and a is not b
    s.upsert(raw("ns", "a", color=a))
    s.upsert(raw("ns", "b", color=b))
    assert s.index_keys("color", "green") == ["ns/a", "ns/b"]
    (stored,) = (v for v in s.index_values("color"))
    assert stored is sys.intern("green")
