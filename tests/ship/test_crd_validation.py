"""hpactl's HorizontalPodAutoscaler CRD refuses what upstream's HPA validation refuses.

The CRD is installed in the emulator (which validates custom resources against
their structural schema and CEL rules as kube-apiserver's apiextensions does); each
spec of the table is created twice, as an autoscaling/v2 HPA (the emulator runs
upstream's validation.go) and as hpactl's resource, and the two answers are
compared cause by cause: same field, same reason, same message text (the value an
Invalid cause shows is the schema type for a CEL rule: apiextensions' shape). The
known differences (docs/managed-clusters.md) are spelled out case by case.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from emulator.helpers import Http

from hpactl.emulator import Emulator
from hpactl.model import crd

from .support import kubectl

Obj = dict[str, Any]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
CRS = "/apis/autoscaling.hpactl.dev/v1alpha1/namespaces/default/horizontalpodautoscalers"
V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
NOT_CHECKED = (
    "<nil>",
    "FieldValueInvalid",
    "some validation rules were not checked because the object was invalid; correct "
    "the existing errors to complete validation",
)


def _metric(kind: str, body: Obj) -> Obj:
    return {"type": kind, {"Resource": "resource", "Pods": "pods", "Object": "object",
            "External": "external", "ContainerResource": "containerResource"}[kind]: body}  # fmt: skip


CPU = _metric(
    "Resource", {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}
)
QUEUE = {"name": "queue"}

#: name -> spec (without scaleTargetRef unless given); every one is invalid upstream.
SAME: dict[str, Obj] = {
    "maxReplicas 0": {"maxReplicas": 0},
    "min above max": {"minReplicas": 5, "maxReplicas": 2},
    "scale to zero without Object/External": {"minReplicas": 0, "maxReplicas": 2, "metrics": [CPU]},
    "metric source missing": {"maxReplicas": 2, "metrics": [{"type": "Pods"}]},
    "two metric sources": {
        "maxReplicas": 2,
        "metrics": [{**CPU, "pods": {"metric": QUEUE, "target": {"type": "AverageValue", "averageValue": "1"}}}],
    },
    "External value and averageValue": {
        "maxReplicas": 2,
        "metrics": [_metric("External", {"metric": QUEUE, "target": {"type": "Value", "value": "1", "averageValue": "2"}})],
    },
    "External without value": {
        "maxReplicas": 2,
        "metrics": [_metric("External", {"metric": QUEUE, "target": {"type": "Value"}})],
    },
    "Object without value": {
        "maxReplicas": 2,
        "metrics": [_metric("Object", {"metric": QUEUE, "describedObject": REF, "target": {"type": "Value"}})],
    },
    "Pods without averageValue": {
        "maxReplicas": 2,
        "metrics": [_metric("Pods", {"metric": QUEUE, "target": {"type": "Value", "value": "1"}})],
    },
    "Resource utilization and averageValue": {
        "maxReplicas": 2,
        "metrics": [_metric("Resource", {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5, "averageValue": "1"}})],
    },
    "ContainerResource without target value": {
        "maxReplicas": 2,
        "metrics": [_metric("ContainerResource", {"name": "cpu", "container": "app", "target": {"type": "Utilization"}})],
    },
    "averageUtilization 0": {
        "maxReplicas": 2,
        "metrics": [_metric("Resource", {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}})],
    },
    "target type unknown": {
        "maxReplicas": 2,
        "metrics": [_metric("Resource", {"name": "cpu", "target": {"type": "Bogus", "averageUtilization": 5}})],
    },
    "metric type unknown": {"maxReplicas": 2, "metrics": [{"type": "Foo"}]},
    "selectPolicy unknown": {"maxReplicas": 2, "behavior": {"scaleUp": {"selectPolicy": "Fast"}}},
    "policy type unknown": {
        "maxReplicas": 2,
        "behavior": {"scaleUp": {"policies": [{"type": "Replicas", "value": 1, "periodSeconds": 15}]}},
    },
    "window and policy out of range": {
        "maxReplicas": 2,
        "behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 4000, "policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]},
            "scaleDown": {"stabilizationWindowSeconds": -1, "policies": [{"type": "Percent", "value": 10, "periodSeconds": 0}]},
        },
    },
    "no policies": {"maxReplicas": 2, "behavior": {"scaleDown": {"policies": []}}},
}  # fmt: skip

#: name -> (spec, the CR's causes): where the CRD's message or set of causes differs.
DIFFERENT: dict[str, tuple[Obj, set[tuple[str, str, str]]]] = {
    # Upstream names the value; a pattern's message names the pattern.
    "scaleTargetRef name with /": (
        {"maxReplicas": 2, "scaleTargetRef": {**REF, "name": "a/b"}},
        {("spec.scaleTargetRef.name", "FieldValueInvalid", "should match")},
    ),
    "negative target value": (
        {
            "maxReplicas": 2,
            "metrics": [_metric("External", {"metric": QUEUE, "target": {"type": "Value", "value": "-1"}})],
        },
        {("spec.metrics[0].external.target.value", "FieldValueInvalid", "should match")},
    ),
    # An Unsupported value (enum) stops the CEL rules, as kube-apiserver does.
    "enum and rule errors together": (
        {"maxReplicas": 2, "behavior": {"scaleUp": {"selectPolicy": "Fast", "stabilizationWindowSeconds": 4000}}},
        {("spec.behavior.scaleUp.selectPolicy", "FieldValueNotSupported", 'Unsupported value: "Fast"'), NOT_CHECKED},
    ),
}  # fmt: skip


def _detail(message: str) -> str:
    """A cause's text without the value an Invalid cause shows."""
    m = re.match(r'Invalid value: ("(?:[^"\\]|\\.)*"|[^:]+): (.*)$', message)
    return m.group(2) if m else message


