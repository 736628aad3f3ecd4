"""Custom resources against their CRD's structural schema, as kube-apiserver's
apiextensions does: pruning, defaulting, kube-openapi validation messages, list types,
CEL rules, the status subresource, and the error shape clients (kubectl) show."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from emulator.helpers import Http
from hpactl.emulator import Emulator, schema

Obj = dict[str, Any]

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GADGETS = "/apis/tests.hpactl.dev/v1/namespaces/default/gadgets"
MERGE = "application/merge-patch+json"
PREFIX = 'Gadget.tests.hpactl.dev "g" is invalid: '
NOT_CHECKED = (
    '<nil>: Invalid value: "null": some validation rules were not checked because the '
    "object was invalid; correct the existing errors to complete validation"
)
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def gadget_schema() -> Obj:
    """A test schema using every keyword the emulator implements."""
    return {
        "type": "object",
        "x-kubernetes-validations": [
            {
                "rule": "self.metadata.name.size() <= 20",
                "message": "name must be at most 20 characters",
            }
        ],
        "properties": {
            "spec": {
                "type": "object",
                "required": ["maxReplicas", "target"],
                "x-kubernetes-validations": [
                    {
                        "rule": "!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",
                        "message": "minReplicas must be less than or equal to maxReplicas",
                    },
                    {
                        "rule": "!has(self.tags) || !('forbidden' in self.tags)",
                        "messageExpression": (
                            "'tag forbidden is not allowed (' + string(size(self.tags)) + ' tags)'"
                        ),
                        "reason": "FieldValueForbidden",
                        "fieldPath": ".tags",
                    },
                ],
                "properties": {
                    "minReplicas": {
                        "type": "integer",
                        "format": "int32",
                        "minimum": 1,
                        "default": 1,
                    },
                    "maxReplicas": {
                        "type": "integer",
                        "format": "int32",
                        "minimum": 1,
                        "maximum": 100,
                    },
                    "mode": {"type": "string", "enum": ["Fast", "Slow"], "default": "Slow"},
                    "name": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 8,
                        "pattern": "^[a-z]+$",
                    },
                    "ratio": {
                        "type": "number",
                        "minimum": 0,
                        "exclusiveMinimum": True,
                        "maximum": 1,
                        "exclusiveMaximum": True,
                    },
                    "target": {
                        "x-kubernetes-int-or-string": True,
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "pattern": QUANTITY,
                    },
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 1,
                        "maxItems": 3,
                        "x-kubernetes-list-type": "set",
                    },
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer", "default": 80},
                            },
                        },
                    },
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "enabled": {"type": "boolean"},
                    "note": {"type": "string", "nullable": True},
                    "frozen": {
                        "type": "boolean",
                        "x-kubernetes-validations": [
                            {"rule": "self == oldSelf", "message": "frozen is immutable"}
                        ],
                    },
                    "choice": {
                        "type": "object",
                        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
                    },
                },
            },
            "status": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer", "minimum": 0},
                    "phase": {"type": "string", "enum": ["Ready", "Pending"]},
                },
            },
        },
    }


def gadget_crd(schema: Obj | None = None) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.tests.hpactl.dev"},
        "spec": {
            "group": "tests.hpactl.dev",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema or gadget_schema()},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def gadget(spec: Obj, name: str = "g", **extra: Any) -> Obj:
    return {
        "apiVersion": "tests.hpactl.dev/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": spec,
        **extra,
    }


VALID: Obj = {"maxReplicas": 3, "target": "500m"}


@pytest.fixture
async def http(emulator: Emulator) -> AsyncIterator[Http]:
    h = Http(emulator)
    code, _ = await h.post(CRDS, gadget_crd())
    assert code == 201
    yield h
    await h.close()


async def rejected(http: Http, spec: Obj) -> str:
    code, status = await http.post(GADGETS, gadget(spec))
    assert code == 422, status
    assert status["reason"] == "Invalid" and status["kind"] == "Status"
    message: str = status["message"]
    return message


# ---- keywords -----------------------------------------------------------------------------


async def test_type_error_blocks_the_cel_rules(http: Http) -> None:
    msg = await rejected(http, {"maxReplicas": "x", "target": 1})
    assert msg == (
        PREFIX + '[spec.maxReplicas: Invalid value: "string": spec.maxReplicas in body must be '
        f'of type integer: "string", {NOT_CHECKED}]'
    )


async def test_required(http: Http) -> None:
    msg = await rejected(http, {})
    assert msg == (
        PREFIX + f"[spec.maxReplicas: Required value, spec.target: Required value, {NOT_CHECKED}]"
    )


async def test_enum_is_unsupported_value(http: Http) -> None:
    msg = await rejected(http, {**VALID, "mode": "Medium"})
    assert msg == (
        PREFIX + '[spec.mode: Unsupported value: "Medium": supported values: "Fast", "Slow", '
        f"{NOT_CHECKED}]"
    )


@pytest.mark.parametrize(
    ("field", "value", "detail"),
    [
        ("minReplicas", 0, "should be greater than or equal to 1"),
        ("maxReplicas", 101, "should be less than or equal to 100"),
        ("ratio", 0, "should be greater than 0"),
        ("ratio", 1, "should be less than 1"),
        ("ratio", 1.5, "should be less than 1"),
    ],
)
async def test_minimum_maximum_and_exclusive(
    http: Http, field: str, value: float, detail: str
) -> None:
    msg = await rejected(http, {**VALID, field: value})
    assert msg == PREFIX + f"spec.{field}: Invalid value: {value}: spec.{field} in body {detail}"


async def test_errors_that_do_not_block_the_cel_rules(http: Http) -> None:
    """A bound violated is no blocking error: the rules still run (minReplicas defaults to 1)."""
    msg = await rejected(http, {**VALID, "maxReplicas": 0})
    assert msg == PREFIX + (
        "[spec.maxReplicas: Invalid value: 0: spec.maxReplicas in body should be greater than "
        'or equal to 1, spec: Invalid value: "object": minReplicas must be less than or equal '
        "to maxReplicas]"
    )


async def test_ratio_inside_exclusive_bounds_is_accepted(http: Http) -> None:
    code, obj = await http.post(GADGETS, gadget({**VALID, "ratio": 0.5}))
    assert code == 201 and obj["spec"]["ratio"] == 0.5


async def test_string_length_and_pattern(http: Http) -> None:
    msg = await rejected(http, {**VALID, "name": ""})
    assert msg == (
        PREFIX + '[spec.name: Invalid value: "": spec.name in body should be at least 1 chars '
        "long, spec.name: Invalid value: \"\": spec.name in body should match '^[a-z]+$']"
    )
    msg = await rejected(http, {**VALID, "name": "abcdefghij"})
    assert msg == PREFIX + f"[spec.name: Too long: may not be more than 8 bytes, {NOT_CHECKED}]"


async def test_items_count_set_and_map_lists(http: Http) -> None:
    msg = await rejected(http, {**VALID, "tags": []})
    assert (
        msg
        == PREFIX + "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"
    )
    msg = await rejected(http, {**VALID, "tags": ["a", "b", "c", "d"]})
    assert msg == PREFIX + f"[spec.tags: Too many: 4: must have at most 3 items, {NOT_CHECKED}]"
    msg = await rejected(http, {**VALID, "tags": ["a", "b", "a"]})
    assert msg == PREFIX + 'spec.tags[2]: Duplicate value: "a"'
    msg = await rejected(http, {**VALID, "ports": [{"name": "x"}, {"name": "x", "port": 1}]})
    assert msg == PREFIX + ('spec.ports[1]: Duplicate value: map[string]interface {}{"name":"x"}')
    msg = await rejected(http, {**VALID, "ports": [{"port": 1}]})
    assert msg == PREFIX + f"[spec.ports[0].name: Required value, {NOT_CHECKED}]"


async def test_int_or_string_quantity(http: Http) -> None:
    for target in (2, "1500m", "2Gi", "1e3"):
        code, obj = await http.put(GADGETS + "/g", gadget({**VALID, "target": target}))
        if code == 404:
            code, obj = await http.post(GADGETS, gadget({**VALID, "target": target}))
        assert code in (200, 201), obj
        assert obj["spec"]["target"] == target
    code, status = await http.put(GADGETS + "/g", gadget({**VALID, "target": "1x"}))
    assert code == 422
    assert status["message"] == (
        PREFIX
        + f"spec.target: Invalid value: \"1x\": spec.target in body should match '{QUANTITY}'"
    )
    code, status = await http.put(GADGETS + "/g", gadget({**VALID, "target": True}))
    assert status["message"] == (
        PREFIX + '[<nil>: Invalid value: "": "spec.target" must validate at least one schema '
        '(anyOf), spec.target: Invalid value: "boolean": spec.target in body must be of type '
        f'integer: "boolean", {NOT_CHECKED}]'
    )


async def test_one_of(http: Http) -> None:
    msg = await rejected(http, {**VALID, "choice": {}})
    assert msg.startswith(
        PREFIX + '[<nil>: Invalid value: "": "spec.choice" must validate one and only one '
        "schema (oneOf). Found none valid, spec.choice.a: Required value"
    )
    msg = await rejected(http, {**VALID, "choice": {"a": "1", "b": "2"}})
    assert msg == PREFIX + (
        '<nil>: Invalid value: "": "spec.choice" must validate one and only one schema '
        "(oneOf). Found 2 valid alternatives"
    )
    code, _ = await http.post(GADGETS, gadget({**VALID, "choice": {"b": "2"}}))
    assert code == 201


async def test_map_values_and_booleans(http: Http) -> None:
    msg = await rejected(http, {**VALID, "labels": {"a": 1}, "enabled": "yes"})
    assert msg == PREFIX + (
        '[spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type '
        'string: "integer", spec.enabled: Invalid value: "string": spec.enabled in body must '
        f'be of type boolean: "string", {NOT_CHECKED}]'
    )


# ---- pruning, nulls and defaults ----------------------------------------------------------


async def test_unknown_fields_are_pruned_with_a_warning_unless_preserved(
    http: Http, emulator: Emulator
) -> None:
    body = gadget({**VALID, "bogus": 1, "extra": {"free": {"form": True}}}, other=2)
    code, obj = await http.post(GADGETS, body)
    assert code == 201
    assert "bogus" not in obj["spec"] and "other" not in obj
    assert obj["spec"]["extra"] == {"free": {"form": True}}
    stored = emulator.store.get("tests.hpactl.dev", "gadgets", "default", "g")
    assert stored is not None and "bogus" not in stored["spec"]
    async with http.session.post(
        http.base + GADGETS, json=gadget({**VALID, "bogus": 1}, name="h")
    ) as resp:
        assert resp.status == 201
        assert resp.headers.getall("Warning") == ['299 - "unknown field \\"spec.bogus\\""']
    code, status = await http.post(
        GADGETS,
        gadget({**VALID, "bogus": 1}, name="i"),
        params={"fieldValidation": "Strict"},
    )
    assert code == 400
    assert status["message"] == (
        'Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: '
        'unknown field "spec.bogus"'
    )


async def test_defaults_and_nulls(http: Http) -> None:
    spec = {**VALID, "ports": [{"name": "web"}], "note": None, "name": None, "mode": None}
    code, obj = await http.post(GADGETS, gadget(spec))
    assert code == 201
    assert obj["spec"] == {
        "maxReplicas": 3,
        "target": "500m",
        "minReplicas": 1,  # default
        "mode": "Slow",  # a non-nullable null with a default is defaulted
        "ports": [{"name": "web", "port": 80}],  # defaults inside list items
        "note": None,  # nullable: kept
    }  # name: a non-nullable null without default is dropped


async def test_defaults_are_applied_on_read_from_storage(http: Http, emulator: Emulator) -> None:
    code, obj = await http.post(GADGETS, gadget(VALID))
    assert code == 201
    rv = obj["metadata"]["resourceVersion"]
    # The CRD gains a defaulted field: objects stored before show it when read.
    code, crd = await http.get(CRDS + "/gadgets.tests.hpactl.dev")
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["properties"]["level"] = {"type": "integer", "default": 7}
    code, _ = await http.put(CRDS + "/gadgets.tests.hpactl.dev", crd)
    assert code == 200
    code, obj = await http.get(GADGETS + "/g")
    assert obj["spec"]["level"] == 7 and obj["metadata"]["resourceVersion"] == rv
    code, lst = await http.get(GADGETS)
    assert lst["items"][0]["spec"]["level"] == 7
    stored = emulator.store.get("tests.hpactl.dev", "gadgets", "default", "g")
    assert stored is not None and "level" not in stored["spec"]  # storage is untouched


# ---- CEL rules ---------------------------------------------------------------------------------


async def test_cel_rule_messages(http: Http) -> None:
    msg = await rejected(http, {**VALID, "minReplicas": 4})
    assert msg == PREFIX + (
        'spec: Invalid value: "object": minReplicas must be less than or equal to maxReplicas'
    )
    # messageExpression, reason and fieldPath
    msg = await rejected(http, {**VALID, "tags": ["forbidden"]})
    assert msg == PREFIX + "spec.tags: Forbidden: tag forbidden is not allowed (1 tags)"
    # a rule at the root reports the root path as the API server does: <nil>
    code, status = await http.post(GADGETS, gadget(VALID, name="a-very-long-name-indeed"))
    assert code == 422
    assert status["message"] == (
        'Gadget.tests.hpactl.dev "a-very-long-name-indeed" is invalid: <nil>: Invalid value: '
        '"object": name must be at most 20 characters'
    )


async def test_transition_rule_runs_on_update_only(http: Http) -> None:
    code, _ = await http.post(GADGETS, gadget({**VALID, "frozen": True}))
    assert code == 201
    code, status = await http.patch(GADGETS + "/g", {"spec": {"frozen": False}}, MERGE)
    assert code == 422
    assert (
        status["message"] == PREFIX + 'spec.frozen: Invalid value: "boolean": frozen is immutable'
    )
    code, obj = await http.patch(GADGETS + "/g", {"spec": {"maxReplicas": 5}}, MERGE)
    assert code == 200 and obj["spec"]["maxReplicas"] == 5


async def test_transition_rules_correlate_map_list_items_by_key(emulator: Emulator) -> None:
    item_rule = {"rule": "self.port == oldSelf.port", "message": "port is immutable"}
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "x-kubernetes-validations": [item_rule],
                            "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer"},
                            },
                        },
                    },
                    "atomic": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "x-kubernetes-validations": [item_rule],
                            "properties": {"port": {"type": "integer"}},
                        },
                    },
                },
            }
        },
    }
    h = Http(emulator)
    try:
        assert (await h.post(CRDS, gadget_crd(schema)))[0] == 201
        ports = [{"name": "a", "port": 1}]
        assert (await h.post(GADGETS, gadget({"ports": ports, "atomic": [{"port": 1}]})))[0] == 201
        # a new item (no old one with its key) and a reordered list pass
        ports = [{"name": "b", "port": 2}, {"name": "a", "port": 1}]
        code, _ = await h.patch(GADGETS + "/g", {"spec": {"ports": ports}}, MERGE)
        assert code == 200
        # the item keyed "a" changed port: refused at its new index
        ports = [{"name": "b", "port": 2}, {"name": "a", "port": 9}]
        code, status = await h.patch(GADGETS + "/g", {"spec": {"ports": ports}}, MERGE)
        assert code == 422
        assert status["message"] == PREFIX + (
            'spec.ports[1]: Invalid value: "object": port is immutable'
        )
        # items of a list that is not a map have no old value: the rule does not run
        code, _ = await h.patch(GADGETS + "/g", {"spec": {"atomic": [{"port": 9}]}}, MERGE)
        assert code == 200
    finally:
        await h.close()


async def test_cel_runtime_error_is_reported_with_the_rule(emulator: Emulator) -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.a / self.b > 0"}],
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            }
        },
    }
    h = Http(emulator)
    try:
        assert (await h.post(CRDS, gadget_crd(schema)))[0] == 201
        code, status = await h.post(GADGETS, gadget({"a": 1, "b": 0}))
        assert code == 422
        assert status["message"] == PREFIX + (
            'spec: Invalid value: "object": division by zero evaluating rule: self.a / self.b > 0'
        )
        code, status = await h.post(GADGETS, gadget({"a": 1}))
        assert status["message"] == PREFIX + (
            'spec: Invalid value: "object": no such key: b evaluating rule: self.a / self.b > 0'
        )
        code, status = await h.post(GADGETS, gadget({"a": 0, "b": 1}))
        assert status["message"] == PREFIX + (
            'spec: Invalid value: "object": failed rule: self.a / self.b > 0'
        )
    finally:
        await h.close()


async def _create_crd(emulator: Emulator, schema: Obj) -> tuple[int, Any]:
    """POST the gadget CRD with ``schema``: the code and the body."""
    h = Http(emulator)
    try:
        return await h.post(CRDS, gadget_crd(schema))
    finally:
        await h.close()


async def test_crd_with_a_rule_that_does_not_compile_is_refused(emulator: Emulator) -> None:
    schema = gadget_schema()
    schema["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.maxReplicas > 0"},
        {"rule": "self.nope > 1 && ip(self)"},
        {"rule": "self.maxReplicas =="},
    ]
    code, status = await _create_crd(emulator, schema)
    assert code == 422
    at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    causes = status["details"]["causes"]
    assert [c["field"] for c in causes] == [f"{at}[1].rule", f"{at}[2].rule"]
    assert causes[0]["message"] == (
        'Invalid value: apiextensions.ValidationRule{Rule:"self.nope > 1 && ip(self)", '
        'Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), '
        'FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: '
        "ERROR: <input>:1:5: undefined field 'nope'\n"
        " | self.nope > 1 && ip(self)\n"
        " | ....^\n"
        "ERROR: <input>:1:20: undeclared reference to 'ip' (in container '')\n"
        " | self.nope > 1 && ip(self)\n"
        " | ...................^"
    )
    assert "compilation failed: ERROR: <input>:1:20: Syntax error:" in causes[1]["message"]
    assert status["message"].startswith(
        'CustomResourceDefinition.apiextensions.k8s.io "gadgets.tests.hpactl.dev" is invalid: ['
    )
    assert emulator.registry.get("tests.hpactl.dev", "v1", "gadgets") is None


async def test_crd_rule_reason_and_field_path_are_checked(emulator: Emulator) -> None:
    schema = gadget_schema()
    schema["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "true", "reason": "FieldValueBogus"},
        {"rule": "true", "fieldPath": ".nope"},
        {"rule": "true", "fieldPath": ".tags[0]"},
        {"rule": "self.nope"},  # not compiled: this level already has errors
        {"rule": "true", "fieldPath": ".labels['any.key']"},
    ]
    code, status = await _create_crd(emulator, schema)
    assert code == 422
    at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    assert [(c["field"], c["message"]) for c in status["details"]["causes"]] == [
        (
            f"{at}[0].reason",
            'Unsupported value: "FieldValueBogus": supported values: "FieldValueDuplicate", '
            '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
        ),
        (
            f"{at}[1].fieldPath",
            'Invalid value: ".nope": fieldPath must be a valid path: does not refer to a '
            "valid field",
        ),
        (
            f"{at}[2].fieldPath",
            'Invalid value: ".tags[0]": fieldPath must be a valid path: expected single '
            "quoted string but got 0",
        ),
    ]


# ---- status subresource ------------------------------------------------------------------------


async def test_status_subresource(http: Http) -> None:
    code, obj = await http.post(GADGETS, gadget(VALID, status={"replicas": 3}))
    assert code == 201 and "status" not in obj  # create cannot set status
    # the main resource ignores status changes
    code, obj = await http.put(GADGETS + "/g", {**obj, "status": {"replicas": -5, "phase": "Nope"}})
    assert code == 200 and "status" not in obj
    # status writes are validated against the schema's status
    code, status = await http.patch(
        GADGETS + "/g/status", {"status": {"replicas": -1, "phase": "Bad"}}, MERGE
    )
    assert code == 422
    assert status["message"] == PREFIX + (
        "[status.replicas: Invalid value: -1: status.replicas in body should be greater than or "
        'equal to 0, status.phase: Unsupported value: "Bad": supported values: "Ready", '
        f'"Pending", {NOT_CHECKED}]'
    )
    code, obj = await http.patch(
        GADGETS + "/g/status", {"status": {"replicas": 2, "phase": "Ready", "junk": 1}}, MERGE
    )
    assert code == 200 and obj["status"] == {"replicas": 2, "phase": "Ready"}  # pruned
    assert obj["metadata"]["generation"] == 1


async def test_ratcheting_keeps_unchanged_invalid_values_writable(
    http: Http, emulator: Emulator
) -> None:
    """CRDValidationRatcheting: an object stored before the schema tightened (planted
    here without validation) can still be written where its invalid values are unchanged."""
    spec = {"maxReplicas": 0, "target": "500m", "mode": "Medium", "tags": ["a", "a"]}
    emulator.store.create(gadget(spec) | {"metadata": {"name": "g", "namespace": "default"}})
    # the controller's status write: spec unchanged, only the status is validated
    code, obj = await http.patch(GADGETS + "/g/status", {"status": {"replicas": 1}}, MERGE)
    assert code == 200 and obj["status"] == {"replicas": 1}, obj
    # a spec change elsewhere: unchanged fields ratchet, but spec's own rule (spec
    # changed) and the changed field are checked
    code, status = await http.patch(GADGETS + "/g", {"spec": {"ratio": 2}}, MERGE)
    assert code == 422
    assert status["message"] == PREFIX + (
        "[spec.ratio: Invalid value: 2: spec.ratio in body should be less than 1, spec: "
        'Invalid value: "object": minReplicas must be less than or equal to maxReplicas]'
    )
    code, status = await http.patch(GADGETS + "/g", {"spec": {"maxReplicas": -1}}, MERGE)
    assert code == 422
    assert status["message"].startswith(
        PREFIX + "[spec.maxReplicas: Invalid value: -1: spec.maxReplicas in body should be "
        "greater than or equal to 1, "
    )
    code, obj = await http.patch(GADGETS + "/g", {"spec": {"maxReplicas": 5}}, MERGE)
    assert code == 200 and obj["spec"]["mode"] == "Medium"


async def test_invalid_status_body_lists_causes(http: Http) -> None:
    code, status = await http.post(GADGETS, gadget({**VALID, "maxReplicas": 0, "mode": "X"}))
    assert code == 422
    assert status["details"] == {
        "name": "g",
        "group": "tests.hpactl.dev",
        "kind": "Gadget",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 0: spec.maxReplicas in body should be greater than "
                "or equal to 1",
                "field": "spec.maxReplicas",
            },
            {
                "reason": "FieldValueNotSupported",
                "message": 'Unsupported value: "X": supported values: "Fast", "Slow"',
                "field": "spec.mode",
            },
            {
                "reason": "FieldValueInvalid",
                "message": 'Invalid value: "null": some validation rules were not checked '
                "because the object was invalid; correct the existing errors to complete "
                "validation",
                "field": "<nil>",
            },
        ],
    }


# ---- kubectl ---------------------------------------------------------------------------------


INVALID_MANIFEST = """\
apiVersion: tests.hpactl.dev/v1
kind: Gadget
metadata:
  name: g
