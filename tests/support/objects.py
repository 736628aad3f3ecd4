"""Raw API objects several test packages build alike."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def scale_crd(
    plural: str,
    kind: str,
    *,
    group: str = "example.com",
    short_names: tuple[str, ...] = (),
    replicas_path: str = ".spec.replicas",
    status_replicas_path: str = ".status.replicas",
    status_subresource: bool = True,
    preserve_unknown_fields: bool = True,
) -> Obj:
    """A namespaced v1 CustomResourceDefinition whose kind has a scale subresource
    (label selector at ``.status.selector``)."""
    names: Obj = {"plural": plural, "singular": kind.lower(), "kind": kind}
    if short_names:
        names["shortNames"] = list(short_names)
    schema: Obj = {"type": "object"}
    if preserve_unknown_fields:
        schema["x-kubernetes-preserve-unknown-fields"] = True
    subresources: Obj = {"status": {}} if status_subresource else {}
    subresources["scale"] = {
        "specReplicasPath": replicas_path,
        "statusReplicasPath": status_replicas_path,
        "labelSelectorPath": ".status.selector",
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": names,
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": subresources,
                }
            ],
        },
    }


def cpu_hpa(
    name: str = "web",
    *,
    namespace: str = "default",
    target: str | None = None,
    kind: str = "Deployment",
    api_version: str = "apps/v1",
    min_replicas: int | None = 1,
    max_replicas: int = 10,
    utilization: int = 50,
) -> Obj:
    """An autoscaling/v2 HPA on one CPU utilization target (the target named ``name``
    unless ``target`` is given)."""
    spec: Obj = {
        "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target or name},
    }
    if min_replicas is not None:
        spec["minReplicas"] = min_replicas
    spec["maxReplicas"] = max_replicas
    spec["metrics"] = [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": utilization},
            },
        }
    ]
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