@pytest.fixture
async def emulator() -> AsyncIterator[Emulator]:
    async with Emulator() as emu:
        yield emu


@pytest.fixture
async def http(emulator: Emulator) -> AsyncIterator[Http]:
    h = Http(emulator)
    code, body = await h.post(CRDS, crd.crd_manifest())
    assert code == 201, body
    yield h
    await h.close()


async def _causes(http: Http, path: str, api_version: str, spec: Obj) -> set[tuple[str, str, str]]:
    obj = {
        "apiVersion": api_version,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": REF, **copy.deepcopy(spec)},
    }
    code, status = await http.post(path, obj)
    assert code == 422, status
    assert status["reason"] == "Invalid"
    return {
        (c.get("field", "<nil>"), c["reason"], _detail(c["message"]))
        for c in status["details"]["causes"]
    }


@pytest.mark.parametrize("name", SAME)
async def test_refused_with_upstreams_causes(http: Http, name: str) -> None:
    spec = SAME[name]
    upstream = await _causes(http, V2, "autoscaling/v2", spec)
    ours = await _causes(http, CRS, crd.API_VERSION, spec)
    # apiextensions adds this note after an Unsupported value (its CEL rules then do
    # not run: "enum and rule errors together" below shows what that hides).
    ours.discard(NOT_CHECKED)
    if name == "scale to zero without Object/External":
        # hpactl's CRD is HPAScaleToZero's bound (0 allowed with an Object/External
        # metric); the API server with the gate off adds its minReplicas cause.
        upstream.discard(
            ("spec.minReplicas", "FieldValueInvalid", "must be greater than or equal to 1")
        )
    assert ours == upstream


@pytest.mark.parametrize("name", DIFFERENT)
async def test_known_differences(http: Http, name: str) -> None:
    spec, expected = DIFFERENT[name]
    upstream = await _causes(http, V2, "autoscaling/v2", spec)
    ours = await _causes(http, CRS, crd.API_VERSION, spec)
    assert {c[0] for c in ours if c[0] != "<nil>"} <= {c[0] for c in upstream}
    for want in expected:
        assert any(c[0] == want[0] and c[1] == want[1] and want[2] in c[2] for c in ours), (
            want,
            ours,
        )
    assert len(ours) == len(expected)


async def test_a_full_resource_with_every_extension_is_accepted_and_defaulted(http: Http) -> None:
    spec = {
        "maxReplicas": 10,
        "selectionStrategy": "OwnerReference",
        "suspend": False,
        "behavior": {"syncPeriodSeconds": 5, "scaleDown": {"stabilizationWindowSeconds": 60}},
        "metrics": [
            {**CPU, "resource": {**CPU["resource"], "fallback": {"replicas": 4}}},
            _metric(
                "External",
                {
                    "metric": {"name": "queue", "source": {"apiGroup": "keda.sh"}},
                    "target": {"type": "AverageValue", "averageValue": "30"},
                    "fallback": {"replicas": 8, "failureDuration": "1m30s"},
                },
            ),
        ],
    }
    obj = {
        "apiVersion": crd.API_VERSION,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": REF, **spec},
    }
    code, stored = await http.post(CRS, obj)
    assert code == 201, stored
    assert stored["spec"]["minReplicas"] == 1
    assert stored["spec"]["behavior"]["scaleUp"] == {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }
    assert stored["spec"]["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 60,
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }
    # The controller's view: the v2 HPA with the extension annotations.
    v2 = crd.cr_to_v2(stored)
    assert v2["metadata"]["annotations"] == {
        "hpactl.dev/sync-period-seconds": "5",
        "autoscaling.kubernetes.io/suspend": "false",
        "hpactl.dev/selection-strategy": "OwnerReference",
        "hpactl.dev/metric-fallback": '{"0":{"replicas":4},"1":{"replicas":8,"failureDuration":"1m30s"}}',
        "hpactl.dev/metric-sources": '{"queue":"keda.sh"}',
    }


