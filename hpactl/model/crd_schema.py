"""The CRD of hpactl's HorizontalPodAutoscaler, built from upstream's OpenAPI.

One source of truth: the ``autoscaling/v2`` HorizontalPodAutoscalerSpec and Status
definitions of the Kubernetes OpenAPI (:mod:`hpactl.model.autoscaling_v2_openapi`,
extracted by ``python -m hpactl.cli.crdgen --openapi``). They become a structural
schema (refs inlined, ``Quantity`` as int-or-string with apimachinery's pattern), and
what the OpenAPI does not carry is added at the places upstream's code has it:

* the API server's defaulting (pkg/apis/autoscaling/v2/defaults.go): ``minReplicas``
  1, ``metrics`` the 80% cpu one when absent, and inside a present ``behavior`` the
  scale-up / scale-down rules field by field (scale-down leaves its window unset: the
  controller's flag applies);
* the validation of pkg/apis/autoscaling/validation/validation.go, as
  ``x-kubernetes-validations`` with upstream's message text, reason and field path
  (the API server then prints ``<path>: Invalid value: "<type>": <message>``,
  ``Required value: <message>`` or ``Forbidden: <message>``), as ``enum`` where
  upstream answers ``Unsupported value`` (same shape), and as ``pattern`` where a
  rule scans a string (no CEL cost); ``spec.metrics`` and ``policies`` get
  ``maxItems`` 100 so that the per-item rules have a bounded cost;
* the extension fields of :mod:`hpactl.model.crd` with the KEPs' bounds.

The CEL used stays in a small vocabulary (``has``, ``self.f``, comparisons, ``&&``,
``||``, ``!``, ``in`` a list literal, ``size``, ``exists``) so that the
emulator can evaluate it. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from hpactl.model import crd
from hpactl.model.autoscaling_v2_openapi import DEFINITIONS, KUBERNETES_VERSION

__all__ = ["MAX_LIST_ITEMS", "QUANTITY_PATTERN", "build_crd", "build_schema"]

_V2 = "io.k8s.api.autoscaling.v2."
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"

#: apimachinery's Quantity grammar (as controller-gen writes it).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_SUFFIX = r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
#: A Quantity whose sign is 1 (a non-zero digit in the mantissa, no minus sign).
POSITIVE_QUANTITY_PATTERN = (
    r"^\+?(([0-9]*[1-9][0-9]*(\.[0-9]*)?)|([0-9]*\.[0-9]*[1-9][0-9]*))" + _SUFFIX
)
#: A Quantity whose sign is not -1.
NON_NEGATIVE_QUANTITY_PATTERN = r"^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))" + _SUFFIX
#: apimachinery path.IsValidPathSegmentName: not "." or "..", no "/" or "%".
PATH_SEGMENT_PATTERN = r"^([^/%.][^/%]*|\.[^/%.][^/%]*|\.\.[^/%]+)?$"
DNS1123_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
GO_DURATION_PATTERN = r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))*$"

#: pkg/apis/autoscaling/validation: MaxPeriodSeconds, MaxStabilizationWindowSeconds.
MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600
#: Not upstream's: bounds the CEL cost of the per-item rules (see the module doc).
MAX_LIST_ITEMS = 100

#: validMetricSourceTypes, validSelectPolicyTypes, validPolicyTypes (sets.List: sorted).
METRIC_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]
SELECT_POLICIES = ["Disabled", "Max", "Min"]
POLICY_TYPES = ["Percent", "Pods"]
DEFAULT_METRICS_GROUPS = ["custom.metrics.k8s.io", "external.metrics.k8s.io", "metrics.k8s.io"]

Obj = dict[str, Any]


# ---------------------------------------------------------------- OpenAPI -> structural


def _short(text: str) -> str:
    """The first sentence: descriptions are kept for ``kubectl explain`` but short,
    so that the CRD stays well below the 256 KiB of ``kubectl apply``'s annotation."""
    text = " ".join(text.split())
    for end in (". ", ".\n"):
        cut = text.find(end)
        if cut != -1:
            return text[: cut + 1]
    return text


