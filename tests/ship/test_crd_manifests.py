"""`manifests/crd/`: hpactl's HorizontalPodAutoscaler CRD, generated from upstream's
OpenAPI, current, schema-valid, structural, and carrying upstream's HPA validation.

* the committed CRD and the extracted autoscaling/v2 definitions are what
  ``python -m hpactl.cli.crdgen`` produces from the Kubernetes 1.37 OpenAPI today;
* the CRD validates against the CustomResourceDefinition schema (strict) and is a
  structural schema (every node typed, no $ref), small enough for kubectl apply;
* the spec's and status's fields are exactly autoscaling/v2's (plus the extensions);
* every rule of upstream's validation.go has its CEL rule, enum or pattern, with
  upstream's message at upstream's field path;
* the schema's defaults give what the API server's defaulting gives;
* the patterns accept exactly what upstream's Go checks accept.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from hpactl.cli import crdgen
from hpactl.model import autoscaling_v2_openapi, crd, crd_schema
from hpactl.model.conversion import default_hpa_v2
from hpactl.model.quantity import Quantity

from .support import MANIFESTS_ROOT

Obj = dict[str, Any]
CRD_DIR = MANIFESTS_ROOT / "crd"
CRD_FILE = CRD_DIR / "horizontalpodautoscalers.autoscaling.hpactl.dev.yaml"
OPENAPI_MODULE = Path(crd_schema.__file__).parent / "autoscaling_v2_openapi.py"


def _schema() -> Obj:
    schema: Obj = crd.crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


# --------------------------------------------------------------------------- generated, current


def test_committed_crd_is_current() -> None:
    assert CRD_FILE.read_text(encoding="utf-8") == crdgen.render_crd_yaml(), (
        f"{CRD_FILE} is stale; run: {crdgen.REGENERATE}"
    )


def test_extracted_openapi_is_current() -> None:
    assert OPENAPI_MODULE.read_text(encoding="utf-8") == crdgen.render_openapi_module(), (
        f"{OPENAPI_MODULE} is stale; run: {crdgen.REGENERATE_OPENAPI}"
    )


def test_kustomization_lists_the_crd() -> None:
    kust = yaml.safe_load((CRD_DIR / "kustomization.yaml").read_text())
    assert kust["resources"] == [CRD_FILE.name]


# --------------------------------------------------------------------------- a valid CRD


def test_crd_is_valid_against_the_kubernetes_schema() -> None:
    (obj,) = [d for d in yaml.safe_load_all(CRD_FILE.read_text()) if d]
    kubernetes_validate.validate(obj, "1.37", strict=True)
    broken = copy.deepcopy(obj)
    broken["spec"]["versions"][0]["subresource"] = {"status": {}}  # the check can fail
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.37", strict=True)


def test_the_contract_names() -> None:
    obj = crd.crd_manifest()
    spec = obj["spec"]
    assert obj["metadata"]["name"] == "horizontalpodautoscalers.autoscaling.hpactl.dev"
    assert spec["group"] == "autoscaling.hpactl.dev"
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "HorizontalPodAutoscaler",
        "listKind": "HorizontalPodAutoscalerList",
        "plural": "horizontalpodautoscalers",
        "singular": "horizontalpodautoscaler",
        "shortNames": ["hhpa"],
        "categories": ["hpactl"],
    }
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}
    assert [c["name"].upper() for c in version["additionalPrinterColumns"]] == [
        "REFERENCE",
        "TARGETS",
        "MINPODS",
        "MAXPODS",
        "REPLICAS",
        "AGE",
    ]


def test_schema_is_structural_and_small() -> None:
    schema = _schema()
    text = json.dumps(schema)
    assert "$ref" not in text and "oneOf" not in text
    for path, node in crd_schema.walk_schema(schema):
        assert "type" in node or node.get("x-kubernetes-int-or-string") is True, path
        if node.get("type") == "object" and path not in (".metadata",):
            assert "properties" in node or "additionalProperties" in node, path
        # A structural schema's defaults must validate and be pruned: only known fields.
        if "default" in node and isinstance(node["default"], dict):
            assert set(node["default"]) <= set(node["properties"]), path
    # kubectl apply (client side) keeps the object in a 256 KiB annotation.
    assert len(CRD_FILE.read_bytes()) < 200_000


def _fields(node: Obj, prefix: str = "") -> set[str]:
    return {p for p, _ in crd_schema.walk_schema(node, prefix)}


def test_spec_and_status_are_autoscaling_v2_plus_the_extensions() -> None:
    """Field by field: what the OpenAPI has, and the KEP fields, nothing else."""
    schema = _schema()
    defs = autoscaling_v2_openapi.DEFINITIONS

    def upstream(name: str, prefix: str) -> set[str]:
        out = {prefix}
        node = defs[name]
        for key, child in node.get("properties", {}).items():
            ref = child.get("$ref") or child.get("items", {}).get("$ref")
            sub = f"{prefix}.{key}" + ("[]" if child.get("type") == "array" else "")
            if ref and ref in defs and "properties" in defs[ref]:
                out |= upstream(ref, sub)
            else:
                out.add(sub)
                if child.get("type") == "array":
                    out.add(f"{prefix}.{key}")
                if "additionalProperties" in child:
                    out.add(f"{sub}{{}}")
        return out | {prefix.removesuffix("[]")}

    v2 = "io.k8s.api.autoscaling.v2."
    expected = upstream(v2 + "HorizontalPodAutoscalerSpec", ".spec") | upstream(
        v2 + "HorizontalPodAutoscalerStatus", ".status"
    )
    got = _fields(schema["properties"]["spec"], ".spec") | _fields(
        schema["properties"]["status"], ".status"
    )
    extensions = got - expected
    assert expected <= got
    sources = ("resource", "containerResource", "pods", "object", "external")
    assert extensions == (
        {
            ".spec.suspend",
            ".spec.selectionStrategy",
            ".spec.behavior.syncPeriodSeconds",
        }
        | {f".spec.metrics[].{s}.fallback" for s in sources}
        | {f".spec.metrics[].{s}.fallback.replicas" for s in sources}
        | {f".spec.metrics[].{s}.fallback.failureDuration" for s in sources}
        | {f".spec.metrics[].{s}.metric.source" for s in ("pods", "object", "external")}
        | {f".spec.metrics[].{s}.metric.source.apiGroup" for s in ("pods", "object", "external")}
        | {f".status.currentMetrics[].{s}.metric.source" for s in ("pods", "object", "external")}
        | {
            f".status.currentMetrics[].{s}.metric.source.apiGroup"
            for s in ("pods", "object", "external")
        }
    )


# --------------------------------------------------------------------------- upstream's rules


def _rules(schema: Obj) -> set[tuple[str, str, str]]:
    """(effective path, message, reason) of every CEL rule."""
    out = set()
    for path, node in crd_schema.walk_schema(schema):
        for rule in node.get("x-kubernetes-validations", []):
            where = path + rule.get("fieldPath", "")
            out.add((where, rule["message"], rule.get("reason", "FieldValueInvalid")))
    return out


R, F, INV = "FieldValueRequired", "FieldValueForbidden", "FieldValueInvalid"
SOURCES = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "External": "external",
    "ContainerResource": "containerResource",
}
#: pkg/apis/autoscaling/validation/validation.go, rule by rule (the emulator's
#: hpactl/emulator/validation.py reproduces it with the same texts).
UPSTREAM_RULES = [
    (".spec.maxReplicas", "must be greater than 0", INV),
    (".spec.maxReplicas", "must be greater than or equal to `minReplicas`", INV),
    (
        ".spec.metrics",
        "must specify at least one Object or External metric to support scaling to zero replicas",
        F,
    ),
    *[
        (f".spec.metrics[].{s}", "must populate information for the given metric source", R)
        for s in SOURCES.values()
    ],
    *[
        (f".spec.metrics[].{s}", "must populate the given metric source only", F)
        for s in SOURCES.values()
    ],
    *[
        (
            f".spec.metrics[].{s}.target.type",
            "must be either Utilization, Value, or AverageValue",
            INV,
        )
        for s in SOURCES.values()
    ],
    *[
        (f".spec.metrics[].{s}.target.averageUtilization", "must be greater than 0", INV)
        for s in SOURCES.values()
    ],
    *[
        (f".spec.metrics[].{s}.metric.name", "must specify a metric name", R)
        for s in ("pods", "object", "external")
    ],
    (
        ".spec.metrics[].object.target.averageValue",
        "must set either a target value or averageValue",
        R,
    ),
    (
        ".spec.metrics[].external.target.averageValue",
        "must set either a target value for metric or a per-pod target",
        R,
    ),
    (
        ".spec.metrics[].external.target.value",
        "may not set both a target value for metric and a per-pod target",
        F,
    ),
    (".spec.metrics[].pods.target.averageValue", "must specify a positive target averageValue", R),
    *[
        (
            f".spec.metrics[].{s}.target.averageUtilization",
            "must set either a target raw value or a target utilization",
            R,
        )
        for s in ("resource", "containerResource")
    ],
    *[
        (
            f".spec.metrics[].{s}.target.averageValue",
            "may not set both a target raw value and a target utilization",
            F,
        )
        for s in ("resource", "containerResource")
    ],
    *[
        (f".spec.metrics[].{s}.name", "must specify a resource name", R)
        for s in ("resource", "containerResource")
    ],
    (".spec.metrics[].containerResource.container", "must specify a container", R),
    *[
        rule
        for d in ("scaleUp", "scaleDown")
        for rule in (
            (
                f".spec.behavior.{d}.stabilizationWindowSeconds",
                "must be greater than or equal to zero",
                INV,
            ),
            (
                f".spec.behavior.{d}.stabilizationWindowSeconds",
                "must be less than or equal to 3600",
                INV,
            ),
            (f".spec.behavior.{d}.policies", "must specify at least one Policy", R),
            (f".spec.behavior.{d}.policies[].value", "must be greater than zero", INV),
            (f".spec.behavior.{d}.policies[].periodSeconds", "must be greater than zero", INV),
            (
                f".spec.behavior.{d}.policies[].periodSeconds",
                "must be less than or equal to 1800",
                INV,
            ),
        )
    ],
]


@pytest.mark.parametrize("rule", UPSTREAM_RULES, ids=lambda r: f"{r[0]}: {r[1]}")
def test_upstream_rule_is_in_the_schema(rule: tuple[str, str, str]) -> None:
    assert rule in _rules(_schema())


def test_unsupported_values_are_enums_in_upstreams_order() -> None:
    schema = _schema()
    assert _at(schema, ".spec.metrics[].type")["enum"] == sorted(SOURCES)
    for d in ("scaleUp", "scaleDown"):
        rules = f".spec.behavior.{d}"
        assert _at(schema, f"{rules}.selectPolicy")["enum"] == ["Disabled", "Max", "Min"]
        assert _at(schema, f"{rules}.policies[].type")["enum"] == ["Percent", "Pods"]
    assert _at(schema, ".spec.selectionStrategy")["enum"] == ["LabelSelector", "OwnerReference"]


def _at(schema: Obj, path: str) -> Obj:
    for p, node in crd_schema.walk_schema(schema):
        if p == path:
            return node
    raise KeyError(path)


def test_every_rule_is_in_the_small_cel_vocabulary() -> None:
    """The emulator evaluates these; a new construct needs it there first."""
    allowed = re.compile(
        r"^(?:has|self|size|exists|m|type|target|value|averageValue|averageUtilization"
        r"|minReplicas|maxReplicas|metrics|policies|Object|External|Utilization|Value|AverageValue"
        r"|Resource|Pods|ContainerResource|resource|pods|object|external|containerResource"
        r"|in)$"
    )
    for _path, node in crd_schema.walk_schema(_schema()):
        for rule in node.get("x-kubernetes-validations", []):
            code = re.sub(r"'[^']*'", "''", rule["rule"])  # string literals
            assert set(re.findall(r"[^\w\s]", code)) <= set("'!|&=<>().[],"), rule["rule"]
            for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code):
                assert allowed.match(word), (word, rule["rule"])


def test_lists_with_per_item_rules_are_bounded() -> None:
    """Kube-apiserver refuses a CRD whose rules' estimated cost is unbounded."""
    schema = _schema()
    for path, node in crd_schema.walk_schema(schema):
        if node.get("type") != "array":
            continue
        inner = json.dumps(node["items"])
        if "x-kubernetes-validations" in inner:
            assert node.get("maxItems") == crd_schema.MAX_LIST_ITEMS, path


