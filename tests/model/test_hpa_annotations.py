"""HPA.annotations keeps only what hpactl's opt-in extensions read."""

from __future__ import annotations

from typing import Any

from hpactl.model.hpa import hpa_from_raw


def _raw(annotations: dict[str, Any] | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web", "namespace": "default", "uid": "u1"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "metadata": meta,
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
        },
    }


def test_only_extension_annotations_are_projected() -> None:
    hpa = hpa_from_raw(
        _raw(
            {
                "hpactl.dev/sync-period": "30s",
                "kubectl.kubernetes.io/last-applied-configuration": "{...}",
                "team": "payments",
            }
        )
    )
    assert dict(hpa.annotations) == {"hpactl.dev/sync-period": "30s"}


def test_no_or_malformed_annotations_project_to_empty() -> None:
    assert dict(hpa_from_raw(_raw(None)).annotations) == {}
    assert dict(hpa_from_raw(_raw({})).annotations) == {}
    assert (
        dict(
            hpa_from_raw({**_raw(None), "metadata": {"name": "w", "annotations": "x"}}).annotations
        )
        == {}
    )
