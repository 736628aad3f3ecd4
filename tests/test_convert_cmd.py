"""`hpactl convert`: autoscaling/v1 and v2 manifests to hpactl's resource and back."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from hpactl.cli import main

Obj = dict[str, Any]

V2: Obj = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {
        "name": "web",
        "namespace": "shop",
        "annotations": {
            "hpactl.dev/sync-period-seconds": "10",
            "hpactl.dev/metric-fallback": '{"cpu": {"replicas": 4}}',
            "owner": "team-a",
        },
    },
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 10,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60},
                },
            }
        ],
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}},
    },
}


def _run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, *args: str
) -> tuple[int, str, str]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    code = main(["convert", "-f", str(path), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_v2_to_hpactl_and_back_is_the_same_manifest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = _run(capsys, tmp_path, yaml.safe_dump(V2))
    assert code == 0 and err == ""
    (cr,) = yaml.safe_load_all(out)
    assert cr["apiVersion"] == "autoscaling.hpactl.dev/v1alpha1"
    assert cr["metadata"]["annotations"] == {"owner": "team-a"}
    assert cr["spec"]["behavior"]["syncPeriodSeconds"] == 10
    assert cr["spec"]["metrics"][0]["resource"]["fallback"] == {"replicas": 4}

    code, back_text, err = _run(capsys, tmp_path, out, "--to=v2")
    assert code == 0
    (back,) = yaml.safe_load_all(back_text)
    expected = copy.deepcopy(V2)
    expected["metadata"]["annotations"]["hpactl.dev/metric-fallback"] = '{"0":{"replicas":4}}'
    assert back == expected
    # Each field v2 cannot hold is said on stderr, naming the object.
    assert err.count("hpactl convert: ") == 2
    assert "shop/web: spec.behavior.syncPeriodSeconds has no autoscaling/v2 field" in err


def test_v1_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    v1 = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "api", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
            "maxReplicas": 5,
            "targetCPUUtilizationPercentage": 70,
        },
        "status": {"currentReplicas": 2, "desiredReplicas": 2},
    }
    code, out, _ = _run(capsys, tmp_path, yaml.safe_dump(v1))
    assert code == 0
    (cr,) = yaml.safe_load_all(out)
    assert cr["kind"] == "HorizontalPodAutoscaler"
    assert cr["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 70},
            },
        }
    ]
    assert "status" not in cr


def test_multi_document_and_lists_keep_their_shape(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    other = copy.deepcopy(V2)
    other["metadata"] = {"name": "worker", "namespace": "shop"}
    listed = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscalerList",
        "items": [other],
    }
    text = yaml.safe_dump(V2) + "---\n---\n" + yaml.safe_dump(listed)
    code, out, _ = _run(capsys, tmp_path, text)
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["HorizontalPodAutoscaler", "HorizontalPodAutoscalerList"]
    assert docs[1]["apiVersion"] == "autoscaling.hpactl.dev/v1alpha1"
    assert docs[1]["items"][0]["metadata"] == {"name": "worker", "namespace": "shop"}

    code, out, _ = _run(capsys, tmp_path, text, "-o", "json")
    whole = json.loads(out)
    assert whole["kind"] == "List" and len(whole["items"]) == 2


def test_live_object_fields_are_left_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    live = copy.deepcopy(V2)
    live["metadata"].update(
        uid="1234",
        resourceVersion="99",
        generation=3,
        creationTimestamp="2026-01-01T00:00:00Z",
        managedFields=[{"manager": "kubectl"}],
    )
    live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    live["status"] = {"currentReplicas": 3, "desiredReplicas": 3}
    code, out, _ = _run(capsys, tmp_path, json.dumps(live))  # JSON input, too
    (cr,) = yaml.safe_load_all(out)
    assert code == 0
    assert set(cr) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(cr["metadata"]) == {"name", "namespace", "annotations"}
    assert cr["metadata"]["annotations"] == {"owner": "team-a"}


def test_malformed_extension_annotation_is_kept_and_said(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = copy.deepcopy(V2)
    bad["metadata"]["annotations"] = {"autoscaling.kubernetes.io/suspend": "yes"}
    code, out, err = _run(capsys, tmp_path, yaml.safe_dump(bad))
    assert code == 0
    (cr,) = yaml.safe_load_all(out)
    assert cr["metadata"]["annotations"] == {"autoscaling.kubernetes.io/suspend": "yes"}
    assert "suspend" not in cr["spec"]
    assert err == (
        "hpactl convert: in.yaml: document 1: shop/web: annotation "
        "autoscaling.kubernetes.io/suspend kept as an annotation: not a boolean "
        "(hpactl reports it as malformed)\n"
    ).replace("in.yaml", str(tmp_path / "in.yaml"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Deployment\napiVersion: apps/v1\nmetadata: {name: web}\n",
         "document 1: apps/v1 Deployment is not a HorizontalPodAutoscaler of autoscaling/v1, "
         "autoscaling/v2 or autoscaling.hpactl.dev/v1alpha1"),
        ("apiVersion: autoscaling/v2beta1\nkind: HorizontalPodAutoscaler\n",
         "document 1: autoscaling/v2beta1 HorizontalPodAutoscaler is not a HorizontalPodAutoscaler"),
        ("spec: [unclosed\n", "not valid YAML (line 2, column 1)"),
        ("- a\n- b\n", "document 1: not an object"),
        ("", "no document to convert"),
        ("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: x}\nspec: 3\n",
         "document 1: HorizontalPodAutoscaler x: spec must be an object"),
        ("apiVersion: v1\nkind: List\nitems: [3]\n", "document 1 item 0: not an object"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    code, out, err = _run(capsys, tmp_path, text)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("hpactl convert: error: ")
    assert message in err


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["convert", "-f", str(tmp_path / "nope.yaml")]) == 2
    out, err = capsys.readouterr()
    assert (
        out == ""
        and err == f"hpactl convert: error: {tmp_path / 'nope.yaml'}: No such file or directory\n"
    )


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump(V2)))
    assert main(["convert", "-f", "-", "--to", "v2"]) == 0  # v2 to v2: unchanged
    out, _ = capsys.readouterr()
    assert yaml.safe_load(out) == V2