# --------------------------------------------------------------------------- defaults


def _apply_defaults(value: Any, node: Obj) -> Any:
    """Structural defaulting as apiextensions does it: an absent property with a
    default gets it, then every present child is defaulted."""
    if isinstance(value, dict) and "properties" in node:
        for key, child in node["properties"].items():
            if key not in value and "default" in child:
                value[key] = copy.deepcopy(child["default"])
            if key in value:
                value[key] = _apply_defaults(value[key], child)
    elif isinstance(value, list) and "items" in node:
        return [_apply_defaults(v, node["items"]) for v in value]
    return value


SPECS: list[Obj] = [
    {"maxReplicas": 5},
    {"maxReplicas": 5, "minReplicas": 3, "behavior": {}},
    {"maxReplicas": 5, "behavior": {"scaleUp": {"stabilizationWindowSeconds": 60}}},
    {
        "maxReplicas": 5,
        "behavior": {
            "scaleDown": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]},
            "scaleUp": {"selectPolicy": "Disabled"},
        },
    },
    {
        "maxReplicas": 5,
        "metrics": [
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": "rps"},
                    "target": {"type": "AverageValue", "averageValue": "10"},
                },
            }
        ],
    },
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: json.dumps(s)[:60])
def test_schema_defaults_are_the_api_servers(spec: Obj) -> None:
    ref = {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}
    obj = {"spec": {**copy.deepcopy(spec), "scaleTargetRef": ref}}
    by_schema = _apply_defaults(copy.deepcopy(obj), _schema())
    by_api_server = default_hpa_v2(obj)
    assert by_schema["spec"] == by_api_server["spec"]


