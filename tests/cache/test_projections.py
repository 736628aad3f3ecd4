"""WorkloadScale: what the /scale subresource of each built-in kind reports."""

from __future__ import annotations

from typing import Any

import pytest

from hpactl.cache.projections import WORKLOAD_KINDS, WorkloadScale, workload_scale_from_raw


def deployment(
    selector: Any, replicas: Any = 3, status: dict[str, Any] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": selector}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "metadata": {
            "namespace": "prod",
            "name": "web",
            "generation": 4,
            "resourceVersion": "812",
            "uid": "u-1",
        },
        "spec": spec,
        "status": status if status is not None else {"replicas": 2},
    }


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet"])
def test_apps_kinds_use_the_label_selector_string(kind: str) -> None:
    raw = deployment({"matchLabels": {"tier": "fe", "app": "web"}})
    assert workload_scale_from_raw(kind, raw) == WorkloadScale(
        namespace="prod",
        name="web",
        kind=kind,
        spec_replicas=3,
        status_replicas=2,
        selector="app=web,tier=fe",  # requirements sorted by key, as labels.Selector.String()
        generation=4,
        resource_version="812",
        uid="u-1",
    )


def test_replication_controller_uses_selector_from_set() -> None:
    raw = deployment({"zone": "b", "app": "db"})
    scale = workload_scale_from_raw("ReplicationController", raw)
    assert scale.selector == "app=db,zone=b"
    assert scale.kind == "ReplicationController"


@pytest.mark.parametrize(
    ("kind", "selector"),
    [
        ("Deployment", None),  # LabelSelectorAsSelector(nil) = Nothing(); String() is ""
        ("Deployment", {}),  # Everything(); String() is ""
        ("Deployment", {"matchLabels": {}}),
        ("ReplicationController", None),
        ("ReplicationController", {}),
    ],
)
def test_empty_selectors_print_empty(kind: str, selector: Any) -> None:
    assert workload_scale_from_raw(kind, deployment(selector)).selector == ""


def test_defaults_when_fields_are_absent() -> None:
    raw = deployment({"matchLabels": {"a": "b"}}, replicas=None, status={})
    scale = workload_scale_from_raw("Deployment", raw)
    assert scale.spec_replicas == 1  # API defaulting of spec.replicas
    assert scale.status_replicas == 0


def test_zero_replicas_is_kept() -> None:
    scale = workload_scale_from_raw(
        "Deployment", deployment({"matchLabels": {"a": "b"}}, replicas=0)
    )
    assert scale.spec_replicas == 0


def test_match_expressions_print_like_go() -> None:
    pytest.importorskip("hpactl.model.selectors")
    raw = deployment(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["fe", "be"]},
                {"key": "canary", "operator": "DoesNotExist"},
            ],
        }
    )
    assert workload_scale_from_raw("Deployment", raw).selector == "app=web,!canary,tier in (be,fe)"


def test_bad_shapes_raise() -> None:
    with pytest.raises(ValueError):
        workload_scale_from_raw("Deployment", deployment(["app"]))
    with pytest.raises(ValueError):
        workload_scale_from_raw("ReplicationController", deployment("app=web"))
    with pytest.raises(ValueError, match="unsupported workload kind"):
        workload_scale_from_raw("CronJob", deployment({}))


def test_kinds_table() -> None:
    assert WORKLOAD_KINDS["Deployment"].api_version == "apps/v1"
    assert WORKLOAD_KINDS["ReplicationController"].api_version == "v1"
    assert WORKLOAD_KINDS["StatefulSet"].resource == "statefulsets"