def _structural(node: Mapping[str, Any]) -> Obj:
    ref = node.get("$ref")
    if isinstance(ref, str):
        out = _definition(ref)
        if "description" in node:
            out["description"] = _short(str(node["description"]))
        return out
    out = {}
    if "description" in node:
        out["description"] = _short(str(node["description"]))
    if "type" in node:
        out["type"] = node["type"]
    for key in ("format", "enum"):
        if key in node:
            out[key] = copy.deepcopy(node[key])
    if "properties" in node:
        out["type"] = "object"
        out["properties"] = {k: _structural(v) for k, v in node["properties"].items()}
    if "required" in node:
        out["required"] = list(node["required"])
    if "items" in node:
        out["items"] = _structural(node["items"])
    if isinstance(node.get("additionalProperties"), Mapping):
        out["additionalProperties"] = _structural(node["additionalProperties"])
    for key, value in node.items():
        # list-type/map-type keep upstream's merge semantics for server-side apply.
        if key.startswith("x-kubernetes-") and "patch" not in key:
            out[key] = copy.deepcopy(value)
    return out


def _definition(name: str) -> Obj:
    if name == _QUANTITY:
        return {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }
    if name == _TIME:
        return {"type": "string", "format": "date-time"}
    return _structural(DEFINITIONS[name])


def _at(schema: Obj, path: str) -> Obj:
    """The node at ``a.b[].c`` (``[]``: a list's items)."""
    node = schema
    for part in path.split("."):
        many = part.endswith("[]")
        node = node["properties"][part.removesuffix("[]")]
        if many:
            node = node["items"]
    return node


def _rule(
    rule: str,
    message: str,
    *,
    field_path: str | None = None,
    reason: str | None = None,
) -> Obj:
    out: Obj = {"rule": rule, "message": message}
    if field_path is not None:
        out["fieldPath"] = field_path
    if reason is not None:
        out["reason"] = reason
    return out


def _add_rules(node: Obj, *rules: Obj) -> None:
    node.setdefault("x-kubernetes-validations", []).extend(rules)


_REQUIRED = "FieldValueRequired"
_FORBIDDEN = "FieldValueForbidden"


# -------------------------------------------------------------------------- validation


def _path_segment(node: Obj, required_message: str | None = None) -> None:
    """``IsValidPathSegmentName`` on a string, and ``Required`` when it is empty."""
    node["pattern"] = PATH_SEGMENT_PATTERN
    _add_rules(
        node,
        _rule("size(self) > 0", required_message or "must not be empty", reason=_REQUIRED),
    )


def _cross_version_ref(node: Obj) -> None:
    _path_segment(_at(node, "kind"))
    _path_segment(_at(node, "name"))


def _metric_identifier(node: Obj, *, routable: bool) -> None:
    _path_segment(_at(node, "name"), "must specify a metric name")
    if routable:
        node["properties"]["source"] = _metric_source_reference()


def _metric_source_reference(validated: bool = True) -> Obj:
    """KEP-6382's ``MetricSourceReference`` (unvalidated in the status, written by
    hpactl: no CEL cost on an unbounded list)."""
    out: Obj = {
        "description": "source names the API group of the metrics provider to ask for this "
        "metric (KEP-6382; hpactl.dev/metric-sources in autoscaling/v2).",
        "type": "object",
        "required": ["apiGroup"],
        "properties": {
            "apiGroup": {
                "description": "apiGroup is served by the provider's APIService.",
                "type": "string",
                "maxLength": 253,
                "pattern": DNS1123_SUBDOMAIN_PATTERN,
            }
        },
    }
    if validated:
        _add_rules(
            out["properties"]["apiGroup"],
            _rule(
                f"!(self in {DEFAULT_METRICS_GROUPS!r})",
                "must not be a default metrics API group (leave the source out instead)",
            ),
        )
    else:
        del out["properties"]["apiGroup"]["pattern"]
    return out


