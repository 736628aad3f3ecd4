"""Structural schema handling of custom resources, as apiextensions-apiserver does it.

A CRD version's `openAPIV3Schema` drives three steps on every write of a custom
resource: pruning of fields the schema does not declare (unless
`x-kubernetes-preserve-unknown-fields`), defaulting (`default`, also on read from
storage, and dropping non-nullable nulls without default), then validation with
kube-openapi's messages converted to field errors (`spec.x: Invalid value: 0: spec.x
in body should be greater than or equal to 1`) followed by the CEL rules of
`x-kubernetes-validations` (hpactl.emulator.cel).
"""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

from hpactl.emulator import cel

Obj = dict[str, Any]
Cause = tuple[str, str, str]  # field, reason, message
Schema = dict[str, Any]

_ROOT_KEEP = ("apiVersion", "kind", "metadata")


# ---- printing values as Go's field.Error and fmt do -------------------------------------------


def go_number(v: float | int) -> str:
    """fmt %v of a float64 (or an int64)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v.is_integer() and abs(v) < 1e21:
        return str(int(v))
    text = repr(v)
    if "e" in text:
        mant, exp = text.split("e")
        sign = "-" if exp.startswith("-") else "+"
        digits = exp.lstrip("+-").rjust(2, "0")
        return f"{mant}e{sign}{digits}"
    return text


def _go_quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _go_value(v: Any) -> str:
    """How field.Error prints a bad value (%v for scalars, %q for strings, %#v else)."""
    if v is None:
        return '"null"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return go_number(v)
    if isinstance(v, str):
        return _go_quote(v)
    return _go_sharp(v)


def _go_sharp(v: Any) -> str:
    """fmt %#v of an unstructured value."""
    if v is None:
        return "interface {}(nil)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_number(v)
    if isinstance(v, str):
        return _go_quote(v)
    if isinstance(v, list):
        return "[]interface {}{" + ", ".join(_go_sharp(x) for x in v) + "}"
    if isinstance(v, dict):
        inner = ", ".join(f"{_go_quote(k)}:{_go_sharp(v[k])}" for k in sorted(v))
        return "map[string]interface {}{" + inner + "}"
    return str(v)


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return (path, "FieldValueInvalid", f"Invalid value: {_go_value(value)}: {detail}")


def _type_invalid(path: str, value: Any, detail: str) -> Cause:
    return (path, "FieldValueTypeInvalid", f"Invalid value: {_go_value(value)}: {detail}")


def _required(path: str, detail: str = "") -> Cause:
    return (path, "FieldValueRequired", f"Required value: {detail}" if detail else "Required value")


def _forbidden(path: str, detail: str) -> Cause:
    return (path, "FieldValueForbidden", f"Forbidden: {detail}" if detail else "Forbidden")


def _duplicate(path: str, value: Any) -> Cause:
    return (path, "FieldValueDuplicate", f"Duplicate value: {_go_value(value)}")


def _not_supported(path: str, value: Any, supported: list[Any]) -> Cause:
    shown = [s if isinstance(s, str) else json.dumps(s) for s in supported]
    quoted = ", ".join(_go_quote(s) for s in shown)
    return (
        path,
        "FieldValueNotSupported",
        f"Unsupported value: {_go_value(value)}: supported values: {quoted}",
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ---- schema helpers -----------------------------------------------------------------------


def _props(s: Schema) -> dict[str, Schema]:
    p = s.get("properties")
    return p if isinstance(p, dict) else {}


def _additional(s: Schema) -> Schema | None:
    a = s.get("additionalProperties")
    return a if isinstance(a, dict) else None


def _items(s: Schema) -> Schema | None:
    i = s.get("items")
    return i if isinstance(i, dict) else None


def has_defaults(s: Any) -> bool:
    """Whether any node of the schema has a `default` (read-side defaulting is needed)."""
    if not isinstance(s, dict):
        return False
    if "default" in s:
        return True
    children = list(_props(s).values())
    for sub in (_additional(s), _items(s)):
        if sub is not None:
            children.append(sub)
    return any(has_defaults(c) for c in children)


_DEFAULTS_BY_KEY: dict[str, bool] = {}


def defaults_on_read(key: str, s: Any) -> bool:
    """has_defaults, memoized by the schema's digest (asked on every read)."""
    if not key:
        return False
    found = _DEFAULTS_BY_KEY.get(key)
    if found is None:
        if len(_DEFAULTS_BY_KEY) > 1024:
            _DEFAULTS_BY_KEY.clear()
        found = _DEFAULTS_BY_KEY[key] = has_defaults(s)
    return found


# ---- pruning ------------------------------------------------------------------------------


def prune(obj: Any, s: Schema, *, root: bool = True) -> list[str]:
    """Drop fields the schema does not specify, in place; return their paths."""
    found: list[str] = []
    _prune(obj, s, "", found, root)
    return found


def _prune(value: Any, s: Schema, path: str, found: list[str], root: bool) -> None:
    if isinstance(value, dict):
        props = _props(s)
        extra = _additional(s)
        preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
        embedded = bool(s.get("x-kubernetes-embedded-resource"))
        for key in list(value):
            sub = _join(path, key)
            if (root or embedded) and key in _ROOT_KEEP:
                if key in props and key != "metadata":
                    _prune(value[key], props[key], sub, found, False)
                continue
            if key in props:
                _prune(value[key], props[key], sub, found, False)
            elif extra is not None:
                _prune(value[key], extra, sub, found, False)
            elif not preserve:
                found.append(sub)
                del value[key]
    elif isinstance(value, list):
        items = _items(s)
        if items is not None:
            for i, item in enumerate(value):
                _prune(item, items, f"{path}[{i}]", found, False)


# ---- defaulting ---------------------------------------------------------------------------


def apply_defaults(obj: Any, s: Schema) -> None:
    """Structural defaulting in place: absent fields (and non-nullable nulls) with a
    `default` get it, other non-nullable nulls of object fields are dropped."""
    if isinstance(obj, dict):
        props = _props(s)
        for key, ps in props.items():
            present = key in obj
            if present and obj[key] is None and not ps.get("nullable"):
                if "default" in ps and ps["default"] is not None:
                    obj[key] = copy.deepcopy(ps["default"])
                else:
                    del obj[key]
                    continue
            elif not present and "default" in ps:
                obj[key] = copy.deepcopy(ps["default"])
            if key in obj:
                apply_defaults(obj[key], ps)
        extra = _additional(s)
        if extra is not None:
            for key in list(obj):
                if key in props:
                    continue
                if obj[key] is None and not extra.get("nullable"):
                    if "default" in extra and extra["default"] is not None:
                        obj[key] = copy.deepcopy(extra["default"])
                    else:
                        del obj[key]
                        continue
                apply_defaults(obj[key], extra)
    elif isinstance(obj, list):
        items = _items(s)
        if items is not None:
            for i, item in enumerate(obj):
                if item is None and not items.get("nullable") and "default" in items:
                    obj[i] = copy.deepcopy(items["default"])
                apply_defaults(obj[i], items)


# ---- validation (kube-openapi) --------------------------------------------------------------


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


# strfmt.ParseDateTime's layouts: RFC 3339 with optional fraction, the zone optional
# (ISO 8601 local time) or written without a colon.
_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_FORMATS: dict[str, re.Pattern[str]] = {
    "date-time": _DATE_TIME,
    "datetime": _DATE_TIME,
    "date": re.compile(r"^\d{4}-\d{2}-\d{2}$"),
    "uuid": re.compile(r"^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$"),
}


def _go_regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _type_ok(v: Any, s: Schema) -> tuple[bool, str]:
    """(ok, detected type) for the node's `type` (int-or-string and nullable included)."""
    t = s.get("type")
    detected = _json_type(v)
    if v is None:
        return (not t or bool(s.get("nullable")), detected)
    if s.get("x-kubernetes-int-or-string"):
        if s.get("anyOf") or s.get("allOf"):
            return True, detected  # the anyOf/allOf branches carry the types
        if detected == "number" and isinstance(v, float) and v.is_integer():
            return True, detected
        return detected in ("integer", "string"), detected
    if not t:
        return True, detected
    if t == detected:
        return True, detected
    if t == "number" and detected == "integer":
        return True, detected
    if t == "integer" and isinstance(v, float) and v.is_integer():
        return True, detected
    return False, detected


def _validate(v: Any, s: Schema, path: str, out: list[Cause], root: bool = False) -> None:
    name = path or "."
    ok, detected = _type_ok(v, s)
    if not ok:
        want = s.get("type") or "integer,string"
        out.append(
            _type_invalid(
                path, detected, f"{name} in body must be of type {want}: {_go_quote(detected)}"
            )
        )
        return
    if v is None:
        return
    _value_validations(v, s, path, out)
    if isinstance(v, str):
        fmt = s.get("format")
        rx = _FORMATS.get(str(fmt)) if fmt else None
        if rx is not None and not rx.match(v):
            out.append(
                _type_invalid(path, v, f"{name} in body must be of type {fmt}: {_go_quote(v)}")
            )
    if isinstance(v, list):
        items = _items(s)
        if items is not None:
            for i, item in enumerate(v):
                _validate(item, items, f"{path}[{i}]", out)
    elif isinstance(v, dict):
        props = _props(s)
        extra = _additional(s)
        for key, child in v.items():
            if root and key == "metadata":
                # The schema may constrain only metadata.name and generateName.
                if key in props and isinstance(child, dict):
                    named = {k: child[k] for k in ("name", "generateName") if k in child}
                    _validate(named, props[key], "metadata", out)
                continue
            if key in props:
                _validate(child, props[key], _join(path, key), out)
            elif extra is not None:
                _validate(child, extra, _join(path, key), out)


def _value_validations(v: Any, s: Schema, path: str, out: list[Cause]) -> None:
    """The keywords allowed anywhere, also inside allOf/anyOf/oneOf/not."""
    name = path or "."
    for sub in s.get("allOf") or []:
        _value_validations(v, sub, path, out)
    # Composite failures are not kube-openapi Validation errors: the API server reports
    # them at the root field path (printed <nil>) with an empty value.
    if s.get("anyOf"):
        results: list[list[Cause]] = [_branch(v, b, path) for b in s["anyOf"]]
        if all(results):
            out.append(
                _invalid(
                    "<nil>", "", f"{_go_quote(name)} must validate at least one schema (anyOf)"
                )
            )
            out.extend(_fewest(results))
    if s.get("oneOf"):
        results = [_branch(v, b, path) for b in s["oneOf"]]
        passed = sum(1 for r in results if not r)
        if passed != 1:
            found = "Found none valid" if passed == 0 else f"Found {passed} valid alternatives"
            msg = f"{_go_quote(name)} must validate one and only one schema (oneOf). {found}"
            out.append(_invalid("<nil>", "", msg))
            if passed == 0:
                out.extend(_fewest(results))
    if isinstance(s.get("not"), dict) and not _branch(v, s["not"], path):
        out.append(_invalid("<nil>", "", f"{_go_quote(name)} must not validate the schema (not)"))
    if isinstance(v, str):
        if "maxLength" in s and len(v) > s["maxLength"]:
            n = int(s["maxLength"])
            unit = "byte" if n == 1 else "bytes"
            out.append((path, "FieldValueTooLong", f"Too long: may not be more than {n} {unit}"))
        if "minLength" in s and len(v) < s["minLength"]:
            out.append(
                _invalid(path, v, f"{name} in body should be at least {s['minLength']} chars long")
            )
        pat = s.get("pattern")
        if pat:
            rx = _go_regex(str(pat))
            if rx is not None and not rx.search(v):
                out.append(_invalid(path, v, f"{name} in body should match '{pat}'"))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if "maximum" in s:
            mx = s["maximum"]
            exc = bool(s.get("exclusiveMaximum"))
            if v > mx or (exc and v == mx):
                word = "less than" if exc else "less than or equal to"
                out.append(_invalid(path, v, f"{name} in body should be {word} {go_number(mx)}"))
        if "minimum" in s:
            mn = s["minimum"]
            exc = bool(s.get("exclusiveMinimum"))
            if v < mn or (exc and v == mn):
                word = "greater than" if exc else "greater than or equal to"
                out.append(_invalid(path, v, f"{name} in body should be {word} {go_number(mn)}"))
        mult = s.get("multipleOf")
        if mult and (v / mult) != int(v / mult):
            out.append(
                _invalid(path, v, f"{name} in body should be a multiple of {go_number(mult)}")
            )
    if isinstance(v, list):
        if "maxItems" in s and len(v) > s["maxItems"]:
            n = int(s["maxItems"])
            unit = "item" if n == 1 else "items"
            out.append(
                (path, "FieldValueTooMany", f"Too many: {len(v)}: must have at most {n} {unit}")
            )
        if "minItems" in s and len(v) < s["minItems"]:
            out.append(
                _invalid(path, len(v), f"{name} in body should have at least {s['minItems']} items")
            )
        if s.get("uniqueItems") and any(
            v[i] == v[j] for i in range(len(v)) for j in range(i + 1, len(v))
        ):
            out.append(_invalid(path, "", f"{name} in body shouldn't contain duplicates"))
    if isinstance(v, dict):
        for req in s.get("required") or []:
            if req not in v:
                out.append(_required(_join(path, str(req))))
        if "maxProperties" in s and len(v) > s["maxProperties"]:
            n = int(s["maxProperties"])
            out.append(
                (path, "FieldValueTooMany", f"Too many: {len(v)}: must have at most {n} items")
            )
        if "minProperties" in s and len(v) < s["minProperties"]:
            out.append(
                _invalid(
                    path,
                    len(v),
                    f"{name} in body should have at least {s['minProperties']} properties",
                )
            )
    if "enum" in s and not any(cel.values_equal(v, e) for e in s["enum"]):
        out.append(_not_supported(path, v, list(s["enum"])))
    # Value validations nested under properties/items inside allOf/anyOf/oneOf/not.
    if isinstance(v, dict) and "type" not in s:
        for key, ps in _props(s).items():
            if key in v and v[key] is not None:
                _value_validations(v[key], ps, _join(path, key), out)
    if isinstance(v, list) and "type" not in s and _items(s) is not None:
        for i, item in enumerate(v):
            _value_validations(item, _items(s) or {}, f"{path}[{i}]", out)


def _fewest(results: list[list[Cause]]) -> list[Cause]:
    """kube-openapi keeps the failing branch with the fewest errors."""
    return sorted(results, key=len)[0]


def _branch(v: Any, s: Schema, path: str) -> list[Cause]:
    out: list[Cause] = []
    if s.get("type"):
        ok, detected = _type_ok(v, s)
        if not ok:
            name = path or "."
            return [
                _type_invalid(
                    path,
                    detected,
                    f"{name} in body must be of type {s['type']}: {_go_quote(detected)}",
                )
            ]
    if v is not None:
        _value_validations(v, s, path, out)
    return out


def _list_types(v: Any, s: Schema, path: str, out: list[Cause]) -> None:
    """ValidateListSetsAndMaps: duplicates in `set` and `map` lists, after the schema."""
    if isinstance(v, dict):
        props = _props(s)
        extra = _additional(s)
        for key, child in v.items():
            cs = props.get(key, extra)
            if isinstance(cs, dict):
                _list_types(child, cs, _join(path, key), out)
    elif isinstance(v, list):
        out.extend(_list_type_causes(v, s, path))
        items = _items(s)
        if items is not None:
            for i, item in enumerate(v):
                _list_types(item, items, f"{path}[{i}]", out)


def _list_type_causes(v: list[Any], s: Schema, path: str) -> list[Cause]:
    lt = s.get("x-kubernetes-list-type")
    out: list[Cause] = []
    if lt == "set":
        for i, item in enumerate(v):
            if any(cel.values_equal(item, prev) for prev in v[:i]):
                out.append(_duplicate(f"{path}[{i}]", item))
    elif lt == "map":
        keys = [str(k) for k in s.get("x-kubernetes-list-map-keys") or []]
        seen: list[dict[str, Any]] = []
        for i, item in enumerate(v):
            if not isinstance(item, dict):
                continue
            key = {k: item.get(k) for k in keys if k in item}
            if key in seen:
                out.append(_duplicate(f"{path}[{i}]", key))
            seen.append(key)
    return out


# ---- CEL rules -------------------------------------------------------------------------------


def _cel_type(s: Schema) -> str:
    if s.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(s.get("type") or "object")


def _to_cel(v: Any, s: Schema | None) -> Any:
    """JSON value as CEL sees it: `number` fields are doubles."""
    if s is None:
        return v
    if isinstance(v, dict):
        props = _props(s)
        extra = _additional(s)
        return {k: _to_cel(x, props.get(k, extra)) for k, x in v.items()}
    if isinstance(v, list):
        return [_to_cel(x, _items(s)) for x in v]
    if s.get("type") == "number" and isinstance(v, int) and not isinstance(v, bool):
        return float(v)
    return v


def _lookup(parent: Any, name: str) -> Any:
    """Schema of a child for compile-time checks: None if undeclared, ... if unknown."""
    if not isinstance(parent, dict):
        return ...
    if name == "[]":
        child = _items(parent) or _additional(parent)
        return child if child is not None else ...
    props = _props(parent)
    if name in props:
        return props[name]
    extra = _additional(parent)
    if extra is not None:
        return extra
    if parent.get("x-kubernetes-preserve-unknown-fields") or parent.get(
        "x-kubernetes-int-or-string"
    ):
        return ...
    if parent.get("type") == "object" and props:
        return None
    return ...


def _root_view(s: Schema) -> Schema:
    """The root as CEL sees it: apiVersion, kind and metadata (name, generateName)."""
    view = dict(s)
    props = dict(_props(s))
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}},
    }
    view["properties"] = props
    return view


