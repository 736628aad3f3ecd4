"""Kubernetes RBAC authorization over the RBAC objects the emulator stores.

Mirrors ``plugin/pkg/auth/authorizer/rbac/rbac.go`` and
``pkg/apis/rbac/v1/evaluation_helpers.go``: ClusterRoleBindings grant everywhere,
RoleBindings only in their namespace (a RoleBinding may reference a ClusterRole);
rules match on verbs, apiGroups, resources (``*``, ``resource/subresource``,
``*/subresource``), resourceNames, and nonResourceURLs (exact or ``prefix*``).
ClusterRoles with an ``aggregationRule`` get the union of the rules of the
ClusterRoles their selectors match, as the clusterrole-aggregation controller
would write them.

The bootstrap policy every real cluster has is built in (``system:discovery``,
``system:basic-user``, ``system:public-info-viewer`` bound to
``system:authenticated``, the last also to ``system:unauthenticated``;
``system:monitoring`` for the group of that name,
``system:service-account-issuer-discovery`` for ``system:serviceaccounts``,
``cluster-admin`` for ``system:masters``; ``system:auth-delegator``, unbound, for
components doing delegated authentication); stored objects of the same name replace
the built-in ones, as an edited bootstrap object does. Members of ``system:masters``
are allowed everything before RBAC is consulted, as kube-apiserver's privileged-group
authorizer does.

Also here: :func:`request_attributes`, the apiserver's RequestInfo resolution of
an HTTP method + path + query into (verb, group, resource, subresource, namespace,
name), and :func:`forbidden_status`, the 403 Status a denied request gets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_CLUSTER_ROLES",
    "DEFAULT_CLUSTER_ROLE_BINDINGS",
    "Authorizer",
    "RequestAttributes",
    "forbidden_status",
    "request_attributes",
    "service_account_username",
]

_RBAC_GROUP = "rbac.authorization.k8s.io"
_SA_PREFIX = "system:serviceaccount:"


def service_account_username(namespace: str, name: str) -> str:
    return f"{_SA_PREFIX}{namespace}:{name}"


def _builtin_cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{_RBAC_GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
    }


def _builtin_binding(name: str, groups: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{_RBAC_GROUP}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": _RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": _RBAC_GROUP, "kind": "Group", "name": g} for g in groups],
    }


_PUBLIC_INFO_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]

# plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go (the parts a client meets).
DEFAULT_CLUSTER_ROLES: tuple[dict[str, Any], ...] = (
    _builtin_cluster_role(
        "cluster-admin",
        [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    ),
    _builtin_cluster_role(
        "system:discovery",
        [
            {
                "nonResourceURLs": [
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                "verbs": ["get"],
            }
        ],
    ),
    _builtin_cluster_role(
        "system:basic-user",
        [
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["authentication.k8s.io"],
                "resources": ["selfsubjectreviews"],
                "verbs": ["create"],
            },
        ],
    ),
    _builtin_cluster_role(
        "system:public-info-viewer",
        [{"nonResourceURLs": list(_PUBLIC_INFO_URLS), "verbs": ["get"]}],
    ),
    _builtin_cluster_role(
        "system:monitoring",
        [
            {
                "nonResourceURLs": [
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
                "verbs": ["get"],
            }
        ],
    ),
    # Bound by components that authenticate and authorize their own clients through the
    # API server (delegated authn/authz: TokenReview and SubjectAccessReview).
    _builtin_cluster_role(
        "system:auth-delegator",
        [
            {
                "apiGroups": ["authentication.k8s.io"],
                "resources": ["tokenreviews"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["subjectaccessreviews"],
                "verbs": ["create"],
            },
        ],
    ),
    _builtin_cluster_role(
        "system:service-account-issuer-discovery",
        [
            {
                "nonResourceURLs": [
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
                "verbs": ["get"],
            }
        ],
    ),
)

DEFAULT_CLUSTER_ROLE_BINDINGS: tuple[dict[str, Any], ...] = (
    _builtin_binding("cluster-admin", ["system:masters"]),
    _builtin_binding("system:discovery", ["system:authenticated"]),
    _builtin_binding("system:basic-user", ["system:authenticated"]),
    _builtin_binding(
        "system:public-info-viewer", ["system:authenticated", "system:unauthenticated"]
    ),
    _builtin_binding("system:monitoring", ["system:monitoring"]),
    _builtin_binding("system:service-account-issuer-discovery", ["system:serviceaccounts"]),
)


@dataclass(frozen=True, slots=True)
class RequestAttributes:
    """What the apiserver's RequestInfoFactory derives from a request."""

    resource_request: bool
    verb: str
    path: str
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