spec:
  maxReplicas: 101
  target: 500m
"""


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")
async def test_kubectl_apply_shows_the_api_servers_message(
    emulator: Emulator, kubeconfig: Path, tmp_path: Path
) -> None:
    emulator.store.create(gadget_crd())
    manifest = tmp_path / "gadget.yaml"
    manifest.write_text(INVALID_MANIFEST)
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        "--kubeconfig",
        str(kubeconfig),
        f"--cache-dir={tmp_path / '.kube-cache'}",
        "apply",
        "-f",
        str(manifest),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode != 0, out
    assert err.decode().strip() == (
        'The Gadget "g" is invalid: spec.maxReplicas: Invalid value: 101: spec.maxReplicas in '
        "body should be less than or equal to 100"
    )
    assert emulator.store.get("tests.hpactl.dev", "gadgets", "default", "g") is None


# ---- the schema module on its own ---------------------------------------------------------------


def test_formats_metadata_name_and_no_rule_note_without_rules() -> None:
    s: Obj = {
        "type": "object",
        "properties": {
            "metadata": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": 5}},
            },
            "status": {
                "type": "object",
                "properties": {"t": {"type": "string", "format": "date-time"}},
            },
        },
    }
    for ok in ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.5+01:00", "2026-01-01T00:00:00"):
        assert schema.validate({"metadata": {"name": "a"}, "status": {"t": ok}}, s) == []
    # labels are not the schema's business; only name and generateName are checked
    assert schema.validate({"metadata": {"name": "abcdefg", "labels": {"a": "b"}}}, s) == [
        ("metadata.name", "FieldValueTooLong", "Too long: may not be more than 5 bytes")
    ]
    # a type error and no CEL rule anywhere: no "rules were not checked" note
    assert schema.validate({"status": {"t": "yesterday"}}, s) == [
        (
            "status.t",
            "FieldValueTypeInvalid",
            'Invalid value: "yesterday": status.t in body must be of type date-time: "yesterday"',
        )
    ]
