"""Object store: one resourceVersion sequence, per-resource history rings, watch fan-out.

Objects are kept in their storage version as plain dicts together with their JSON
text (serialized once per write); nothing outside this module mutates a stored dict.
The store knows nothing about HTTP; the server and the in-process API both use it.

`checkpoint()` / `restore_state()` model an etcd backup and restore: the server goes
back to an older state with its lower resourceVersion counter, its watch history
starts afresh and every open watch ends (a real API server is restarted after a
restore and re-initializes its watch cache from a list).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import copy
import json
import random
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hpactl.emulator import errors
from hpactl.emulator.registry import Registry, ResourceType, crd_resource_types

Obj = dict[str, Any]
StorageKey = tuple[str, str]  # (group, plural)

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand alphabet
_NS_KEY: StorageKey = ("", "namespaces")
_CRD_KEY: StorageKey = ("apiextensions.k8s.io", "customresourcedefinitions")


def tree_copy(x: Any) -> Any:
    """A deep copy of a JSON tree (dicts, lists, scalars), about four times faster
    than ``copy.deepcopy`` (no memo); anything else is deep-copied as before."""
    t = type(x)
    if t is dict:
        return {k: tree_copy(v) for k, v in x.items()}
    if t is list:
        return [tree_copy(v) for v in x]
    if t is str or t is int or t is float or t is bool or x is None:
        return x
    return copy.deepcopy(x)


def format_timestamp(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


@dataclass(slots=True)
class Entry:
    """One stored object version. `obj` and `raw` are never mutated after creation."""

    obj: Obj
    raw: str
    rv: int
    # Lazily filled JSON of the object in other served versions ({"v1": "..."}).
    alt: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class WatchEvent:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    key: StorageKey
    namespace: str
    name: str
    entry: Entry
    prev: Entry | None


class Watcher:
    """A subscription; the server drains `queue`. A None item means "stream closed"."""

    def __init__(self, key: StorageKey, namespace: str | None) -> None:
        import asyncio  # local: the store is usable without a loop until someone watches

        self.key = key
        self.namespace = namespace
        self.queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()

    def offer(self, ev: WatchEvent) -> None:
        if self.namespace is None or self.namespace == ev.namespace:
            self.queue.put_nowait(ev)

    def close(self) -> None:
        self.queue.put_nowait(None)


class _Table:
    """The objects of one resource, indexed by namespace."""

    __slots__ = ("by_ns", "count", "evicted_upto", "history", "sorted_keys")

    def __init__(self, history_size: int) -> None:
        self.by_ns: dict[str, dict[str, Entry]] = {}
        self.count = 0
        self.history: deque[WatchEvent] = deque(maxlen=history_size)
        # RV of the newest event that fell out of the ring (0: nothing evicted yet).
        self.evicted_upto = 0
        self.sorted_keys: list[tuple[str, str]] | None = None

    def keys_sorted(self) -> list[tuple[str, str]]:
        if self.sorted_keys is None:
            self.sorted_keys = sorted(
                (ns, name) for ns, names in self.by_ns.items() for name in names
            )
        return self.sorted_keys


@dataclass(frozen=True, slots=True, eq=False)
class StoreState:
    """An opaque copy of the store's objects and resourceVersion counter (an etcd
    snapshot). Entries are immutable, so holding them costs only the dicts."""

    rv: int
    objects: Mapping[StorageKey, Mapping[str, Mapping[str, Entry]]]

    def count(self) -> int:
        return sum(len(names) for t in self.objects.values() for names in t.values())


Converter = Callable[[ResourceType, Obj], Obj]


class Store:
    """The emulator's state. Methods with a `rt` argument take the storage ResourceType."""

    def __init__(
        self,
        registry: Registry,
        *,
        history_size: int = 10_000,
        now: Callable[[], datetime] | None = None,
        to_storage: Converter | None = None,
        defaulter: Callable[[ResourceType, Obj], None] | None = None,
        validator: Callable[[ResourceType, Obj], None] | None = None,
    ) -> None:
        self.registry = registry
        self.history_size = history_size
        self.now: Callable[[], datetime] = now or (lambda: datetime.now(UTC))
        self._rv = 0
        self._tables: dict[StorageKey, _Table] = {}
        # After a restore no watch can start before the restored resourceVersion
        # (the watch cache was re-initialized from a list at that revision).
        self._history_floor = 0
        self._watchers: dict[StorageKey, set[Watcher]] = {}
        self._to_storage = to_storage
        self._defaulter = defaulter
        self._validator_fn = validator
        # Called after each committed write (CRD registration hooks in).
        self.on_write: list[Callable[[WatchEvent], None]] = []
        # Validation of custom resources (schema and CEL rules; the old object for
        # transition rules on updates), used instead of `validator` for them.
        self.custom_validator: Callable[[ResourceType, Obj, Obj | None], None] | None = None

    # ---- validation -----------------------------------------------------------------

    @property
    def validator(self) -> Callable[[ResourceType, Obj], None] | None:
        return self._validator_fn

    def set_validator(self, fn: Callable[[ResourceType, Obj], None] | None) -> None:
        """Replace the validation run on API writes and on `apply`."""
        self._validator_fn = fn

    def _validate(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        if rt.custom and self.custom_validator is not None:
            self.custom_validator(rt, obj, old)
        elif self._validator_fn is not None:
            self._validator_fn(rt, obj)

    # ---- basics -------------------------------------------------------------------

    def current_resource_version(self) -> str:
        return str(self._rv)

    @property
    def rv(self) -> int:
        return self._rv

    def table(self, key: StorageKey) -> _Table:
        t = self._tables.get(key)
        if t is None:
            t = self._tables[key] = _Table(self.history_size)
        return t

    def get_entry(self, key: StorageKey, namespace: str, name: str) -> Entry | None:
        t = self._tables.get(key)
        if t is None:
            return None
        names = t.by_ns.get(namespace)
        return names.get(name) if names else None

    def iter_entries(self, key: StorageKey, namespace: str | None) -> Iterator[Entry]:
        """Current entries in key order (namespace, name)."""
        t = self._tables.get(key)
        if t is None:
            return
        if namespace is not None:
            names = t.by_ns.get(namespace)
            if names:
                for n in sorted(names):
                    yield names[n]
            return
        for ns, n in t.keys_sorted():
            yield t.by_ns[ns][n]

    def entries_after(
        self, key: StorageKey, namespace: str | None, after: tuple[str, str]
    ) -> list[Entry]:
        """Current entries with (namespace, name) > after, in key order."""
        t = self._tables.get(key)
        if t is None:
            return []
        if namespace is not None:
            names = t.by_ns.get(namespace) or {}
            return [names[n] for n in sorted(names) if (namespace, n) > after]
        keys = t.keys_sorted()
        by_ns = t.by_ns
        return [by_ns[ns][n] for ns, n in keys[bisect.bisect_right(keys, after) :]]

    def count(self, key: StorageKey) -> int:
        t = self._tables.get(key)
        return t.count if t else 0

    # ---- commit -------------------------------------------------------------------

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _commit(
        self,
        rt: ResourceType,
        etype: str,
        namespace: str,
        name: str,
        obj: Obj | None,
        prev: Entry | None,
    ) -> Entry:
        """Write obj (None: delete) with a new resourceVersion; record and fan out."""
        key = rt.storage_key
        t = self.table(key)
        rv = self._next_rv()
        if obj is None:
            assert prev is not None
            obj = tree_copy(prev.obj)
            obj["metadata"]["resourceVersion"] = str(rv)
            entry = Entry(obj, dumps(obj), rv)
            names = t.by_ns.get(namespace)
            if names is not None:
                names.pop(name, None)
                if not names:
                    del t.by_ns[namespace]
            t.count -= 1
            t.sorted_keys = None
        else:
            obj["metadata"]["resourceVersion"] = str(rv)
            entry = Entry(obj, dumps(obj), rv)
            names = t.by_ns.setdefault(namespace, {})
            if name not in names:
                t.count += 1
                t.sorted_keys = None
            names[name] = entry
        ev = WatchEvent(rv, etype, key, namespace, name, entry, prev)
        if len(t.history) == t.history.maxlen and t.history:
            t.evicted_upto = t.history[0].rv
        t.history.append(ev)
        for w in self._watchers.get(key, ()):
            w.offer(ev)
        for hook in self.on_write:
            hook(ev)
        return entry

    # ---- writes with API-server semantics ----------------------------------------

    def _generate_name(self, prefix: str) -> str:
        return prefix + "".join(random.choice(_NAME_CHARS) for _ in range(5))

    def create_entry(
        self,
        rt: ResourceType,
        namespace: str,
        obj: Obj,
        *,
        keep_status: bool = False,
        dry_run: bool = False,
        validate: bool = False,
    ) -> Entry:
        """Create (POST semantics). `obj` is a fresh dict in storage version; it is consumed."""
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        name = meta.get("name") or ""
        if not name:
            gen = meta.get("generateName")
            if not gen:
                raise errors.invalid(
                    rt.kind,
                    rt.group,
                    "",
                    [
                        (
                            "metadata.name",
                            "FieldValueRequired",
                            "Required value: name or generateName is required",
                        )
                    ],
                )
            for _ in range(8):
                name = self._generate_name(str(gen))
                if self.get_entry(rt.storage_key, namespace, name) is None:
                    break
            meta["name"] = name
        if self.get_entry(rt.storage_key, namespace, name) is not None:
            raise errors.already_exists(rt.group, rt.plural, name)
        if rt.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = format_timestamp(self.now())
        meta.pop("resourceVersion", None)
        meta.pop("deletionTimestamp", None)
        meta.pop("managedFields", None)
        if rt.generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if rt.status and not keep_status and not rt.status_on_create:
            if rt.custom:
                obj.pop("status", None)  # "create cannot set status" (customResourceStrategy)
            else:
                # Create resets status: the Go struct's zero value as JSON.
                obj["status"] = _zero_status(rt)
        if self._defaulter is not None:
            self._defaulter(rt, obj)
        if validate:
            self._validate(rt, obj, None)
        if dry_run:
            obj["metadata"]["resourceVersion"] = str(self._rv)
            return Entry(obj, dumps(obj), self._rv)
        return self._commit(rt, "ADDED", namespace, name, obj, None)

    def update_entry(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        obj: Obj,
        *,
        subresource: str = "",
        check_rv: bool = True,
        keep_status: bool = False,
        dry_run: bool = False,
        validate: bool = False,
    ) -> Entry:
        """Replace (PUT semantics) on the main resource or the status subresource."""
        key = rt.storage_key
        old = self.get_entry(key, namespace, name)
        if old is None:
            raise errors.not_found(rt.group, rt.plural, name)
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = obj["metadata"] = {}
        body_rv = meta.get("resourceVersion")
        if check_rv and body_rv not in (None, "") and str(body_rv) != str(old.rv):
            raise errors.conflict(rt.group, rt.plural, name)
        old_obj = old.obj
        if subresource == "status":
            new = tree_copy(old_obj)
            status = obj.get("status")
            if rt.custom:
                # The status strategy keeps the old object but for status (absent: removed),
                # then validates the whole object against the schema.
                if status is None:
                    new.pop("status", None)
                else:
                    new["status"] = status
                if self._defaulter is not None:
                    self._defaulter(rt, new)
                if validate:
                    self._validate(rt, new, old_obj)
            else:
                new["status"] = status if status is not None else _zero_status(rt)
        else:
            new = obj
            new_meta = new["metadata"]
            old_meta = old_obj["metadata"]
            for f in ("uid", "creationTimestamp", "deletionTimestamp", "generation"):
                if f in old_meta:
                    new_meta[f] = old_meta[f]
                else:
                    new_meta.pop(f, None)
            new_meta.pop("managedFields", None)
            new_meta["name"] = name
            if rt.namespaced:
                new_meta["namespace"] = namespace
            if rt.status and not keep_status:
                if "status" in old_obj:
                    new["status"] = old_obj["status"]
                else:
                    new.pop("status", None)
            if self._defaulter is not None:
                self._defaulter(rt, new)
                new_meta = new["metadata"]  # the defaulter may have replaced it
            if validate:
                self._validate(rt, new, old_obj)
            if rt.generation and _spec_changed(old_obj, new):
                new_meta["generation"] = int(old_meta.get("generation", 0)) + 1
        new["metadata"]["resourceVersion"] = old_obj["metadata"].get("resourceVersion")
        if new == old_obj:
            return old  # no-op writes do not bump the resourceVersion (as etcd3 store)
        if dry_run:
            return Entry(new, dumps(new), old.rv)
        meta_new = new["metadata"]
        if meta_new.get("deletionTimestamp") and not meta_new.get("finalizers"):
            return self._commit(rt, "DELETED", namespace, name, None, old)
        return self._commit(rt, "MODIFIED", namespace, name, new, old)

    def delete_entry(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        *,
        precondition_uid: str | None = None,
        precondition_rv: str | None = None,
        dry_run: bool = False,
    ) -> tuple[Entry, bool]:
        """Delete; returns (entry, gone). With finalizers the object stays, marked."""
        old = self.get_entry(rt.storage_key, namespace, name)
        if old is None:
            raise errors.not_found(rt.group, rt.plural, name)
        meta = old.obj["metadata"]
        if precondition_uid and precondition_uid != meta.get("uid"):
            raise errors.precondition_failed(
                rt.group, rt.plural, name, "UID", precondition_uid, meta.get("uid")
            )
        if precondition_rv and precondition_rv != meta.get("resourceVersion"):
            raise errors.precondition_failed(
                rt.group,
                rt.plural,
                name,
                "ResourceVersion",
                precondition_rv,
                meta.get("resourceVersion"),
            )
        if dry_run:
            return old, True
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return old, False
            new = tree_copy(old.obj)
            new["metadata"]["deletionTimestamp"] = format_timestamp(self.now())
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            return self._commit(rt, "MODIFIED", namespace, name, new, old), False
        return self._commit(rt, "DELETED", namespace, name, None, old), True

    # ---- reads at a resourceVersion ----------------------------------------------

    def too_old(self, key: StorageKey, rv: int) -> bool:
        """True when events after `rv` for this resource have left the history ring
        (or precede the state the store was last restored to)."""
        if rv < self._history_floor:
            return True
        t = self._tables.get(key)
        return t is not None and rv < t.evicted_upto

    def oldest_available(self, key: StorageKey) -> int:
        t = self._tables.get(key)
        if t is None or not t.history:
            return self._rv
        return max(t.history[0].rv - 1, self._history_floor)

    def events_since(self, key: StorageKey, rv: int) -> list[WatchEvent]:
        t = self._tables.get(key)
        if t is None:
            return []
        hist = t.history
        # History is in RV order; scan from the end for the common "recent" case.
        i = len(hist)
        while i > 0 and hist[i - 1].rv > rv:
            i -= 1
        return [hist[j] for j in range(i, len(hist))]

    def snapshot(
        self,
        key: StorageKey,
        namespace: str | None,
        rv: int,
        after: tuple[str, str] | None = None,
    ) -> list[Entry]:
        """Entries as they were at `rv` (caller checked `too_old`), in key order,
        optionally only those with (namespace, name) > after."""
        later = self.events_since(key, rv)
        if not later:
            if after is not None:
                return self.entries_after(key, namespace, after)
            return list(self.iter_entries(key, namespace))
        state: dict[tuple[str, str], Entry] = {}
        t = self._tables.get(key)
        if t is not None:
            for ns, names in t.by_ns.items():
                if namespace is None or ns == namespace:
                    for n, e in names.items():
                        state[(ns, n)] = e
        for ev in reversed(later):
            if namespace is not None and ev.namespace != namespace:
                continue
            k = (ev.namespace, ev.name)
            if ev.prev is None:
                state.pop(k, None)
            else:
                state[k] = ev.prev
        return [state[k] for k in sorted(state) if after is None or k > after]

    # ---- watch --------------------------------------------------------------------

    def subscribe(self, key: StorageKey, namespace: str | None) -> Watcher:
        w = Watcher(key, namespace)
        self._watchers.setdefault(key, set()).add(w)
        return w

    def unsubscribe(self, w: Watcher) -> None:
        ws = self._watchers.get(w.key)
        if ws is not None:
            ws.discard(w)

    def close_watchers(self, key: StorageKey | None = None) -> None:
        """End every open watch (of one resource, `(group, plural)`, if given)."""
        keys = list(self._watchers) if key is None else [key]
        for k in keys:
            for w in self._watchers.pop(k, ()):
                w.close()

    def watcher_count(self) -> int:
        return sum(len(ws) for ws in self._watchers.values())

    # ---- etcd snapshot and restore ------------------------------------------------

    def checkpoint(self) -> StoreState:
        """A copy of every object and of the resourceVersion counter."""
        return StoreState(
            self._rv,
            {
                key: {ns: dict(names) for ns, names in t.by_ns.items()}
                for key, t in self._tables.items()
                if t.count
            },
        )

    def restore_state(self, state: StoreState) -> None:
        """Serve exactly `state` from now on: its objects, its resourceVersion counter
        (later writes continue from it, so resourceVersions go back), no watch history
        before it. Every open watch ends; CRD-served resources follow the CRDs restored."""
        self.close_watchers()
        for e in self.iter_entries(_CRD_KEY, None):
            spec = e.obj.get("spec") or {}
            plural = str((spec.get("names") or {}).get("plural", ""))
            self.registry.remove_group_resource(str(spec.get("group", "")), plural)
        self._tables = {}
        for key, by_ns in state.objects.items():
            t = self.table(key)
            for ns, names in by_ns.items():
                if names:
                    t.by_ns[ns] = dict(names)
                    t.count += len(names)
        self._rv = state.rv
        self._history_floor = state.rv
        for e in self.iter_entries(_CRD_KEY, None):
            for rt in crd_resource_types(e.obj):
                self.registry.add(rt)

    def reset(self, namespaces: Iterable[str] = ()) -> None:
        """An empty store (an emptied etcd): no objects but the given namespaces,
        created afresh with the counter restarting at 0. Open watches end."""
        self.restore_state(StoreState(0, {}))
        for ns in namespaces:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    # ---- in-process API (tests, simulator) ----------------------------------------

    def served_type(self, obj: Obj) -> ResourceType:
        """The served ResourceType of obj's apiVersion and kind (400 like the API if none)."""
        api_version = str(obj.get("apiVersion", ""))
        group, _, version = api_version.rpartition("/")
        kind = str(obj.get("kind", ""))
        for rt in self.registry:
            if rt.group == group and rt.version == version and rt.kind == kind and not rt.external:
                return rt
        raise errors.bad_request(f'no matches for kind "{kind}" in version "{api_version}"')

    def _resolve(self, group: str, resource: str) -> ResourceType:
        rt = self.registry.storage_type(group, resource)
        if rt is None:
            raise errors.path_not_found()
        return rt

    def _prepare(self, obj: Obj) -> tuple[ResourceType, str, Obj]:
        served = self.served_type(obj)
        new = tree_copy(obj)
        if self._to_storage is not None and served.version != served.stored_version:
            new = self._to_storage(served, new)
        rt = self.registry.get(served.group, served.stored_version, served.plural) or served
        ns = str(new.get("metadata", {}).get("namespace") or "default") if rt.namespaced else ""
        return rt, ns, new

    def create(self, obj: Obj, *, validate: bool = False) -> Obj:
        """Create an object as given, status kept. Raises ApiError like the HTTP API
        (409 AlreadyExists...), but skips validation unless asked: tests plant
        objects the API would refuse this way."""
        rt, ns, new = self._prepare(obj)
        return _copy(self.create_entry(rt, ns, new, keep_status=True, validate=validate))

    def apply(self, obj: Obj, *, validate: bool = True, replace_status: bool = True) -> Obj:
        """Create, or replace an existing object (no resourceVersion check), validated
        as the API server would validate it. ``replace_status=False`` keeps the stored
        status of an existing object (``kubectl apply`` of a manifest without status);
        by default the status is replaced too."""
        rt, ns, new = self._prepare(obj)
        name = str(new.get("metadata", {}).get("name", ""))
        if name and self.get_entry(rt.storage_key, ns, name) is not None:
            return _copy(
                self.update_entry(
                    rt,
                    ns,
                    name,
                    new,
                    check_rv=False,
                    keep_status=replace_status,
                    validate=validate,
                )
            )
        return _copy(self.create_entry(rt, ns, new, keep_status=True, validate=validate))

    def ensure_namespace(self, obj: Obj) -> None:
        """Create the namespace a namespaced obj goes to (``default`` when it names
        none, as `create`/`apply` place it) if missing, as `kubectl create ns`."""
        ns = str((obj.get("metadata") or {}).get("namespace") or "default")
        if self.served_type(obj).namespaced and self.get_entry(_NS_KEY, "", ns) is None:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def force_metadata(self, obj: Obj, fields: Mapping[str, str]) -> Obj:
        """Overwrite metadata fields the API server owns (creationTimestamp,
        deletionTimestamp...) of the stored obj as given, in one MODIFIED write and
        without validation: tests and scenarios may state them."""
        rt, ns, new = self._prepare(obj)
        name = str(new.get("metadata", {}).get("name", ""))
        entry = self.get_entry(rt.storage_key, ns, name)
        if entry is None:
            raise errors.not_found(rt.group, rt.plural, name)
        forced = tree_copy(entry.obj)
        forced["metadata"].update(fields)
        return _copy(self._commit(rt, "MODIFIED", ns, name, forced, entry))

    def update_status(self, obj: Obj) -> Obj:
        """Replace only the status of an existing object (no RV check)."""
        rt, ns, new = self._prepare(obj)
        name = str(new.get("metadata", {}).get("name", ""))
        return _copy(self.update_entry(rt, ns, name, new, subresource="status", check_rv=False))

    def get(self, group: str, resource: str, namespace: str, name: str) -> Obj | None:
        """The stored object (storage version) or None. `resource` is the plural."""
        rt = self._resolve(group, resource)
        e = self.get_entry(rt.storage_key, namespace if rt.namespaced else "", name)
        return _copy(e) if e else None

    def list(self, group: str, resource: str, namespace: str | None = None) -> list[Obj]:
        rt = self._resolve(group, resource)
        return [_copy(e) for e in self.iter_entries(rt.storage_key, namespace)]

    def delete(self, group: str, resource: str, namespace: str, name: str) -> bool:
        """Delete if present (finalizers are ignored here); returns whether it existed."""
        rt = self._resolve(group, resource)
        ns = namespace if rt.namespaced else ""
        old = self.get_entry(rt.storage_key, ns, name)
        if old is None:
            return False
        self._commit(rt, "DELETED", ns, name, None, old)
        return True

    def delete_namespace_contents(self, namespace: str) -> None:
        for key, t in list(self._tables.items()):
            names = t.by_ns.get(namespace)
            if not names:
                continue
            rt = self.registry.storage_type(*key)
            if rt is None or not rt.namespaced:
                continue
            for name in sorted(names):
                e = names.get(name)
                if e is not None:
                    self._commit(rt, "DELETED", namespace, name, None, e)

    def bulk_create(self, objs: Iterable[Obj]) -> int:
        n = 0
        for o in objs:
            rt, ns, new = self._prepare(o)
            self.create_entry(rt, ns, new, keep_status=True)
            n += 1
        return n


def _zero_status(rt: ResourceType) -> Obj:
    """JSON of an empty status struct (fields without omitempty appear)."""
    if rt.group == "autoscaling" and rt.plural == "horizontalpodautoscalers":
        return {"currentMetrics": None, "desiredReplicas": 0}
    if not rt.group and rt.plural in ("persistentvolumes", "persistentvolumeclaims"):
        # Read back through the defaulting that sets an empty phase to Pending.
        return {"phase": "Pending"}
    return {}


def _copy(e: Entry) -> Obj:
    out: Obj = json.loads(e.raw)
    return out


def _spec_changed(old: Obj, new: Obj) -> bool:
    keys = (set(old) | set(new)) - {"metadata", "status", "apiVersion", "kind"}
    return any(old.get(k) != new.get(k) for k in keys)


# ---- continue tokens (same shape as apiserver: base64 JSON {v, rv, start}) -----------


def encode_continue(rv: int, ns: str, name: str) -> str:
    start = f"{ns}/{name}\x00" if ns else f"{name}\x00"
    raw = dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    """Returns (rv, key after which to resume)."""
    try:
        pad = "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(token + pad))
        rv = int(data["rv"])
        start = str(data["start"])
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from exc
    if data.get("v") != "meta.k8s.io/v1":
        raise errors.bad_request(
            "continue key is not valid: server does not recognize this encoding"
        )
    if rv <= 0:
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )
    start = start.rstrip("\x00")
    ns, _, name = start.rpartition("/")
    return rv, (ns, name)