def _metric_target(node: Obj) -> None:
    _add_rules(  # an Invalid rule, not an enum: upstream answers Invalid, not Unsupported
        _at(node, "type"),
        _rule(
            "self == 'Utilization' || self == 'Value' || self == 'AverageValue'",
            "must be either Utilization, Value, or AverageValue",
        ),
    )
    for name in ("value", "averageValue"):
        q = _at(node, name)
        q["pattern"] = POSITIVE_QUANTITY_PATTERN
        q["minimum"] = 1
    _add_rules(_at(node, "averageUtilization"), _rule("self > 0", "must be greater than 0"))


def _fallback() -> Obj:
    """KEP-5679's ``ExternalMetricFallback`` (hpactl: on every metric source)."""
    return {
        "description": "fallback is the replica count this metric proposes once it has failed "
        "for failureDuration (KEP-5679; hpactl.dev/metric-fallback in autoscaling/v2).",
        "type": "object",
        "required": ["replicas"],
        "properties": {
            "replicas": {
                "description": "replicas proposed while the fallback is active.",
                "type": "integer",
                "format": "int32",
                "x-kubernetes-validations": [_rule("self > 0", "must be greater than 0")],
            },
            "failureDuration": {
                "description": "failureDuration is how long the metric must fail before the "
                "fallback applies (a Go duration, default 3m, at most 24h).",
                "type": "string",
                "maxLength": 64,
                # Syntax only: the range (more than 0, at most 24h) is the controller's
                # check, reported as for the annotation (docs/managed-clusters.md).
                "pattern": GO_DURATION_PATTERN,
            },
        },
    }


def _sources(spec: Obj) -> None:
    metric = _at(spec, "metrics[]")
    metric["properties"]["type"]["enum"] = list(METRIC_TYPES)
    fields = dict(crd.SOURCE_FIELDS)
    for typ, name in fields.items():
        others = [o for o in fields.values() if o != name]
        _add_rules(
            metric,
            _rule(
                f"self.type != '{typ}' || has(self.{name})",
                "must populate information for the given metric source",
                field_path=f".{name}",
                reason=_REQUIRED,
            ),
            _rule(
                f"!has(self.{name}) || self.type == '{typ}' || "
                + "!("
                + " || ".join(f"has(self.{o})" for o in others)
                + ")",
                "must populate the given metric source only",
                field_path=f".{name}",
                reason=_FORBIDDEN,
            ),
        )
    for name in fields.values():
        src = metric["properties"][name]
        _metric_target(_at(src, "target"))
        src["properties"]["fallback"] = _fallback()
    for name in ("pods", "object", "external"):
        _metric_identifier(_at(metric, f"{name}.metric"), routable=True)
    _cross_version_ref(_at(metric, "object.describedObject"))
    t = "!has(self.target) || "
    _add_rules(
        _at(metric, "object"),
        _rule(
            t + "has(self.target.value) || has(self.target.averageValue)",
            "must set either a target value or averageValue",
            field_path=".target.averageValue",
            reason=_REQUIRED,
        ),
    )
    _add_rules(
        _at(metric, "external"),
        _rule(
            t + "has(self.target.value) || has(self.target.averageValue)",
            "must set either a target value for metric or a per-pod target",
            field_path=".target.averageValue",
            reason=_REQUIRED,
        ),
        _rule(
            t + "!(has(self.target.value) && has(self.target.averageValue))",
            "may not set both a target value for metric and a per-pod target",
            field_path=".target.value",
            reason=_FORBIDDEN,
        ),
    )
    _add_rules(
        _at(metric, "pods"),
        _rule(
            t + "has(self.target.averageValue)",
            "must specify a positive target averageValue",
            field_path=".target.averageValue",
            reason=_REQUIRED,
        ),
    )
    for name in ("resource", "containerResource"):
        src = _at(metric, name)
        _add_rules(
            src["properties"]["name"],
            _rule("size(self) > 0", "must specify a resource name", reason=_REQUIRED),
        )
        _add_rules(
            src,
            _rule(
                t + "has(self.target.averageUtilization) || has(self.target.averageValue)",
                "must set either a target raw value or a target utilization",
                field_path=".target.averageUtilization",
                reason=_REQUIRED,
            ),
            _rule(
                t + "!(has(self.target.averageUtilization) && has(self.target.averageValue))",
                "may not set both a target raw value and a target utilization",
                field_path=".target.averageValue",
                reason=_FORBIDDEN,
            ),
        )
    container = _at(metric, "containerResource.container")
    container["maxLength"] = 63
    container["pattern"] = DNS1123_LABEL_PATTERN
    _add_rules(container, _rule("size(self) > 0", "must specify a container", reason=_REQUIRED))


