"""API paths: build them, and read back what a path addresses.

``resource_path(group, version, resource, *, namespace=None, name=None,
subresource=None) -> str``
    ``("apps", "v1", "deployments", namespace="ns", name="web", subresource="scale")``
    → ``/apis/apps/v1/namespaces/ns/deployments/web/scale``; group "" → ``/api/v1/...``.

``parse_path(path) -> RequestInfo``
    The inverse, used for error texts (client-go names ``resource.group`` and the
    object name in generic errors) and for request metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

__all__ = ["RequestInfo", "parse_path", "resource_path"]


def _seg(s: str) -> str:
    return quote(s, safe="*")


def resource_path(
    group: str,
    version: str,
    resource: str,
    *,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    parts = ["/api", version] if group == "" else ["/apis", group, version]
    if namespace is not None:
        parts += ["namespaces", _seg(namespace)]
    parts.append(resource)
    if name is not None:
        parts.append(_seg(name))
        if subresource:
            parts.append(subresource)
    return "/".join(parts)


@dataclass(frozen=True, slots=True)
class RequestInfo:
    group: str = ""
    version: str = ""
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""

    @property
    def qualified_resource(self) -> str:
        """Go's ``schema.GroupResource.String()``: ``pods``, ``pods.metrics.k8s.io``."""
        if not self.resource:
            return ""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def metric_resource(self) -> str:
        """Label for request metrics: ``deployments.apps/scale``, or the path kind."""
        base = self.qualified_resource or "discovery"
        return f"{base}/{self.subresource}" if self.subresource else base


def parse_path(path: str) -> RequestInfo:
    path = path.split("?", 1)[0]
    segs = [s for s in path.split("/") if s]
    if not segs:
        return RequestInfo()
    if segs[0] == "api":
        group, rest = "", segs[1:]
    elif segs[0] == "apis":
        if len(segs) < 2:
            return RequestInfo()
        group, rest = segs[1], segs[2:]
    else:
        return RequestInfo()
    if not rest:
        return RequestInfo(group=group)
    version, rest = rest[0], rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    sub = "/".join(rest[2:]) if len(rest) > 2 else ""
    return RequestInfo(
        group=group,
        version=version,
        namespace=namespace,
        resource=resource,
        name=name,
        subresource=sub,
    )
