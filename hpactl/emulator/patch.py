"""JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch.

Strategic merge patch uses the merge keys of the Go types the emulator serves
(`patchMergeKey` / `patchStrategy:"merge"` struct tags), looked up by field name:
the served types never give one field name two different strategies.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from hpactl.emulator import errors

# field name -> merge key, for lists of objects merged by key.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "ownerReferences": "uid",
    "podIPs": "ip",
    "hostIPs": "ip",
    "resourceClaims": "name",
    "schedulingGates": "name",
}
# Lists of scalars merged as sets (patchStrategy:"merge" on a []string).
MERGE_SCALAR_LISTS: frozenset[str] = frozenset({"finalizers"})


# ---- RFC 6902 ---------------------------------------------------------------------------


def _unescape(tok: str) -> str:
    return tok.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _unprocessable(f'JSON pointer must be empty or start with a "/": {path}')
    return [_unescape(t) for t in path[1:].split("/")]


def _container(doc: Any, toks: list[str], path: str) -> Any:
    cur = doc
    for t in toks:
        if isinstance(cur, dict):
            if t not in cur:
                raise _missing(path)
            cur = cur[t]
        elif isinstance(cur, list):
            try:
                i = int(t)
            except ValueError:
                raise _missing(path) from None
            if i < 0 or i >= len(cur):
                raise _missing(path)
            cur = cur[i]
        else:
            raise _missing(path)
    return cur


def _missing(path: str) -> errors.ApiError:
    return _unprocessable(f"doc is missing path: {path}")


def _unprocessable(detail: str) -> errors.ApiError:
    # NewGenericServerResponse(422, ...) as the patch handler answers a failed JSON patch.
    return errors.ApiError(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
        {"causes": [{"reason": "UnexpectedServerResponse", "message": detail}]},
    )


def _index(lst: list[Any], t: str, path: str, allow_end: bool) -> int:
    if t == "-" and allow_end:
        return len(lst)
    try:
        i = int(t)
    except ValueError:
        raise _missing(path) from None
    if i < 0 or i > len(lst) or (i == len(lst) and not allow_end):
        raise _missing(path)
    return i


def _get(doc: Any, path: str) -> Any:
    toks = _pointer(path)
    return _container(doc, toks, path)


def _add(doc: Any, path: str, value: Any) -> Any:
    toks = _pointer(path)
    if not toks:
        return value
    parent = _container(doc, toks[:-1], path)
    last = toks[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, True), value)
    else:
        raise _missing(path)
    return doc


def _remove(doc: Any, path: str) -> Any:
    toks = _pointer(path)
    if not toks:
        raise _missing(path)
    parent = _container(doc, toks[:-1], path)
    last = toks[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _missing(path)
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, path, False)]
    else:
        raise _missing(path)
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise errors.bad_request(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict):
            raise errors.bad_request("invalid JSON patch operation")
        kind = op.get("op")
        path = op.get("path", "")
        if not isinstance(path, str):
            raise errors.bad_request("invalid JSON patch path")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            toks = _pointer(path)
            if not toks:
                doc = copy.deepcopy(op.get("value"))
            else:
                parent = _container(doc, toks[:-1], path)
                if isinstance(parent, list):
                    parent[_index(parent, toks[-1], path, False)] = copy.deepcopy(op.get("value"))
                else:
                    parent[toks[-1]] = copy.deepcopy(op.get("value"))
        elif kind == "move":
            src = str(op.get("from", ""))
            val = _get(doc, src)
            doc = _remove(doc, src)
            doc = _add(doc, path, val)
        elif kind == "copy":
            val = copy.deepcopy(_get(doc, str(op.get("from", ""))))
            doc = _add(doc, path, val)
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise _unprocessable(f"testing value {path} failed: test failed")
        else:
            raise errors.bad_request(f"Unexpected kind: {kind}")
    return doc


# ---- RFC 7386 ---------------------------------------------------------------------------


def merge_patch(doc: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            out[k] = merge_patch(out.get(k), v)
        else:
            out[k] = copy.deepcopy(v)
    return out


# ---- strategic merge patch -------------------------------------------------------------


def merge_keys_for(kind: str) -> dict[str, str]:
    """The merge-key table of a kind (Service ports merge by `port`)."""
    if kind == "Service":
        return {**MERGE_KEYS, "ports": "port"}
    if kind == "EndpointSlice":
        # EndpointSlice ports are an atomic list: a patch replaces it.
        return {k: v for k, v in MERGE_KEYS.items() if k != "ports"}
    return MERGE_KEYS


def strategic_merge_patch(doc: Any, patch: Any, keys: Mapping[str, str] = MERGE_KEYS) -> Any:
    if not isinstance(patch, dict):
        raise errors.bad_request("strategic merge patch must be a JSON object")
    return _smp_map(copy.deepcopy(doc) if isinstance(doc, dict) else {}, patch, keys)


def _smp_map(
    orig: dict[str, Any], patch: dict[str, Any], keys: Mapping[str, str]
) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    retain = patch.get("$retainKeys")
    orders: dict[str, list[Any]] = {}
    deletes: dict[str, list[Any]] = {}
    for k, v in patch.items():
        if k.startswith("$setElementOrder/"):
            orders[k.split("/", 1)[1]] = v if isinstance(v, list) else []
        elif k.startswith("$deleteFromPrimitiveList/"):
            deletes[k.split("/", 1)[1]] = v if isinstance(v, list) else []
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            orig.pop(k, None)
            continue
        cur = orig.get(k)
        if isinstance(v, dict):
            orig[k] = _smp_map(cur if isinstance(cur, dict) else {}, v, keys)
        elif isinstance(v, list) and isinstance(cur, list):
            orig[k] = _smp_list(k, cur, v, keys)
        elif isinstance(v, list):
            orig[k] = [
                {kk: vv for kk, vv in x.items() if not kk.startswith("$")}
                if isinstance(x, dict)
                else x
                for x in v
                if not (isinstance(x, dict) and x.get("$patch") == "delete")
            ]
        else:
            orig[k] = copy.deepcopy(v)
    for field_name, values in deletes.items():
        cur = orig.get(field_name)
        if isinstance(cur, list):
            orig[field_name] = [x for x in cur if x not in values]
    for field_name, order in orders.items():
        cur = orig.get(field_name)
        if isinstance(cur, list):
            orig[field_name] = _apply_order(field_name, cur, order, keys)
    if isinstance(retain, list):
        for k in list(orig):
            if k not in retain:
                del orig[k]
    return orig


def _smp_list(name: str, cur: list[Any], patch: list[Any], keys: Mapping[str, str]) -> list[Any]:
    key = keys.get(name)
    if key is None:
        if name in MERGE_SCALAR_LISTS:
            out = list(cur)
            for x in patch:
                if x not in out:
                    out.append(x)
            return out
        # No patch strategy: the list is replaced (after dropping directives).
        if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
            return [x for x in patch if not (isinstance(x, dict) and "$patch" in x)]
        return copy.deepcopy(patch)
    if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
        return [copy.deepcopy(x) for x in patch if not (isinstance(x, dict) and "$patch" in x)]
    out = [copy.deepcopy(x) for x in cur]
    for item in patch:
        if not isinstance(item, dict):
            out.append(copy.deepcopy(item))
            continue
        kv = item.get(key)
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == kv), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(_smp_map({}, item, keys))
        else:
            out[idx] = _smp_map(out[idx], item, keys)
    return out


def _apply_order(name: str, cur: list[Any], order: list[Any], keys: Mapping[str, str]) -> list[Any]:
    key = keys.get(name)

    def ident(x: Any) -> Any:
        if key is not None and isinstance(x, dict):
            return x.get(key)
        return x

    wanted = [ident(o) for o in order]
    placed = [x for w in wanted for x in cur if ident(x) == w]
    rest = [x for x in cur if ident(x) not in wanted]
    return placed + rest