def _default_rules(up: bool) -> Obj:
    """defaultHPAScaleUpRules / defaultHPAScaleDownRules (v2 defaults.go)."""
    rules: Obj = {
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }
    if up:
        rules = {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        }
    return rules


def _scaling_rules(node: Obj, up: bool) -> None:
    defaults = _default_rules(up)
    node["default"] = copy.deepcopy(defaults)
    props = node["properties"]
    for key, value in defaults.items():  # GenerateHPAScale*Rules: field by field
        props[key]["default"] = copy.deepcopy(value)
    window = props["stabilizationWindowSeconds"]
    _add_rules(
        window,
        _rule("self >= 0", "must be greater than or equal to zero"),
        _rule(
            f"self <= {MAX_STABILIZATION_WINDOW_SECONDS}",
            f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}",
        ),
    )
    props["selectPolicy"]["enum"] = list(SELECT_POLICIES)
    policies = props["policies"]
    policies["maxItems"] = MAX_LIST_ITEMS
    _add_rules(
        node,
        _rule(
            "!has(self.policies) || size(self.policies) > 0",
            "must specify at least one Policy",
            field_path=".policies",
            reason=_REQUIRED,
        ),
    )
    policy = policies["items"]["properties"]
    policy["type"]["enum"] = list(POLICY_TYPES)
    _add_rules(policy["value"], _rule("self > 0", "must be greater than zero"))
    _add_rules(
        policy["periodSeconds"],
        _rule("self > 0", "must be greater than zero"),
        _rule(
            f"self <= {MAX_PERIOD_SECONDS}",
            f"must be less than or equal to {MAX_PERIOD_SECONDS}",
        ),
    )
    tolerance = props["tolerance"]
    tolerance["pattern"] = NON_NEGATIVE_QUANTITY_PATTERN
    tolerance["minimum"] = 0


def _behavior(spec: Obj) -> None:
    behavior = _at(spec, "behavior")
    _scaling_rules(_at(behavior, "scaleUp"), up=True)
    _scaling_rules(_at(behavior, "scaleDown"), up=False)
    behavior["properties"]["syncPeriodSeconds"] = {
        "description": "syncPeriodSeconds is the period between two syncs of this autoscaler "
        "(KEP-6003; hpactl.dev/sync-period-seconds in autoscaling/v2).",
        "type": "integer",
        "format": "int32",
        "x-kubernetes-validations": [
            _rule("self > 0", "must be greater than 0"),
            _rule("self <= 3600", "must be less than or equal to 3600"),
        ],
    }


