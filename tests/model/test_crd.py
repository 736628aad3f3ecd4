"""hpactl's HorizontalPodAutoscaler resource <-> autoscaling/v2 (hpactl.model.crd)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from hpactl.model import crd
from hpactl.model.hpa import hpa_from_raw

V2: dict[str, Any] = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {
        "name": "worker",
        "namespace": "shop",
        "labels": {"app": "worker"},
        "annotations": {
            "team": "payments",
            "hpactl.dev/sync-period-seconds": "5",
            "autoscaling.kubernetes.io/suspend": "true",
            "hpactl.dev/selection-strategy": "OwnerReference",
            "hpactl.dev/metric-fallback": json.dumps(
                {"external:queue": {"replicas": 8}, "cpu": {"replicas": 4, "failureDuration": "2m"}}
            ),
            "hpactl.dev/metric-sources": json.dumps({"queue": "keda.sh"}),
        },
    },
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
        "minReplicas": 2,
        "maxReplicas": 20,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 70},
                },
            },
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue"},
                    "target": {"type": "AverageValue", "averageValue": "30"},
                },
            },
        ],
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}},
    },
}


def test_v2_annotations_become_the_kep_fields() -> None:
    cr = crd.v2_to_cr(V2)
    assert cr["apiVersion"] == "autoscaling.hpactl.dev/v1alpha1"
    assert cr["kind"] == "HorizontalPodAutoscaler"
    assert cr["metadata"]["annotations"] == {"team": "payments"}
    spec = cr["spec"]
    assert spec["behavior"]["syncPeriodSeconds"] == 5
    assert spec["suspend"] is True
    assert spec["selectionStrategy"] == "OwnerReference"
    assert spec["metrics"][0]["resource"]["fallback"] == {"replicas": 4, "failureDuration": "2m"}
    assert spec["metrics"][1]["external"]["fallback"] == {"replicas": 8}
    assert spec["metrics"][1]["external"]["metric"]["source"] == {"apiGroup": "keda.sh"}
    assert "apiGroup" not in json.dumps(spec["metrics"][0])
    assert V2["metadata"]["annotations"]["hpactl.dev/sync-period-seconds"] == "5"  # not mutated


def test_cr_to_v2_gives_the_controller_the_annotations_it_parses() -> None:
    back = crd.cr_to_v2(crd.v2_to_cr(V2))
    assert back["apiVersion"] == "autoscaling/v2"
    ann = back["metadata"]["annotations"]
    assert ann["hpactl.dev/sync-period-seconds"] == "5"
    assert ann["autoscaling.kubernetes.io/suspend"] == "true"
    assert ann["hpactl.dev/selection-strategy"] == "OwnerReference"
    # Keys become indices: unambiguous whatever the labels.
    assert json.loads(ann["hpactl.dev/metric-fallback"]) == {
        "0": {"replicas": 4, "failureDuration": "2m"},
        "1": {"replicas": 8},
    }
    assert json.loads(ann["hpactl.dev/metric-sources"]) == {"queue": "keda.sh"}
    # The v2 spec carries no field upstream's API would drop.
    assert back["spec"] == V2["spec"]
    hpa = hpa_from_raw(back)
    assert hpa.annotations["hpactl.dev/selection-strategy"] == "OwnerReference"
    assert hpa.spec.max_replicas == 20


def test_v2_round_trip_is_identity_up_to_annotation_spelling() -> None:
    back = crd.cr_to_v2(crd.v2_to_cr(V2))
    again = crd.v2_to_cr(back)
    assert again == crd.v2_to_cr(V2)


def test_a_plain_v2_hpa_round_trips_unchanged() -> None:
    plain = copy.deepcopy(V2)
    plain["metadata"]["annotations"] = {"team": "payments"}
    assert crd.cr_to_v2(crd.v2_to_cr(plain)) == plain
    assert crd.convert_v2_to_cr(plain).notes == []


def test_a_field_wins_over_a_leftover_annotation() -> None:
    cr = crd.v2_to_cr(V2)
    cr["metadata"]["annotations"]["hpactl.dev/selection-strategy"] = "LabelSelector"
    assert crd.cr_to_v2(cr)["metadata"]["annotations"]["hpactl.dev/selection-strategy"] == (
        "OwnerReference"
    )


def test_cr_to_v2_notes_each_extension_carried_as_annotation() -> None:
    notes = crd.convert_cr_to_v2(crd.v2_to_cr(V2)).notes
    assert len(notes) == 5
    assert all("carried as the annotation" in n for n in notes)


def test_status_metric_source_is_dropped_for_v2() -> None:
    cr = crd.v2_to_cr(V2)
    cr["status"] = {
        "currentReplicas": 2,
        "desiredReplicas": 2,
        "currentMetrics": [
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue", "source": {"apiGroup": "keda.sh"}},
                    "current": {"averageValue": "3"},
                },
            }
        ],
    }
    v2 = crd.cr_to_v2(cr)
    assert v2["status"]["currentMetrics"][0]["external"]["metric"] == {"name": "queue"}


@pytest.mark.parametrize(
    ("annotation", "value", "why"),
    [
        ("hpactl.dev/sync-period-seconds", "0", "1 to 3600"),
        ("hpactl.dev/sync-period-seconds", "30s", "1 to 3600"),
        ("autoscaling.kubernetes.io/suspend", "yes", "not a boolean"),
        ("hpactl.dev/selection-strategy", "ownerreference", "neither"),
        ("hpactl.dev/metric-fallback", "{", "not JSON"),
        ("hpactl.dev/metric-fallback", '{"memory": {"replicas": 2}}', "names no metric"),
        ("hpactl.dev/metric-fallback", '{"0": {"replicas": 0}}', "out of range"),
        ("hpactl.dev/metric-fallback", '{"0": {"replicas": 1}, "0": {"replicas": 2}}', "twice"),
        (
            "hpactl.dev/metric-fallback",
            '{"0": {"replicas": 1}, "cpu": {"replicas": 2}}',
            "two keys",
        ),
        ("hpactl.dev/metric-fallback", '{"0": {"replicas": 1, "failureThreshold": 3}}', "object"),
        ("hpactl.dev/metric-fallback", '{"0": {"replicas": 1, "failureDuration": "3 m"}}', "dur"),
        ("hpactl.dev/metric-fallback", '{"0": {"replicas": 1, "failureDuration": "25h"}}', "range"),
        ("hpactl.dev/metric-sources", '{"queue": "external.metrics.k8s.io"}', "default"),
        ("hpactl.dev/metric-sources", '["keda.sh"]', "JSON object"),
    ],
)
def test_a_malformed_annotation_stays_an_annotation(annotation: str, value: str, why: str) -> None:
    obj = copy.deepcopy(V2)
    obj["metadata"]["annotations"] = {annotation: value}
    out = crd.convert_v2_to_cr(obj)
    assert out.obj["metadata"]["annotations"] == {annotation: value}
    assert out.obj["spec"] == V2["spec"]
    assert len(out.notes) == 1 and annotation in out.notes[0] and why in out.notes[0]


def test_sync_period_without_behavior_creates_it_and_says_what_it_implies() -> None:
    obj = copy.deepcopy(V2)
    del obj["spec"]["behavior"]
    obj["metadata"]["annotations"] = {"hpactl.dev/sync-period-seconds": "3600"}
    out = crd.convert_v2_to_cr(obj)
    assert out.obj["spec"]["behavior"] == {"syncPeriodSeconds": 3600}
    assert "metadata" in out.obj and "annotations" not in out.obj["metadata"]
    assert any("default rules" in n for n in out.notes)


def test_metric_sources_apply_to_every_routable_metric_of_that_name() -> None:
    obj = copy.deepcopy(V2)
    obj["spec"]["metrics"].append(
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "queue"},
                "target": {"type": "AverageValue", "averageValue": "1"},
            },
        }
    )
    obj["metadata"]["annotations"] = {
        "hpactl.dev/metric-sources": '{"queue": "keda.sh", "x": "a.b"}'
    }
    out = crd.convert_v2_to_cr(obj)
    metrics = out.obj["spec"]["metrics"]
    assert metrics[1]["external"]["metric"]["source"] == {"apiGroup": "keda.sh"}
    assert metrics[2]["pods"]["metric"]["source"] == {"apiGroup": "keda.sh"}
    assert out.notes == [
        "annotation hpactl.dev/metric-sources: 'x' names no Pods, Object or External metric: "
        "dropped (it routed nothing)"
    ]


def test_suspend_reads_go_booleans() -> None:
    obj = copy.deepcopy(V2)
    obj["metadata"]["annotations"] = {"autoscaling.kubernetes.io/suspend": "F"}
    assert crd.v2_to_cr(obj)["spec"]["suspend"] is False
    assert crd.cr_to_v2(crd.v2_to_cr(obj))["metadata"]["annotations"] == {
        "autoscaling.kubernetes.io/suspend": "false"
    }


def test_constants_of_the_contract() -> None:
    assert (crd.GROUP, crd.VERSION, crd.KIND, crd.PLURAL) == (
        "autoscaling.hpactl.dev",
        "v1alpha1",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
    )
    assert crd.SHORT_NAMES == ("hhpa",)
    assert crd.is_cr(crd.v2_to_cr(V2)) and not crd.is_cr(V2)