def _rule_string(rule: Obj) -> str:
    msg = str(rule.get("message") or "").strip()
    return msg or str(rule.get("rule") or "").strip()


def _compile(rule: Obj, s: Schema) -> cel.Program:
    return cel.compile_rule(str(rule.get("rule") or ""), ("self", "oldSelf"), s, _lookup)


def _rule_causes(
    v: Any, old: Any, s: Schema, path: str, root: bool, ratchet: bool = False
) -> list[Cause]:
    rules = s.get("x-kubernetes-validations") or []
    if not rules or v is None:
        return []
    view = _root_view(s) if root else s
    out: list[Cause] = []
    at = path if path else "<nil>"
    typ = _cel_type(s)
    env: dict[str, Any] = {"self": _to_cel(v, view)}
    if old is not None:
        env["oldSelf"] = _to_cel(old, view)
    for rule in rules:
        if not isinstance(rule, dict) or not rule.get("rule"):
            continue
        try:
            program = cel.compile_cached(str(rule["rule"]))
        except cel.CelCompileError as exc:
            out.append(_invalid(at, typ, f"rule compile error: compilation failed: {exc}"))
            continue
        if program.uses_old_self and old is None:
            continue  # transition rules run only on updates with an old value
        try:
            result = program.evaluate(env)
        except cel.CelEvalError as exc:
            text = str(exc)
            if text.startswith("no such overload"):
                detail = (
                    f"'{text}': call arguments did not match a supported operator, function "
                    f"or macro signature for rule: {_rule_string(rule)}"
                )
            else:
                detail = f"{text} evaluating rule: {_rule_string(rule)}"
            out.append(_invalid(at, typ, detail))
            continue
        if result is True:
            continue
        if ratchet and not program.uses_old_self:
            continue  # ratcheting: the value is unchanged (a warning upstream)
        err_path = at
        fp = str(rule.get("fieldPath") or "")
        if fp:
            err_path = (path + fp) if path else fp.lstrip(".")
        detail = ""
        expr = rule.get("messageExpression")
        if expr:
            try:
                msg = cel.compile_cached(str(expr), "string").evaluate(env)
                if isinstance(msg, str) and msg.strip() and "\n" not in msg.strip():
                    detail = msg.strip()
            except (cel.CelCompileError, cel.CelEvalError):
                detail = ""
        if not detail:
            msg = str(rule.get("message") or "").strip()
            detail = msg or f"failed rule: {_rule_string(rule)}"
        reason = rule.get("reason")
        if reason == "FieldValueForbidden":
            out.append(_forbidden(err_path, detail))
        elif reason == "FieldValueRequired":
            out.append(_required(err_path, detail))
        elif reason == "FieldValueDuplicate":
            out.append(_duplicate(err_path, typ))
        else:
            out.append(_invalid(err_path, typ, detail))
    return out


