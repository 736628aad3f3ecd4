"""The informer's store: projected objects keyed ``namespace/name``, with indexes.

client-go's ``cache.Indexer`` idea, reduced to what hpactl needs and made cheap at
scale: raw JSON objects are projected once at ingest (a PodView, an HPA, a
WorkloadScale) and only the projection is kept, plus each object's last raw
``resourceVersion``. The store is single-threaded (asyncio), so it needs no locks.

An object whose projection raises is not dropped silently: its key holds a
`ProjectionError` instead, which the listers expose (the controller turns an HPA's
projection error into a condition and an event). Error entries are in no index.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

import structlog

__all__ = [
    "NAMESPACE_INDEX",
    "IndexFunc",
    "Projection",
    "ProjectionError",
    "Store",
    "object_key",
    "split_key",
]

T = TypeVar("T")

NAMESPACE_INDEX = "namespace"

_log = structlog.get_logger("hpactl.cache")


@dataclass(frozen=True, slots=True)
class ProjectionError:
    """A stored object that could not be projected (malformed or unexpected shape)."""

    key: str
    namespace: str
    name: str
    resource_version: str
    error_type: str
    message: str

    def __str__(self) -> str:
        return f"{self.key}: {self.error_type}: {self.message}"


Projection: TypeAlias = Callable[[Mapping[str, Any]], T]
IndexFunc: TypeAlias = Callable[[T], Iterable[str]]


def object_key(namespace: str, name: str) -> str:
    """client-go's ``MetaNamespaceKeyFunc``: ``ns/name``, or ``name`` if cluster-scoped."""
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str, str]:
    """Inverse of `object_key`: ``(namespace, name)``."""
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else ("", ns)