# --------------------------------------------------------------------------- rule matching


def _verb_matches(rule: Mapping[str, Any], verb: str) -> bool:
    return any(v in ("*", verb) for v in rule.get("verbs") or ())


def _api_group_matches(rule: Mapping[str, Any], group: str) -> bool:
    return any(g in ("*", group) for g in rule.get("apiGroups") or ())


def _resource_matches(rule: Mapping[str, Any], combined: str, subresource: str) -> bool:
    for res in rule.get("resources") or ():
        if res in ("*", combined):
            return True
        # "*/scale" matches the scale subresource of every resource.
        if (
            subresource
            and len(res) == len(subresource) + 2
            and res.startswith("*/")
            and res.endswith(subresource)
        ):
            return True
    return False


def _resource_name_matches(rule: Mapping[str, Any], name: str) -> bool:
    names = rule.get("resourceNames") or ()
    return not names or name in names


def _non_resource_url_matches(rule: Mapping[str, Any], path: str) -> bool:
    for url in rule.get("nonResourceURLs") or ():
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def _rule_allows(rule: Mapping[str, Any], attrs: RequestAttributes) -> bool:
    if attrs.resource_request:
        combined = attrs.resource
        if attrs.subresource:
            combined = f"{attrs.resource}/{attrs.subresource}"
        return (
            _verb_matches(rule, attrs.verb)
            and _api_group_matches(rule, attrs.api_group)
            and _resource_matches(rule, combined, attrs.subresource)
            and _resource_name_matches(rule, attrs.name)
        )
    return _verb_matches(rule, attrs.verb) and _non_resource_url_matches(rule, attrs.path)


def _subject_applies(
    subject: Mapping[str, Any], user: str, groups: Sequence[str], binding_ns: str
) -> bool:
    kind = subject.get("kind")
    name = subject.get("name", "")
    if kind == "User":
        return bool(user == name)
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        # A RoleBinding's ServiceAccount subject defaults to the binding's namespace.
        sa_ns = subject.get("namespace") or binding_ns
        if not sa_ns:
            return False
        return bool(user == service_account_username(sa_ns, name))
    return False


