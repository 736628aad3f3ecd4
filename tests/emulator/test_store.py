"""The store on its own: resourceVersions, metadata, generation, history window."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hpactl.emulator import errors
from hpactl.emulator.convert import default_object, to_storage
from hpactl.emulator.registry import builtin_registry
from hpactl.emulator.store import (
    Store,
    WatchEvent,
    decode_continue,
    encode_continue,
    tree_copy,
)

from .helpers import deployment


def make_store(history: int = 100) -> Store:
    return Store(
        builtin_registry(),
        history_size=history,
        now=lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        to_storage=to_storage,
        defaulter=default_object,
    )


def test_create_sets_server_metadata_and_one_rv_sequence() -> None:
    s = make_store()
    d = s.create(deployment("web") | {"metadata": {"name": "web", "namespace": "ns1"}})
    ns = s.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    assert d["metadata"]["resourceVersion"] == "1"
    assert ns["metadata"]["resourceVersion"] == "2"
    assert s.current_resource_version() == "2"
    assert d["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"
    assert d["metadata"]["generation"] == 1
    assert len(d["metadata"]["uid"]) == 36
    assert "generation" not in ns["metadata"]
    assert ns["status"] == {"phase": "Active"}


def test_already_exists_is_409_with_apiserver_text() -> None:
    s = make_store()
    s.create(deployment("web"))
    with pytest.raises(errors.ApiError) as ei:
        s.create(deployment("web"))
    assert ei.value.code == 409
    assert ei.value.reason == "AlreadyExists"
    assert ei.value.message == 'deployments.apps "web" already exists'


def test_generation_bumps_on_spec_change_only_and_noop_keeps_rv() -> None:
    s = make_store()
    s.create(deployment("web"))
    rt = s.registry.storage_type("apps", "deployments")
    assert rt is not None
    same = s.apply(deployment("web"))
    assert same["metadata"]["resourceVersion"] == "1"  # no-op write: no new RV
    labelled = deployment("web")
    labelled["metadata"]["labels"]["tier"] = "x"
    out = s.apply(labelled)
    assert out["metadata"]["generation"] == 1
    assert out["metadata"]["resourceVersion"] == "2"
    bigger = deployment("web", replicas=3)
    bigger["metadata"]["labels"]["tier"] = "x"
    out = s.apply(bigger)
    assert out["metadata"]["generation"] == 2
    status_only = s.update_status(deployment("web") | {"status": {"replicas": 3}})
    assert status_only["metadata"]["generation"] == 2
    assert status_only["spec"]["replicas"] == 3
    assert status_only["status"] == {"replicas": 3}


def test_history_window_and_snapshots() -> None:
    s = make_store(history=3)
    key = ("apps", "deployments")
    for i in range(3):
        s.create(deployment(f"d{i}"))
    assert not s.too_old(key, 0)
    s.delete("apps", "deployments", "default", "d0")  # rv 4 evicts rv 1
    assert s.too_old(key, 0)
    assert not s.too_old(key, 1)
    assert [e.obj["metadata"]["name"] for e in s.snapshot(key, None, 3)] == ["d0", "d1", "d2"]
    assert [e.obj["metadata"]["name"] for e in s.snapshot(key, None, 4)] == ["d1", "d2"]
    assert s.get("apps", "deployments", "default", "d0") is None


def test_continue_token_round_trip_and_garbage() -> None:
    token = encode_continue(42, "ns", "name")
    assert decode_continue(token) == (42, ("ns", "name"))
    with pytest.raises(errors.ApiError) as ei:
        decode_continue("not-a-token")
    assert ei.value.code == 400


def test_hpa_v1_objects_are_stored_as_v2() -> None:
    s = make_store()
    stored = s.create(
        {
            "apiVersion": "autoscaling/v1",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 4,
                "targetCPUUtilizationPercentage": 55,
            },
        }
    )
    assert stored["apiVersion"] == "autoscaling/v2"
    assert stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 55
    got = s.get("autoscaling", "horizontalpodautoscalers", "default", "h")
    assert got is not None and got["spec"]["maxReplicas"] == 4


def test_apply_validates_create_does_not() -> None:
    from hpactl.emulator.validation import validate_stored

    s = make_store()
    s.set_validator(validate_stored)
    bad = deployment("web")
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    with pytest.raises(errors.ApiError) as ei:
        s.apply(bad)
    assert ei.value.code == 422
    assert s.get("apps", "deployments", "default", "web") is None
    s.create(bad)  # the privileged path: tests plant what the API would refuse
    assert s.get("apps", "deployments", "default", "web") is not None
    with pytest.raises(errors.ApiError):
        s.apply(bad)
    s.apply(bad, validate=False)


def test_force_metadata_writes_server_owned_fields_as_given() -> None:
    s = make_store()
    d = s.create(deployment("web"))
    events: list[WatchEvent] = []
    s.on_write.append(events.append)
    forced = s.force_metadata(d, {"creationTimestamp": "2025-12-31T00:00:00Z"})
    assert forced["metadata"]["creationTimestamp"] == "2025-12-31T00:00:00Z"
    assert forced["metadata"]["uid"] == d["metadata"]["uid"]
    assert [e.type for e in events] == ["MODIFIED"]
    got = s.get("apps", "deployments", "default", "web")
    assert got == forced
    with pytest.raises(errors.ApiError) as ei:
        s.force_metadata(deployment("gone"), {"creationTimestamp": "2025-12-31T00:00:00Z"})
    assert ei.value.code == 404


def test_ensure_namespace_creates_only_missing_namespaces_of_namespaced_objects() -> None:
    s = make_store()
    s.ensure_namespace(deployment("web") | {"metadata": {"name": "web", "namespace": "team"}})
    assert s.get("", "namespaces", "", "team") is not None
    rv = s.rv
    s.ensure_namespace(deployment("web") | {"metadata": {"name": "web", "namespace": "team"}})
    s.ensure_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})
    assert s.rv == rv
    with pytest.raises(errors.ApiError) as ei:
        s.ensure_namespace({"apiVersion": "v9", "kind": "Nope", "metadata": {"namespace": "a"}})
    assert ei.value.message == 'no matches for kind "Nope" in version "v9"'


def test_ensure_namespace_of_an_object_without_one_is_default() -> None:
    s = make_store()
    assert s.get("", "namespaces", "", "default") is None  # a bare store has none
    s.ensure_namespace(deployment("web"))
    assert s.get("", "namespaces", "", "default") is not None


def test_a_write_keeps_no_reference_to_the_callers_object() -> None:
    """create/update copy what they are given (``tree_copy``): the caller mutating
    its dict afterwards changes nothing stored, nested lists and maps included."""
    s = make_store()
    body = deployment("web") | {"metadata": {"name": "web", "namespace": "ns1"}}
    body["spec"]["template"]["spec"] = {"containers": [{"name": "c", "args": ["a"]}]}
    s.create(body)
    body["spec"]["template"]["spec"]["containers"][0]["args"].append("b")
    body["spec"]["replicas"] = 9
    got = s.get("apps", "deployments", "ns1", "web")
    assert got is not None
    assert got["spec"]["template"]["spec"]["containers"][0]["args"] == ["a"]
    assert got["spec"]["replicas"] != 9
    cond = {"type": "Available", "status": "True"}
    status: dict[str, Any] = {"replicas": 2, "conditions": [cond]}
    s.update_status(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ns1"},
            "status": status,
        }
    )
    cond["status"] = "False"
    got = s.get("apps", "deployments", "ns1", "web")
    assert got is not None and got["status"]["conditions"][0]["status"] == "True"


def test_tree_copy_is_deep_and_copies_other_leaves_as_deepcopy() -> None:
    src: dict[str, Any] = {"a": [1, {"b": "x"}], "c": None, "d": 1.5, "e": True, "t": ("u", ["v"])}
    out = tree_copy(src)
    assert out == src
    out["a"][1]["b"] = "y"
    out["t"][1].append("w")
    assert src["a"][1]["b"] == "x" and src["t"][1] == ["v"]