def _spec() -> Obj:
    spec = _definition(_V2 + "HorizontalPodAutoscalerSpec")
    props = spec["properties"]
    props["minReplicas"]["default"] = 1
    props["metrics"]["default"] = [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80},
            },
        }
    ]
    props["metrics"]["maxItems"] = MAX_LIST_ITEMS
    # The HPAScaleToZero bound: 0 is let through here, refused below without an
    # Object or External metric (hpactl's gate decides whether 0 is honoured).
    _add_rules(props["minReplicas"], _rule("self >= 0", "must be greater than or equal to 0"))
    _add_rules(props["maxReplicas"], _rule("self > 0", "must be greater than 0"))
    _add_rules(
        spec,
        _rule(
            "!has(self.minReplicas) || self.maxReplicas >= self.minReplicas",
            "must be greater than or equal to `minReplicas`",
            field_path=".maxReplicas",
        ),
        _rule(
            "!has(self.minReplicas) || self.minReplicas != 0 || (has(self.metrics) && "
            "self.metrics.exists(m, m.type == 'Object' || m.type == 'External'))",
            "must specify at least one Object or External metric to support scaling to zero "
            "replicas",
            field_path=".metrics",
            reason=_FORBIDDEN,
        ),
    )
    _cross_version_ref(props["scaleTargetRef"])
    _sources(spec)
    _behavior(spec)
    props["suspend"] = {
        "description": "suspend stops this autoscaler: no metrics are read and the target is "
        "not scaled until it is false again (KEP-3428; the annotation "
        "autoscaling.kubernetes.io/suspend in autoscaling/v2).",
        "type": "boolean",
    }
    props["selectionStrategy"] = {
        "description": "selectionStrategy says which pods count: those the scale selector "
        "matches (LabelSelector, the default) or only those the target owns "
        "(OwnerReference) (KEP-5325; hpactl.dev/selection-strategy in autoscaling/v2).",
        "type": "string",
        "enum": list(crd.SELECTION_STRATEGIES),
    }
    return spec


def _status() -> Obj:
    status = _definition(_V2 + "HorizontalPodAutoscalerStatus")
    for name in ("pods", "object", "external"):
        _metric_identifier_status(_at(status, f"currentMetrics[].{name}.metric"))
    return status


def _metric_identifier_status(node: Obj) -> None:
    node["properties"]["source"] = _metric_source_reference(validated=False)


def build_schema() -> Obj:
    """The ``openAPIV3Schema`` of hpactl's HorizontalPodAutoscaler."""
    return {
        "description": "HorizontalPodAutoscaler is autoscaling/v2's HorizontalPodAutoscaler, "
        "run by hpactl instead of kube-controller-manager (docs/managed-clusters.md).",
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": _spec(),
            "status": _status(),
        },
    }


def _printer_columns() -> list[Obj]:
    """``kubectl get hpa``'s columns, as far as a JSONPath reaches (see the docs)."""
    return [
        {
            "name": "Reference",
            "type": "string",
            "description": "The target's name (kubectl get hpa prints Kind/name).",
            "jsonPath": ".spec.scaleTargetRef.name",
        },
        {
            "name": "Targets",
            "type": "string",
            "description": "The current utilization of the first Resource metric, in "
            "percent of the request (kubectl get hpa prints current/target for every "
            "metric).",
            "jsonPath": ".status.currentMetrics[*].resource.current.averageUtilization",
        },
        {"name": "MinPods", "type": "integer", "jsonPath": ".spec.minReplicas"},
        {"name": "MaxPods", "type": "integer", "jsonPath": ".spec.maxReplicas"},
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.currentReplicas"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def build_crd(labels: Mapping[str, str] | None = None) -> Obj:
    """The CustomResourceDefinition object."""
    meta: Obj = {"name": crd.CRD_NAME}
    meta["labels"] = dict(labels or {"app.kubernetes.io/name": "hpactl"})
    meta["annotations"] = {
        "hpactl.dev/source": f"autoscaling/v2 HorizontalPodAutoscaler, Kubernetes "
        f"{KUBERNETES_VERSION} OpenAPI"
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": meta,
        "spec": {
            "group": crd.GROUP,
            "names": {
                "kind": crd.KIND,
                "listKind": crd.LIST_KIND,
                "plural": crd.PLURAL,
                "singular": crd.SINGULAR,
                "shortNames": list(crd.SHORT_NAMES),
                "categories": list(crd.CATEGORIES),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": crd.VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": build_schema()},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": _printer_columns(),
                }
            ],
        },
    }


def walk_schema(node: Obj, path: str = "") -> Iterable[tuple[str, Obj]]:
    """Every schema node with its path (for tests and the docs)."""
    yield path, node
    for key, child in node.get("properties", {}).items():
        yield from walk_schema(child, f"{path}.{key}")
    if isinstance(node.get("items"), dict):
        yield from walk_schema(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk_schema(node["additionalProperties"], f"{path}{{}}")