class Authorizer:
    """RBAC over ``lookup(kind)``, which returns every stored raw object of kind
    ``Role``, ``ClusterRole``, ``RoleBinding`` or ``ClusterRoleBinding``."""

    def __init__(
        self, lookup: Callable[[str], list[dict[str, Any]]], *, builtin_policy: bool = True
    ) -> None:
        self._lookup = lookup
        self._builtin = builtin_policy

    # ----------------------------------------------------------------- objects

    def _cluster_roles(self) -> dict[str, Mapping[str, Any]]:
        roles: dict[str, Mapping[str, Any]] = {}
        if self._builtin:
            roles.update({r["metadata"]["name"]: r for r in DEFAULT_CLUSTER_ROLES})
        for r in self._lookup("ClusterRole"):
            roles[str((r.get("metadata") or {}).get("name", ""))] = r
        return roles

    def _cluster_role_bindings(self) -> list[Mapping[str, Any]]:
        bindings: dict[str, Mapping[str, Any]] = {}
        if self._builtin:
            bindings.update({b["metadata"]["name"]: b for b in DEFAULT_CLUSTER_ROLE_BINDINGS})
        for b in self._lookup("ClusterRoleBinding"):
            bindings[str((b.get("metadata") or {}).get("name", ""))] = b
        return list(bindings.values())

    @staticmethod
    def _cluster_role_rules(
        role: Mapping[str, Any], roles: Mapping[str, Mapping[str, Any]]
    ) -> list[Mapping[str, Any]]:
        aggregation = role.get("aggregationRule")
        if not aggregation:
            return list(role.get("rules") or ())
        # Imported here: only aggregated ClusterRoles need label selectors.
        from hpactl.model.selectors import selector_from_label_selector

        selectors = [
            selector_from_label_selector(s) for s in aggregation.get("clusterRoleSelectors") or ()
        ]
        rules: list[Mapping[str, Any]] = []
        for name in sorted(roles):
            other = roles[name]
            if other is role:
                continue
            labels = (other.get("metadata") or {}).get("labels") or {}
            if any(sel.matches(labels) for sel in selectors):
                for rule in other.get("rules") or ():
                    if rule not in rules:
                        rules.append(rule)
        return rules

    def _visit_rules(
        self, user: str, groups: Sequence[str], namespace: str
    ) -> tuple[Iterable[Mapping[str, Any]], list[str]]:
        """All rules that apply to the user in namespace (cluster-wide ones first),
        plus the errors met (bindings whose role is missing)."""
        errors: list[str] = []
        rules: list[Mapping[str, Any]] = []
        cluster_roles = self._cluster_roles()
        for binding in self._cluster_role_bindings():
            if not any(
                _subject_applies(s, user, groups, "") for s in binding.get("subjects") or ()
            ):
                continue
            ref = binding.get("roleRef") or {}
            if ref.get("kind") != "ClusterRole":
                continue
            role = cluster_roles.get(str(ref.get("name", "")))
            if role is None:
                errors.append(f'clusterrole.{_RBAC_GROUP} "{ref.get("name", "")}" not found')
                continue
            rules.extend(self._cluster_role_rules(role, cluster_roles))
        if namespace:
            roles = {
                str((r.get("metadata") or {}).get("name", "")): r
                for r in self._lookup("Role")
                if (r.get("metadata") or {}).get("namespace") == namespace
            }
            for binding in self._lookup("RoleBinding"):
                if (binding.get("metadata") or {}).get("namespace") != namespace:
                    continue
                if not any(
                    _subject_applies(s, user, groups, namespace)
                    for s in binding.get("subjects") or ()
                ):
                    continue
                ref = binding.get("roleRef") or {}
                ref_name = str(ref.get("name", ""))
                if ref.get("kind") == "ClusterRole":
                    role = cluster_roles.get(ref_name)
                    if role is None:
                        errors.append(f'clusterrole.{_RBAC_GROUP} "{ref_name}" not found')
                        continue
                    rules.extend(self._cluster_role_rules(role, cluster_roles))
                elif ref.get("kind") == "Role":
                    role = roles.get(ref_name)
                    if role is None:
                        errors.append(f'role.{_RBAC_GROUP} "{ref_name}" not found')
                        continue
                    rules.extend(role.get("rules") or ())
        return rules, errors

    # ----------------------------------------------------------------- decisions

    def check(self, user: str, groups: Sequence[str], attrs: RequestAttributes) -> tuple[bool, str]:
        """(allowed, reason); reason is what a denial appends to its message
        (``RBAC: ...`` when a binding names a missing role, else empty)."""
        if "system:masters" in groups:
            return True, ""
        rules, errors = self._visit_rules(
            user, groups, attrs.namespace if attrs.resource_request else ""
        )
        if any(_rule_allows(rule, attrs) for rule in rules):
            return True, ""
        if not errors:
            return False, ""
        # utilerrors.NewAggregate's Error(): distinct messages, bracketed when several.
        distinct = list(dict.fromkeys(errors))
        text = distinct[0] if len(distinct) == 1 else "[" + ", ".join(distinct) + "]"
        return False, f"RBAC: {text}"

    def authorize(
        self,
        user: str,
        groups: Sequence[str],
        verb: str,
        api_group: str,
        resource: str,
        subresource: str,
        namespace: str,
        name: str,
    ) -> bool:
        """A resource request (namespace "" = cluster scope)."""
        attrs = RequestAttributes(
            resource_request=True,
            verb=verb,
            path="",
            api_group=api_group,
            resource=resource,
            subresource=subresource,
            namespace=namespace,
            name=name,
        )
        return self.check(user, groups, attrs)[0]

    def authorize_path(self, user: str, groups: Sequence[str], verb: str, path: str) -> bool:
        """A non-resource request (``/api``, ``/apis/...``, ``/version``, ``/openapi/v2``...)."""
        return self.check(
            user, groups, RequestAttributes(resource_request=False, verb=verb, path=path)
        )[0]


# --------------------------------------------------------------------------- request info

