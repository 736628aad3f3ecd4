"""The controller's record of which pods each HPA selects (``hpa_selector_store.go``).

Upstream keeps, per HPA, the selector parsed during its last reconcile, and uses
the store to detect HPAs whose pods overlap (``AmbiguousSelector``). An HPA is
registered with a match-nothing selector when the informer first sees it, gets its
real selector on its first reconcile (only while registered), and is dropped on
delete. The core reads a per-namespace snapshot (``SyncInputs.hpa_selectors``).
"""

from __future__ import annotations

from collections.abc import Mapping

from hpactl.model.selectors import Selector

__all__ = ["SelectorStore"]


def _split(key: str) -> str:
    return key.split("/", 1)[0]


class SelectorStore:
    """HPA key (``namespace/name``) → stored selector, grouped by namespace."""

    __slots__ = ("_by_ns",)

    def __init__(self) -> None:
        self._by_ns: dict[str, dict[str, Selector]] = {}

    def register(self, key: str) -> None:
        """Register ``key`` with a match-nothing selector unless it is already known."""
        self._by_ns.setdefault(_split(key), {}).setdefault(key, Selector.nothing())

    def set(self, key: str, selector: Selector) -> None:
        """Record ``key``'s selector; ignored when the key is not registered (upstream)."""
        ns = self._by_ns.get(_split(key))
        if ns is not None and key in ns:
            ns[key] = selector

    def remove(self, key: str) -> None:
        ns_key = _split(key)
        ns = self._by_ns.get(ns_key)
        if ns is None:
            return
        ns.pop(key, None)
        if not ns:
            del self._by_ns[ns_key]

    def snapshot(self, namespace: str) -> Mapping[str, Selector]:
        """A copy of the namespace's selectors (the core's ``hpa_selectors``)."""
        return dict(self._by_ns.get(namespace, {}))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._by_ns.get(_split(key), {})

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_ns.values())

    def clear(self) -> None:
        self._by_ns.clear()