def _cel_walk(
    v: Any,
    old: Any,
    s: Schema,
    path: str,
    out: list[Cause],
    root: bool,
    correlated: bool = True,
    parent_equal: bool = False,
) -> None:
    """Run the rules of every node; `old` is the correlated old value (oldSelf).
    Ratcheting: a failed rule without oldSelf is dropped when the node is unchanged
    (or, for items that do not correlate, when the nearest correlated ancestor is)."""
    equal = (old is not None and v == old) if correlated else parent_equal
    out.extend(_rule_causes(v, old, s, path, root, equal))
    if isinstance(v, dict):
        props = _props(s)
        extra = _additional(s)
        correlate = s.get("x-kubernetes-map-type") != "atomic"
        old_map = old if isinstance(old, dict) and correlate else {}
        for key, child in v.items():
            cs = props.get(key, extra)
            if cs is None or (root and key == "metadata"):
                continue
            sub = _join(path, key)
            _cel_walk(child, old_map.get(key), cs, sub, out, False, correlated, equal)
    elif isinstance(v, list):
        items = _items(s)
        if items is None:
            return
        keys = [str(k) for k in s.get("x-kubernetes-list-map-keys") or []]
        is_map = s.get("x-kubernetes-list-type") == "map"
        by_key: dict[str, Any] = {}
        if is_map and isinstance(old, list):
            for o in old:
                if isinstance(o, dict):
                    by_key[json.dumps([o.get(k) for k in keys])] = o
        for i, item in enumerate(v):
            prev = None
            if by_key and isinstance(item, dict):
                prev = by_key.get(json.dumps([item.get(k) for k in keys]))
            _cel_walk(item, prev, items, f"{path}[{i}]", out, False, correlated and is_map, equal)