# --------------------------------------------------------------------------- patterns


def _sign(text: str) -> int | None:
    try:
        return Quantity.parse(text).sign()
    except ValueError:
        return None


QUANTITIES = [
    "1", "0", "-1", "+1", "100m", "0m", "0.5", ".5", "5.", "0.0", "00.001", "1e3", "0e3",
    "1e-3", "1E+2", "1Ki", "0Ki", "1.5Gi", "-0.5", "1.2.3", "", "m", "1mi", "1 ", "Ki",
    "0.000", "000", "7E", "2e", "+0",
]  # fmt: skip


#: Go's ParseQuantity reads a missing number as 0 ("m", "Ki") and the JSON decoder
#: trims spaces; the pattern (controller-gen's) refuses them (docs/managed-clusters.md).
PATTERN_REFUSES_UPSTREAM_ACCEPTS = {"m", "Ki", "1 "}


@pytest.mark.parametrize("text", QUANTITIES)
def test_quantity_patterns_accept_what_apimachinery_parses(text: str) -> None:
    sign = _sign(text)
    if text in PATTERN_REFUSES_UPSTREAM_ACCEPTS:
        assert sign is not None
        assert not re.search(crd_schema.QUANTITY_PATTERN, text)
        return
    assert bool(re.search(crd_schema.QUANTITY_PATTERN, text)) == (sign is not None)
    assert bool(re.search(crd_schema.POSITIVE_QUANTITY_PATTERN, text)) == (sign == 1)
    assert bool(re.search(crd_schema.NON_NEGATIVE_QUANTITY_PATTERN, text)) == (
        sign is not None and sign >= 0
    )


@pytest.mark.parametrize(
    "name", ["web", ".", "..", "...", ".a", "..a", "a.b", "a/b", "50%", "/", "a..", "", "%"]
)
def test_path_segment_pattern_is_is_valid_path_segment_name(name: str) -> None:
    # apimachinery path.IsValidPathSegmentName (the empty name is a Required error).
    valid = name not in (".", "..") and "/" not in name and "%" not in name
    assert bool(re.search(crd_schema.PATH_SEGMENT_PATTERN, name)) == valid


@pytest.mark.parametrize(
    ("text", "ok"),
    [("3m", True), ("1m30s", True), ("1.5h", True), ("90s", True), ("3 m", False), ("3", False),
     ("-3m", False), ("3d", False), ("", False), ("500ms", True)],
)  # fmt: skip
def test_failure_duration_pattern_is_go_duration(text: str, ok: bool) -> None:
    assert bool(re.search(crd_schema.GO_DURATION_PATTERN, text)) == ok
