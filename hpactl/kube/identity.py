"""The identity of a stored object as the kube helpers need it (the HPA model has it)."""

from __future__ import annotations

from typing import Protocol

__all__ = ["ObjectIdentity"]


class ObjectIdentity(Protocol):
    """Anything naming an object: ``hpactl.model.hpa.HPA`` and the like."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def resource_version(self) -> str: ...