_MISSING = object()
_QUOTED_PATH = re.compile(r'^Invalid value: "": "((?:[^"\\]|\\.)*)" must ')


def _segments(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path.split("."):
        m = re.match(r"^([^\[]*)((?:\[\d+\])*)$", part)
        if not m:
            out.append(part)
            continue
        if m.group(1):
            out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return out


def _ratcheted(cause: Cause, new: Obj, old: Obj, s: Schema) -> bool:
    """CRDValidationRatcheting for a schema error: dropped when the node that raised it,
    or a correlated ancestor, is unchanged from the old object."""
    path, reason, message = cause
    if path == "<nil>":
        m = _QUOTED_PATH.match(message)
        if not m:
            return False
        path = m.group(1)
    segs = _segments(path) if path not in ("", ".") else []
    if reason == "FieldValueRequired":
        segs = segs[:-1]  # raised by the object missing the field
    cur_new: Any = new
    cur_old: Any = old
    node: Schema | None = s
    if cur_new == cur_old:
        return True
    for seg in segs:
        if isinstance(seg, int):
            if not isinstance(cur_new, list) or seg >= len(cur_new) or node is None:
                return False
            item = cur_new[seg]
            prev: Any = _MISSING
            if node.get("x-kubernetes-list-type") == "map" and isinstance(cur_old, list):
                keys = [str(k) for k in node.get("x-kubernetes-list-map-keys") or []]
                for o in cur_old:
                    same_key = isinstance(o, dict) and isinstance(item, dict)
                    if same_key and all(o.get(k) == item.get(k) for k in keys):
                        prev = o
                        break
            if prev is _MISSING:
                return False  # items of other lists do not correlate
            cur_new, cur_old, node = item, prev, _items(node)
        else:
            if not isinstance(cur_new, dict) or not isinstance(cur_old, dict):
                return False
            if seg not in cur_new or seg not in cur_old:
                return False
            cur_new, cur_old = cur_new[seg], cur_old[seg]
            node = (_props(node).get(seg) or _additional(node)) if node is not None else None
        if cur_new == cur_old:
            return True
    return False


# ---- entry points ------------------------------------------------------------------------------


def validate(obj: Obj, s: Schema, old: Obj | None = None) -> list[Cause]:
    """Schema errors, then CEL rule errors, of a whole custom resource; on updates
    (`old`) with CRDValidationRatcheting's exemptions for unchanged values."""
    out: list[Cause] = []
    _validate(obj, s, "", out, root=True)
    if old is not None:
        out = [c for c in out if not _ratcheted(c, obj, old, s)]
    old_list_errors: list[Cause] = []
    if old is not None:
        _list_types(old, s, "", old_list_errors)
    if not old_list_errors:  # duplicates already stored are ratcheted as a whole
        _list_types(obj, s, "", out)
    if not _has_rules(s):
        return out
    if any(reason in _BLOCKING for _, reason, _ in out):
        # hasBlockingErr: CEL rules are not run on an object of the wrong shape.
        out.append(("<nil>", "FieldValueInvalid", f'Invalid value: "null": {_NOT_CHECKED}'))
    else:
        _cel_walk(obj, old, s, "", out, True)
    return out


def _has_rules(s: Any) -> bool:
    """Whether any node has x-kubernetes-validations (the API server has a CEL validator)."""
    if not isinstance(s, dict):
        return False
    if s.get("x-kubernetes-validations"):
        return True
    children = list(_props(s).values()) + [c for c in (_additional(s), _items(s)) if c]
    return any(_has_rules(c) for c in children)


_BLOCKING = frozenset(
    {
        "FieldValueNotSupported",
        "FieldValueRequired",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    }
)
_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def _schema_path(prefix: str, s: Schema, out: list[tuple[str, Schema, bool]], root: bool) -> None:
    out.append((prefix, s, root))
    for key, ps in _props(s).items():
        if isinstance(ps, dict):
            _schema_path(f"{prefix}.properties[{key}]", ps, out, False)
    extra = _additional(s)
    if extra is not None:
        _schema_path(f"{prefix}.additionalProperties", extra, out, False)
    items = _items(s)
    if items is not None:
        _schema_path(f"{prefix}.items", items, out, False)


def _go_rule(rule: Obj) -> str:
    """%#v of an apiextensions.ValidationRule, as the CRD error prints it."""
    reason = rule.get("reason")
    optional = rule.get("optionalOldSelf")
    return (
        "apiextensions.ValidationRule{"
        f"Rule:{_go_quote(str(rule.get('rule') or ''))}, "
        f"Message:{_go_quote(str(rule.get('message') or ''))}, "
        f"MessageExpression:{_go_quote(str(rule.get('messageExpression') or ''))}, "
        "Reason:(*apiextensions.FieldValueErrorReason)"
        + ("(0xc000010000)" if reason else "(nil)")
        + f", FieldPath:{_go_quote(str(rule.get('fieldPath') or ''))}, "
        "OptionalOldSelf:(*bool)" + ("(0xc000010001)" if optional is not None else "(nil)") + "}"
    )


def _rule_invalid(path: str, rule: Obj, detail: str) -> Cause:
    return (path, "FieldValueInvalid", f"Invalid value: {_go_rule(rule)}: {detail}")


_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]