def raw_identity(raw: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(namespace, name, resourceVersion)`` of a raw object; ValueError without a name."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"object is not a JSON object: {str(raw)[:100]}")
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping):
        raise ValueError("object has no metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("object has no metadata.name")
    ns = meta.get("namespace") or ""
    rv = meta.get("resourceVersion") or ""
    return str(ns), name, str(rv)


class Store(Generic[T]):
    """Projected objects by key, with a namespace index and optional named indexes.

    Mutations (`upsert`, `delete`) belong to the reflector; everyone else reads.
    Index functions run on the projection; they must be pure and cheap.
    """

    __slots__ = (
        "_entries",
        "_index_funcs",
        "_indexes",
        "_keep_raw",
        "_projection",
        "_raw",
        "_rvs",
    )

    def __init__(
        self,
        projection: Projection[T],
        indexers: Mapping[str, IndexFunc[T]] | None = None,
        *,
        keep_raw: bool = False,
    ) -> None:
        if indexers and NAMESPACE_INDEX in indexers:
            raise ValueError(f"index name {NAMESPACE_INDEX!r} is built in")
        self._projection = projection
        self._index_funcs: dict[str, IndexFunc[T]] = dict(indexers or {})
        self._entries: dict[str, T | ProjectionError] = {}
        self._rvs: dict[str, str] = {}
        self._keep_raw = keep_raw
        self._raw: dict[str, Mapping[str, Any]] = {}
        # index name -> value -> keys. What a key is filed under is not kept: the
        # namespace is read off the key, and the index functions are pure, so the old
        # entry's values are computed again when it is replaced or deleted (at 30,000
        # pods that saves ~5 MiB of per-key tuples).
        self._indexes: dict[str, dict[str, set[str]]] = {
            name: {} for name in (NAMESPACE_INDEX, *self._index_funcs)
        }

    # -- reads --------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> T | None:
        """The projection stored under `key`; None if absent or not projectable."""
        entry = self._entries.get(key)
        return None if entry is None or isinstance(entry, ProjectionError) else entry

    def get_entry(self, key: str) -> T | ProjectionError | None:
        """What `key` holds: the projection, its `ProjectionError`, or None."""
        return self._entries.get(key)

    def get_error(self, key: str) -> ProjectionError | None:
        entry = self._entries.get(key)
        return entry if isinstance(entry, ProjectionError) else None

    def get_raw(self, key: str) -> Mapping[str, Any] | None:
        """The last raw object (only when the store was built with ``keep_raw=True``)."""
        return self._raw.get(key)

    def resource_version(self, key: str) -> str | None:
        """The last raw ``metadata.resourceVersion`` seen for `key`."""
        return self._rvs.get(key)

    def keys(self) -> builtins.list[str]:
        return list(self._entries)

    def items(self) -> Iterator[tuple[str, T | ProjectionError]]:
        """All entries, errors included (a snapshot: safe to mutate the store meanwhile)."""
        return iter(list(self._entries.items()))

    def list(self) -> builtins.list[T]:
        """All projectable objects."""
        return [e for e in self._entries.values() if not isinstance(e, ProjectionError)]

    def errors(self) -> builtins.list[ProjectionError]:
        return [e for e in self._entries.values() if isinstance(e, ProjectionError)]

    @property
    def index_names(self) -> tuple[str, ...]:
        return tuple(self._indexes)

    def index_keys(self, index: str, value: str) -> builtins.list[str]:
        """Keys filed under `value` in `index` (KeyError for an unknown index)."""
        return sorted(self._indexes[index].get(value, ()))

    def by_index(self, index: str, value: str) -> builtins.list[T]:
        """Objects filed under `value` in `index`, in key order (KeyError if no such index)."""
        keys = self._indexes[index].get(value)
        if not keys:
            return []
        out: builtins.list[T] = []
        for key in sorted(keys):
            entry = self._entries[key]
            if not isinstance(entry, ProjectionError):
                out.append(entry)
        return out

    def index_values(self, index: str) -> builtins.list[str]:
        """Values that currently have at least one object in `index`."""
        return sorted(v for v, keys in self._indexes[index].items() if keys)

    # -- writes (the reflector's) ---------------------------------------------------

    def project(self, raw: Mapping[str, Any]) -> tuple[str, str, T | ProjectionError]:
        """Project `raw` without storing it: ``(key, resourceVersion, entry)``.

        ValueError if the object has no name (then it cannot even be keyed).
        """
        ns, name, rv = raw_identity(raw)
        key = object_key(ns, name)
        try:
            entry: T | ProjectionError = self._projection(raw)
        except Exception as exc:  # a malformed object must not stop the informer
            entry = ProjectionError(
                key=key,
                namespace=ns,
                name=name,
                resource_version=rv,
                error_type=type(exc).__name__,
                message=str(exc),
            )
            _log.warning(
                "cache.projection_failed",
                key=key,
                resource_version=rv,
                error=f"{entry.error_type}: {entry.message}",
            )
        return key, rv, entry

    def upsert(
        self, raw: Mapping[str, Any]
    ) -> tuple[str, T | ProjectionError | None, T | ProjectionError]:
        """Project and store `raw`: ``(key, old entry or None, new entry)``."""
        key, rv, entry = self.project(raw)
        old = self.put(key, rv, entry)
        if self._keep_raw:
            self._raw[key] = raw
        return key, old, entry

    def put(self, key: str, rv: str, entry: T | ProjectionError) -> T | ProjectionError | None:
        """Store an already projected entry; returns the previous one."""
        old = self._entries.get(key)
        self._entries[key] = entry
        self._rvs[key] = rv
        self._reindex(key, old, entry)
        return old

    def delete(self, key: str) -> T | ProjectionError | None:
        """Remove `key`; returns what it held (None if absent)."""
        old = self._entries.pop(key, None)
        self._rvs.pop(key, None)
        self._raw.pop(key, None)
        if old is not None:
            self._reindex(key, old, None)
        return old

    def clear(self) -> None:
        self._entries.clear()
        self._rvs.clear()
        self._raw.clear()
        for by_value in self._indexes.values():
            by_value.clear()

    # -- index maintenance ----------------------------------------------------------

    def _values_for(
        self, index: str, key: str, entry: T | ProjectionError | None
    ) -> builtins.list[str]:
        if entry is None or isinstance(entry, ProjectionError):
            return []
        try:
            # Interned: the objects filed under one value share its string.
            return [sys.intern(v) for v in self._index_funcs[index](entry)]
        except Exception as exc:
            _log.warning("cache.index_failed", index=index, key=key, error=repr(exc))
            return []

    def _reindex(
        self, key: str, old: T | ProjectionError | None, new: T | ProjectionError | None
    ) -> None:
        """Move `key` from the index values of `old` to those of `new` (None: absent)."""
        ns = split_key(key)[0]
        by_ns = self._indexes[NAMESPACE_INDEX]
        if new is None or isinstance(new, ProjectionError):
            _discard(by_ns, ns, key)
        else:
            by_ns.setdefault(ns, set()).add(key)
        if new is old:
            return
        for index in self._index_funcs:
            by_value = self._indexes[index]
            before = self._values_for(index, key, old)
            after = self._values_for(index, key, new)
            if before == after:
                continue
            for value in before:
                _discard(by_value, value, key)
            for value in after:
                by_value.setdefault(value, set()).add(key)


def _discard(by_value: dict[str, set[str]], value: str, key: str) -> None:
    """Take `key` out of `value`'s set, dropping the set once empty."""
    keys = by_value.get(value)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del by_value[value]
