"""The HPAs the controller reconciles, from one or both sources (``--hpa-sources``).

``HPASources(builtin=..., crd=..., serve_builtin=...)`` answers as
:class:`~hpactl.cache.listers.HPALister` does, over the autoscaling/v2 informer and
the informer of hpactl's own resource (autoscaling.hpactl.dev), with the
controller's keys: ``namespace/name`` for a built-in HPA, ``namespace/hhpa:name``
for an hpactl one (:func:`hpactl.model.hpa.hpa_key`), so two objects of the same
name in the two sources never share a history, a selector or a record.

The built-in informer may be read without being served (``--hpa-sources=crd``): the
built-in controller scales those HPAs, and :meth:`HPASources.conflicting` names the
one an hpactl HPA would fight with (same namespace and ``scaleTargetRef`` kind and
name).
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from hpactl.cache.informer import Informer
from hpactl.cache.listers import HPA_TARGET_INDEX, target_key
from hpactl.cache.store import NAMESPACE_INDEX, ProjectionError, object_key

if TYPE_CHECKING:
    from hpactl.model.hpa import HPA

__all__ = ["HPASources"]


def _split(key: str) -> tuple[str, str, bool]:
    from hpactl.model.hpa import split_key

    return split_key(key)


def _key(informer_is_crd: bool, store_key: str) -> str:
    from hpactl.model.hpa import CR_KEY_PREFIX

    if not informer_is_crd:
        return store_key
    ns, _, name = store_key.partition("/")
    return f"{ns}/{CR_KEY_PREFIX}{name}"


class HPASources:
    """HPAs of the served sources, keyed by the controller's keys (module docstring)."""

    __slots__ = ("_builtin", "_crd", "_serve_builtin")

    def __init__(
        self,
        *,
        builtin: Informer[HPA] | None,
        crd: Informer[HPA] | None,
        serve_builtin: bool = True,
    ) -> None:
        if builtin is None and serve_builtin:
            raise ValueError("serving built-in HPAs needs their informer")
        self._builtin = builtin
        self._crd = crd
        self._serve_builtin = serve_builtin

    def _served(self) -> list[tuple[bool, Informer[HPA]]]:
        out: list[tuple[bool, Informer[HPA]]] = []
        if self._serve_builtin and self._builtin is not None:
            out.append((False, self._builtin))
        if self._crd is not None:
            out.append((True, self._crd))
        return out

    def _route(self, key_namespace: str, key_name: str) -> tuple[Informer[HPA] | None, str]:
        """The informer holding the object of key ``key_namespace/key_name``, and its store key."""
        ns, name, is_cr = _split(f"{key_namespace}/{key_name}")
        if is_cr:
            return self._crd, object_key(ns, name)
        return (self._builtin if self._serve_builtin else None), object_key(ns, name)

    @property
    def informer(self) -> Informer[HPA]:
        """The first served informer (``informer_for`` names the one of a key)."""
        return self._served()[0][1]

    @property
    def informers(self) -> builtins.list[Informer[HPA]]:
        return [inf for _, inf in self._served()]

    @property
    def crd(self) -> Informer[HPA] | None:
        return self._crd

    @property
    def builtin(self) -> Informer[HPA] | None:
        """The autoscaling/v2 informer, served or only read for conflicts."""
        return self._builtin

    def informer_for(self, key: str) -> Informer[HPA]:
        ns, _, name = key.partition("/")
        inf, _ = self._route(ns, name)
        return inf if inf is not None else self.informer

    def get(self, namespace: str, name: str) -> HPA | None:
        """The HPA of key ``namespace/name`` (the name part may carry ``hhpa:``)."""
        inf, skey = self._route(namespace, name)
        return None if inf is None else inf.store.get(skey)

    def get_error(self, namespace: str, name: str) -> ProjectionError | None:
        inf, skey = self._route(namespace, name)
        return None if inf is None else inf.store.get_error(skey)

    def exists(self, namespace: str, name: str) -> bool:
        inf, skey = self._route(namespace, name)
        return inf is not None and skey in inf.store

    def resource_version(self, namespace: str, name: str) -> str | None:
        inf, skey = self._route(namespace, name)
        return None if inf is None else inf.store.resource_version(skey)

    def by_target(self, kind: str, namespace: str, name: str) -> builtins.list[HPA]:
        """Served HPAs whose ``scaleTargetRef`` names this object."""
        tk = target_key(kind, namespace, name)
        out: builtins.list[HPA] = []
        for _, inf in self._served():
            out.extend(inf.store.by_index(HPA_TARGET_INDEX, tk))
        return sorted(out, key=lambda h: h.key)

    def list(self, namespace: str | None = None) -> builtins.list[HPA]:
        out: builtins.list[HPA] = []
        for _, inf in self._served():
            store = inf.store
            out.extend(
                store.list() if namespace is None else store.by_index(NAMESPACE_INDEX, namespace)
            )
        return sorted(out, key=lambda h: h.key)

    def keys(self) -> builtins.list[str]:
        """Every served key, malformed objects included."""
        out = [_key(is_crd, k) for is_crd, inf in self._served() for k in inf.store.keys()]  # noqa: SIM118
        return sorted(out)

    def conflicting(self, hpa: HPA) -> builtins.list[HPA]:
        """For an hpactl HPA: the built-in HPAs targeting the same object (the built-in
        controller scales them, served here or not). None for a built-in HPA."""
        if hpa.is_builtin or self._builtin is None:
            return []
        ref = hpa.spec.scale_target_ref
        tk = target_key(ref.kind, hpa.namespace, ref.name)
        return sorted(self._builtin.store.by_index(HPA_TARGET_INDEX, tk), key=lambda h: h.name)

    def crd_targeting(self, kind: str, namespace: str, name: str) -> builtins.list[str]:
        """Keys of the hpactl HPAs targeting this object (woken when a built-in one
        targeting it comes or goes)."""
        if self._crd is None:
            return []
        tk = target_key(kind, namespace, name)
        return sorted(h.key for h in self._crd.store.by_index(HPA_TARGET_INDEX, tk))