def _rule_shape_causes(rules: list[Obj], node: Schema, path: str) -> list[Cause]:
    """The checks of a rule's own fields: rule present, reason known, fieldPath valid."""
    out: list[Cause] = []
    for i, rule in enumerate(rules):
        rpath = f"{path}.x-kubernetes-validations[{i}]"
        if not str(rule.get("rule") or "").strip():
            out.append(_required(f"{rpath}.rule"))
        reason = rule.get("reason")
        if reason is not None and reason not in _REASONS:
            out.append(_not_supported(f"{rpath}.reason", reason, _REASONS))
        fp = rule.get("fieldPath")
        if fp is None or fp == "":
            continue
        fp = str(fp)
        if not fp.strip():
            out.append(
                _invalid(f"{rpath}.fieldPath", fp, "fieldPath must be non-empty if specified")
            )
        if "\n" in fp or "\r" in fp:
            out.append(_invalid(f"{rpath}.fieldPath", fp, "fieldPath must not contain line breaks"))
        problem = valid_field_path(fp, node)
        if problem:
            out.append(
                _invalid(f"{rpath}.fieldPath", fp, f"fieldPath must be a valid path: {problem}")
            )
    return out


def valid_field_path(path: str, s: Schema) -> str:
    """cel.ValidFieldPath: '' when `.a.b` / `['k']` steps name fields of the schema,
    else the reason it does not."""
    tokens = re.findall(r"'(?:[^'\\]|\\.)*'|[.\[\]]|[^.\[\]]+", path)
    i = 0
    node: Schema = s
    while i < len(tokens):
        tok = tokens[i]
        if tok == "[":
            if i + 1 >= len(tokens):
                return "unexpected end of JSON path"
            key = tokens[i + 1]
            if len(key) < 2 or key[0] != "'" or key[-1] != "'":
                return f"expected single quoted string but got {key}"
            name = key[1:-1].replace("\\'", "'").replace("\\\\", "\\")
            if i + 2 >= len(tokens):
                return "unexpected end of JSON path"
            if tokens[i + 2] != "]":
                return f"expected ] but got {tokens[i + 2]}"
            i += 3
        elif tok == ".":
            if i + 1 >= len(tokens):
                return "unexpected end of JSON path"
            name = tokens[i + 1]
            i += 2
        else:
            return f"expected [ or . but got: {tok}"
        props = _props(node)
        if props:
            if name not in props:
                return "does not refer to a valid field"
            node = props[name]
        elif _additional(node) is not None:
            node = _additional(node) or {}
        else:
            return "does not refer to a valid field"
    return ""


