"""The controller's record of which pods each HPA selects (``hpa_selector_store.go``).

Upstream keeps, per HPA, the selector parsed during its last reconcile, and uses
the store to detect HPAs whose pods overlap (``AmbiguousSelector``). An HPA is
registered with a match-nothing selector when the informer first sees it, gets its
real selector on its first reconcile (only while registered), and is dropped on
delete. The core reads the namespace's selectors (``SyncInputs.hpa_selectors``).

The ambiguity check asks, for the label sets of one HPA's pods, which HPAs of the
namespace select any of them: a scan of every HPA of the namespace, for every sync.
:meth:`SelectorStore.relevant` answers the same question from a cache keyed by label
set, dropped whenever a selector of that namespace changes (in steady state they do
not), and hands the core only this HPA's entry plus the HPAs that match. The
decision is the same as with the whole namespace (the core only ever looks at the
HPAs whose selector matches one of the pods), at a cost independent of the number
of HPAs in the namespace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hpactl.model.selectors import Selector

__all__ = ["SelectorStore"]


def _split(key: str) -> str:
    return key.split("/", 1)[0]


class SelectorStore:
    """HPA key (``namespace/name``) → stored selector, grouped by namespace."""

    __slots__ = ("_by_ns", "_matches")

    def __init__(self) -> None:
        self._by_ns: dict[str, dict[str, Selector]] = {}
        # namespace -> label set -> keys of the HPAs whose selector matches it
        self._matches: dict[str, dict[frozenset[tuple[str, str]], tuple[str, ...]]] = {}

    def register(self, key: str) -> None:
        """Register ``key`` with a match-nothing selector unless it is already known."""
        ns_key = _split(key)
        ns = self._by_ns.setdefault(ns_key, {})
        if key not in ns:
            ns[key] = Selector.nothing()  # matches nothing: no cached answer changes

    def set(self, key: str, selector: Selector) -> None:
        """Record ``key``'s selector; ignored when the key is not registered (upstream)."""
        ns_key = _split(key)
        ns = self._by_ns.get(ns_key)
        if ns is not None and key in ns:
            old = ns[key]
            ns[key] = selector
            if old is not selector and str(old) != str(selector):
                self._matches.pop(ns_key, None)

    def remove(self, key: str) -> None:
        ns_key = _split(key)
        ns = self._by_ns.get(ns_key)
        if ns is None or key not in ns:
            return
        del ns[key]
        self._matches.pop(ns_key, None)
        if not ns:
            del self._by_ns[ns_key]

    def relevant(
        self, key: str, label_sets: Iterable[frozenset[tuple[str, str]]]
    ) -> Mapping[str, Selector]:
        """This HPA's entry (if registered) plus every HPA selecting any of the labels.

        What ``SyncInputs.hpa_selectors`` needs for an HPA whose pods carry
        ``label_sets``: the core's ambiguity check gives the same answer as with
        :meth:`snapshot`.
        """
        ns_key = _split(key)
        ns = self._by_ns.get(ns_key, {})
        out: dict[str, Selector] = {}
        if key in ns:
            out[key] = ns[key]
        cache = self._matches.setdefault(ns_key, {})
        for labels in label_sets:
            keys = cache.get(labels)
            if keys is None:
                as_map = dict(labels)
                keys = tuple(k for k, sel in ns.items() if sel.matches(as_map))
                cache[labels] = keys
            for k in keys:
                out[k] = ns[k]
        return out

    def snapshot(self, namespace: str) -> Mapping[str, Selector]:
        """A copy of the namespace's selectors (the core's ``hpa_selectors``)."""
        return dict(self._by_ns.get(namespace, {}))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._by_ns.get(_split(key), {})

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_ns.values())

    def clear(self) -> None:
        self._by_ns.clear()
        self._matches.clear()