@pytest.mark.parametrize(
    ("spec", "field", "text"),
    [
        ({"selectionStrategy": "Owner"}, "spec.selectionStrategy", "Unsupported value"),
        ({"behavior": {"syncPeriodSeconds": 0}}, "spec.behavior.syncPeriodSeconds", "must be greater than 0"),
        ({"behavior": {"syncPeriodSeconds": 3601}}, "spec.behavior.syncPeriodSeconds", "must be less than or equal to 3600"),
        ({"metrics": [{**CPU, "resource": {**CPU["resource"], "fallback": {"replicas": 0}}}]},
         "spec.metrics[0].resource.fallback.replicas", "must be greater than 0"),
        ({"metrics": [{**CPU, "resource": {**CPU["resource"], "fallback": {"replicas": 1, "failureDuration": "3"}}}]},
         "spec.metrics[0].resource.fallback.failureDuration", "should match"),
        ({"metrics": [_metric("External", {"metric": {"name": "q", "source": {"apiGroup": "external.metrics.k8s.io"}}, "target": {"type": "Value", "value": "1"}})]},
         "spec.metrics[0].external.metric.source.apiGroup", "must not be a default metrics API group"),
        ({"metrics": [_metric("External", {"metric": {"name": "q", "source": {"apiGroup": "Keda"}}, "target": {"type": "Value", "value": "1"}})]},
         "spec.metrics[0].external.metric.source.apiGroup", "should match"),
    ],
)  # fmt: skip
async def test_extension_fields_are_validated(http: Http, spec: Obj, field: str, text: str) -> None:
    causes = await _causes(http, CRS, crd.API_VERSION, {"maxReplicas": 2, **spec})
    assert any(c[0] == field and text in c[2] for c in causes), causes


async def test_hpactl_convert_output_is_accepted_and_converts_back(http: Http) -> None:
    from hpactl.cli.convert_cmd import convert_text

    v2: Obj = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "annotations": {
                "hpactl.dev/selection-strategy": "OwnerReference",
                "hpactl.dev/metric-sources": '{"queue": "keda.sh"}',
            },
        },
        "spec": {
            "scaleTargetRef": REF,
            "minReplicas": 1,
            "maxReplicas": 4,
            "metrics": [
                _metric("External", {"metric": QUEUE, "target": {"type": "Value", "value": "5"}})
            ],
        },
    }
    code, created = await http.post(V2, v2)
    assert code == 201, created
    (cr,), notes = convert_text(json.dumps(created), "live", crd.API_VERSION)
    assert notes == []
    code, stored = await http.post(CRS, cr)
    assert code == 201, stored
    (back,), _ = convert_text(json.dumps(stored), "live", crd.V2_API_VERSION)
    assert back["spec"] == created["spec"]
    annotations = back["metadata"]["annotations"]
    assert annotations["hpactl.dev/selection-strategy"] == "OwnerReference"
    assert json.loads(annotations["hpactl.dev/metric-sources"]) == {"queue": "keda.sh"}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")
async def test_kubectl_get_shows_the_printer_columns(
    http: Http, emulator: Emulator, tmp_path: Path
) -> None:
    obj = {
        "apiVersion": crd.API_VERSION,
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"scaleTargetRef": REF, "minReplicas": 2, "maxReplicas": 8, "metrics": [CPU]},
    }
    code, created = await http.post(CRS, obj)
    assert code == 201, created
    created["status"] = {
        "currentReplicas": 3,
        "desiredReplicas": 3,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {"averageUtilization": 42, "averageValue": "42m"},
                },
            }
        ],
    }
    code, body = await http.put(f"{CRS}/web/status", created)
    assert code == 200, body
    kubeconfig = emulator.write_kubeconfig(tmp_path / "kubeconfig")
    for resource in ("hhpa", "hpactl", f"{crd.PLURAL}.{crd.GROUP}"):
        code, out, err = await kubectl(kubeconfig, "get", resource, "-n", "default")
        assert code == 0, err
        header, row = (line.split() for line in out.strip().splitlines())
        assert header == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
        assert row[:6] == ["web", "web", "42", "2", "8", "3"]