def crd_rule_causes(crd: Obj) -> list[Cause]:
    """Compile every CEL rule of a CRD: the errors the API server gives on create/update."""
    spec = crd.get("spec") or {}
    versions = [v for v in spec.get("versions") or [] if isinstance(v, dict)]
    schemas = [((v.get("schema") or {}).get("openAPIV3Schema")) for v in versions]
    out: list[Cause] = []
    # The internal API keeps one top-level schema when all versions share it.
    if schemas and all(s == schemas[0] for s in schemas) and isinstance(schemas[0], dict):
        targets = [("spec.validation.openAPIV3Schema", schemas[0])]
    else:
        targets = [
            (f"spec.versions[{i}].schema.openAPIV3Schema", s)
            for i, s in enumerate(schemas)
            if isinstance(s, dict)
        ]
    for prefix, top in targets:
        nodes: list[tuple[str, Schema, bool]] = []
        _schema_path(prefix, top, nodes, True)
        for path, node, root in nodes:
            view = _root_view(node) if root else node
            rules = [r for r in node.get("x-kubernetes-validations") or [] if isinstance(r, dict)]
            shape = _rule_shape_causes(rules, node, path)
            out.extend(shape)
            if shape:
                continue  # schema errors at a level skip its CEL compilation, as upstream
            for i, rule in enumerate(rules):
                rpath = f"{path}.x-kubernetes-validations[{i}]"
                if not str(rule.get("rule") or "").strip():
                    continue
                try:
                    _compile(rule, view)
                except cel.CelResultTypeError as exc:
                    out.append(_rule_invalid(f"{rpath}.rule", rule, str(exc)))
                except cel.CelCompileError as exc:
                    out.append(_rule_invalid(f"{rpath}.rule", rule, f"compilation failed: {exc}"))
                expr = rule.get("messageExpression")
                if expr:
                    try:
                        cel.compile_rule(str(expr), ("self", "oldSelf"), view, _lookup, "string")
                    except cel.CelResultTypeError as exc:
                        out.append(_rule_invalid(f"{rpath}.messageExpression", rule, str(exc)))
                    except cel.CelCompileError as exc:
                        detail = f"messageExpression compilation failed: {exc}"
                        out.append(_rule_invalid(f"{rpath}.messageExpression", rule, detail))
    return out


def version_schema(crd: Obj, version: str) -> Schema | None:
    """The openAPIV3Schema of one version of a CRD."""
    for v in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(v, dict) and v.get("name") == version:
            s = (v.get("schema") or {}).get("openAPIV3Schema")
            return s if isinstance(s, dict) else None
    return None