_SPECIAL_VERBS = frozenset({"proxy", "watch"})
# Namespace subresources (not a resource inside the namespace) and the verb of each
# HTTP method, as RequestInfoFactory has them (the server resolves paths alike).
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
VERB_BY_METHOD = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


def _watch_param(query: Mapping[str, str]) -> bool:
    value = query.get("watch")
    if value is None:
        return False
    # strconv.ParseBool; anything else is treated as true by RequestInfoFactory's fallback.
    return value.lower() not in ("false", "0", "f")


def _name_from_field_selector(query: Mapping[str, str]) -> str:
    """fields.Selector.RequiresExactMatch("metadata.name") of a list/watch."""
    for part in query.get("fieldSelector", "").split(","):
        if "!=" in part:
            continue
        sep = "==" if "==" in part else "="
        key, found, value = part.partition(sep)
        if not found or key.strip() != "metadata.name":
            continue
        value = value.strip()
        # path.IsValidPathSegmentName
        if value and value not in (".", "..") and "/" not in value and "%" not in value:
            return value
    return ""


def request_attributes(
    method: str, path: str, query: Mapping[str, str] | None = None
) -> RequestAttributes:
    """The apiserver's RequestInfoFactory.NewRequestInfo for a method, URL path and query."""
    query = query or {}
    method = method.upper()
    # Non-resource requests keep the lower-cased HTTP method as their verb ("post").
    non_resource = RequestAttributes(resource_request=False, verb=method.lower(), path=path)
    verb = VERB_BY_METHOD.get(method, method.lower())
    parts = [p for p in path.strip("/").split("/")] if path.strip("/") else []
    if not parts or parts[0] not in ("api", "apis"):
        return non_resource
    if parts[0] == "api":
        if len(parts) < 2:
            return non_resource
        group, version, current = "", parts[1], parts[2:]
    else:
        if len(parts) < 3:
            return non_resource
        group, version, current = parts[1], parts[2], parts[3:]
    if not current:
        return non_resource
    special = ""
    if current[0] in _SPECIAL_VERBS:
        if len(current) < 2:
            return non_resource
        special = current[0]
        current = current[1:]
    namespace = ""
    if current[0] == "namespaces" and len(current) > 1:
        namespace = current[1]
        if len(current) > 2 and current[2] not in NAMESPACE_SUBRESOURCES:
            current = current[2:]
    resource = current[0] if current else ""
    name = current[1] if len(current) > 1 else ""
    subresource = current[2] if len(current) > 2 else ""
    if special:
        verb = special
    if not name and verb == "get":
        verb = "watch" if _watch_param(query) else "list"
    if not name and verb in ("list", "watch"):
        name = _name_from_field_selector(query)
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestAttributes(
        resource_request=True,
        verb=verb,
        path=path,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )


# --------------------------------------------------------------------------- 403


def forbidden_status(
    user: str,
    verb: str,
    api_group: str,
    resource: str,
    subresource: str,
    namespace: str,
    name: str,
    *,
    path: str = "",
    reason: str = "",
) -> dict[str, Any]:
    """The Status kube-apiserver answers a denied request with (HTTP 403).

    A non-resource request is given by ``resource == ""`` and ``path``. ``reason`` is
    the authorizer's reason (see :meth:`Authorizer.check`), appended after ": ".
    """
    if not resource:
        msg = f'User "{user}" cannot {verb} path "{path}"'
    else:
        shown = f"{resource}/{subresource}" if subresource else resource
        if namespace:
            msg = f'User "{user}" cannot {verb} resource "{shown}" in API group "{api_group}" in the namespace "{namespace}"'
        else:
            msg = f'User "{user}" cannot {verb} resource "{shown}" in API group "{api_group}" at the cluster scope'
    # responsewriters.Forbidden HTML-escapes the message (not the reason).
    msg = msg.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if reason:
        msg = f"{msg}: {reason}"
    details: dict[str, str] = {}
    if not resource:
        message = f"forbidden: {msg}"
    else:
        qualified = f"{resource}.{api_group}" if api_group else resource
        message = (
            f'{qualified} "{name}" is forbidden: {msg}'
            if name
            else f"{qualified} is forbidden: {msg}"
        )
        if name:
            details["name"] = name
        if api_group:
            details["group"] = api_group
        details["kind"] = resource
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }
