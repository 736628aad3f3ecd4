"""The controller's record of which pods each HPA selects (``hpa_selector_store.go``).

Upstream keeps, per HPA, the selector parsed during its last reconcile, and uses
the store to detect HPAs whose pods overlap (``AmbiguousSelector``). An HPA is
registered with a match-nothing selector when the informer first sees it, gets its
real selector on its first reconcile (only while registered), and is dropped on
delete. The core reads the namespace's selectors (``SyncInputs.hpa_selectors``).

The ambiguity check asks, for the label sets of one HPA's pods, which HPAs of the
namespace select any of them: a scan of every HPA of the namespace, for every sync.
:meth:`SelectorStore.relevant` answers the same question from a cache keyed by label
set, and hands the core only this HPA's entry plus the HPAs that match. The decision
is the same as with the whole namespace (the core only ever looks at the HPAs whose
selector matches one of the pods), at a cost independent of the number of HPAs in the
namespace.

A selector change (every HPA's first sync replaces its match-nothing selector) updates
the cache in place: the key leaves the label sets that listed it, and joins those its
new selector matches, found through an index of the cached label sets by label pair
when the selector has an equality or ``in`` requirement (as a workload's selector
does). Dropping the namespace's cache instead made the first rounds after a start
quadratic in the namespace's HPAs.

:meth:`SelectorStore.version` numbers a namespace's contents: it changes whenever a
key of the namespace is registered, given a different selector object, or removed,
so an answer computed from the namespace's selectors (the controller's selector
validation memo) is known to be current while its version stands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hpactl.model.selectors import DOUBLE_EQUALS, EQUALS, IN, Selector

__all__ = ["SelectorStore"]


def _split(key: str) -> str:
    return key.split("/", 1)[0]


LabelSet = frozenset[tuple[str, str]]
_MAX_CACHED = 1024  # label sets per namespace beyond 4 per HPA before the cache restarts
_INDEXED_OPS = frozenset({EQUALS, DOUBLE_EQUALS, IN})


class _NsCache:
    """One namespace's cached answers: label set -> keys of the HPAs selecting it."""

    __slots__ = ("by_pair", "listed", "matches")

    def __init__(self) -> None:
        self.matches: dict[LabelSet, tuple[str, ...]] = {}
        # label pair -> the cached label sets holding it
        self.by_pair: dict[tuple[str, str], set[LabelSet]] = {}
        # HPA key -> the cached label sets whose answer lists it
        self.listed: dict[str, set[LabelSet]] = {}

    def add(self, labels: LabelSet, keys: tuple[str, ...]) -> None:
        self.matches[labels] = keys
        for pair in labels:
            self.by_pair.setdefault(pair, set()).add(labels)
        for k in keys:
            self.listed.setdefault(k, set()).add(labels)

    def drop_key(self, key: str) -> None:
        for labels in self.listed.pop(key, ()):
            self.matches[labels] = tuple(k for k in self.matches[labels] if k != key)

    def add_key(self, key: str, selector: Selector) -> None:
        if selector.is_nothing:
            return
        candidates: Iterable[LabelSet] = self.matches
        for req in selector.requirements:
            if req.operator in _INDEXED_OPS:
                # Only label sets holding one of these pairs can match.
                found: set[LabelSet] = set()
                for v in req.values:
                    found |= self.by_pair.get((req.key, v), set())
                candidates = found
                break
        hits = [labels for labels in candidates if selector.matches(dict(labels))]
        if hits:
            listed = self.listed.setdefault(key, set())
            for labels in hits:
                self.matches[labels] += (key,)
                listed.add(labels)


class SelectorStore:
    """HPA key (``namespace/name``) → stored selector, grouped by namespace."""

    __slots__ = ("_by_ns", "_clock", "_matches", "_versions")

    def __init__(self) -> None:
        self._by_ns: dict[str, dict[str, Selector]] = {}
        self._matches: dict[str, _NsCache] = {}
        # namespace -> the _clock value of its last change; the clock never goes back
        self._versions: dict[str, int] = {}
        self._clock = 0

    def _changed(self, ns_key: str) -> None:
        self._clock += 1
        self._versions[ns_key] = self._clock

    def version(self, namespace: str) -> int:
        """The namespace's contents' number: equal numbers, equal contents.

        0 for a namespace never changed since the start or the last :meth:`clear`
        (then it is empty).
        """
        return self._versions.get(namespace, 0)

    def register(self, key: str) -> None:
        """Register ``key`` with a match-nothing selector unless it is already known."""
        ns_key = _split(key)
        ns = self._by_ns.setdefault(ns_key, {})
        if key not in ns:
            ns[key] = Selector.nothing()  # matches nothing: no cached answer changes
            self._changed(ns_key)

    def set(self, key: str, selector: Selector) -> None:
        """Record ``key``'s selector; ignored when the key is not registered (upstream)."""
        ns_key = _split(key)
        ns = self._by_ns.get(ns_key)
        if ns is not None and key in ns:
            old = ns[key]
            ns[key] = selector
            if old is selector:
                return  # the steady case: parse_selector hands back one object per text
            self._changed(ns_key)
            cache = self._matches.get(ns_key)
            # (match-nothing and match-everything both print as "")
            changed = old.is_nothing != selector.is_nothing or str(old) != str(selector)
            if cache is not None and changed:
                cache.drop_key(key)
                cache.add_key(key, selector)

    def remove(self, key: str) -> None:
        ns_key = _split(key)
        ns = self._by_ns.get(ns_key)
        if ns is None or key not in ns:
            return
        del ns[key]
        self._changed(ns_key)
        cache = self._matches.get(ns_key)
        if cache is not None:
            cache.drop_key(key)
        if not ns:
            del self._by_ns[ns_key]
            self._matches.pop(ns_key, None)

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
        cache = self._matches.get(ns_key)
        if cache is None or len(cache.matches) > _MAX_CACHED + 4 * len(ns):
            # New namespace, or label sets of long-gone pods piled up: start afresh.
            cache = self._matches[ns_key] = _NsCache()
        for labels in label_sets:
            keys = cache.matches.get(labels)
            if keys is None:
                as_map = dict(labels)
                keys = tuple(k for k, sel in ns.items() if sel.matches(as_map))
                cache.add(labels, keys)
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
        self._versions.clear()  # every namespace empty again, as at version 0
