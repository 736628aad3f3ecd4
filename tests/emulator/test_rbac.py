"""RBAC authorizer, request attributes and 403 Status, as tables.

Cases follow upstream's rbac_test.go / evaluation_helpers_test.go semantics and
bootstrap policy; messages are kube-apiserver's forbiddenMessage + NewForbidden.
"""

from __future__ import annotations

from typing import Any

import pytest

from hpactl.emulator.rbac import (
    Authorizer,
    RequestAttributes,
    forbidden_status,
    request_attributes,
    service_account_username,
)

SA = service_account_username("hpactl", "controller")
SA_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:hpactl", "system:authenticated"]


def cluster_role(name: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "kind": "ClusterRole",
        "metadata": {"name": name, **extra.pop("meta", {})},
        "rules": rules,
        **extra,
    }


def role(ns: str, name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "Role", "metadata": {"namespace": ns, "name": name}, "rules": rules}


def crb(name: str, role_name: str, subjects: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": role_name,
        },
        "subjects": subjects,
    }


def rb(
    ns: str, name: str, ref_kind: str, ref_name: str, subjects: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "kind": "RoleBinding",
        "metadata": {"namespace": ns, "name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": ref_name},
        "subjects": subjects,
    }


def sa_subject(ns: str | None = "hpactl", name: str = "controller") -> dict[str, Any]:
    s: dict[str, Any] = {"kind": "ServiceAccount", "name": name}
    if ns is not None:
        s["namespace"] = ns
    return s


def authorizer(*objects: dict[str, Any]) -> Authorizer:
    def lookup(kind: str) -> list[dict[str, Any]]:
        return [o for o in objects if o["kind"] == kind]

    return Authorizer(lookup)


# The ClusterRole the HPA controller needs (architecture notes, manifests/).
HPA_ROLE = cluster_role(
    "hpactl",
    [
        {
            "apiGroups": ["autoscaling"],
            "resources": ["horizontalpodautoscalers"],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": ["autoscaling"],
            "resources": ["horizontalpodautoscalers/status"],
            "verbs": ["update", "patch"],
        },
        {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["get", "update", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
        {
            "apiGroups": ["metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io"],
            "resources": ["*"],
            "verbs": ["get", "list"],
        },
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "create", "update"],
            "resourceNames": [],
        },
    ],
)
HPA_BINDING = crb("hpactl", "hpactl", [sa_subject()])


# (verb, group, resource, subresource, namespace, name, allowed)
HPA_CASES = [
    ("list", "autoscaling", "horizontalpodautoscalers", "", "", "", True),
    ("watch", "autoscaling", "horizontalpodautoscalers", "", "", "", True),
    ("get", "autoscaling", "horizontalpodautoscalers", "", "default", "web", True),
    ("update", "autoscaling", "horizontalpodautoscalers", "status", "default", "web", True),
    ("update", "autoscaling", "horizontalpodautoscalers", "", "default", "web", False),
    ("delete", "autoscaling", "horizontalpodautoscalers", "", "default", "web", False),
    ("get", "apps", "deployments", "scale", "default", "web", True),
    ("update", "apps", "deployments", "scale", "default", "web", True),
    ("patch", "example.com", "widgets", "scale", "default", "w", True),
    ("get", "apps", "deployments", "", "default", "web", False),
    ("update", "apps", "deployments", "status", "default", "web", False),
    ("list", "", "pods", "", "", "", True),
    ("get", "", "pods", "", "default", "p", False),
    ("list", "metrics.k8s.io", "pods", "", "default", "", True),
    ("get", "custom.metrics.k8s.io", "pods", "requests", "default", "*", True),
    ("list", "external.metrics.k8s.io", "queue_length", "", "default", "", True),
    ("create", "metrics.k8s.io", "pods", "", "default", "", False),
    ("create", "", "events", "", "default", "", True),
    ("patch", "events.k8s.io", "events", "", "default", "e", True),
    ("update", "coordination.k8s.io", "leases", "", "kube-system", "hpactl", True),
    ("delete", "coordination.k8s.io", "leases", "", "kube-system", "hpactl", False),
    ("list", "", "secrets", "", "", "", False),
]


@pytest.mark.parametrize(("verb", "group", "resource", "sub", "ns", "name", "allowed"), HPA_CASES)
def test_hpa_cluster_role(
    verb: str, group: str, resource: str, sub: str, ns: str, name: str, allowed: bool
) -> None:
    authz = authorizer(HPA_ROLE, HPA_BINDING)
    assert authz.authorize(SA, SA_GROUPS, verb, group, resource, sub, ns, name) is allowed
    # Without the binding nothing of the above is allowed.
    assert (
        authorizer(HPA_ROLE).authorize(SA, SA_GROUPS, verb, group, resource, sub, ns, name) is False
    )


RULE_CASES: list[Any] = [
    # rule, (verb, group, resource, subresource, name), allowed
    pytest.param(
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        ("delete", "apps", "deployments", "", "x"),
        True,
        id="all-stars",
    ),
    pytest.param(
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        ("get", "apps", "deployments", "scale", "x"),
        True,
        id="star-covers-subresource",
    ),
    pytest.param(
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
        ("get", "apps", "deployments", "scale", "x"),
        False,
        id="resource-excludes-subresource",
    ),
    pytest.param(
        {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get"]},
        ("get", "apps", "deployments", "", "x"),
        False,
        id="subresource-excludes-resource",
    ),
    pytest.param(
        {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get"]},
        ("get", "apps", "deployments", "scale", "x"),
        True,
        id="exact-subresource",
    ),
    pytest.param(
        {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]},
        ("get", "apps", "statefulsets", "scale", "x"),
        True,
        id="star-slash-subresource",
    ),
    pytest.param(
        {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]},
        ("get", "apps", "statefulsets", "status", "x"),
        False,
        id="star-slash-other-subresource",
    ),
    pytest.param(
        {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]},
        ("get", "apps", "statefulsets", "", "x"),
        False,
        id="star-slash-no-subresource",
    ),
    pytest.param(
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
        ("get", "", "deployments", "", "x"),
        False,
        id="group-mismatch",
    ),
    pytest.param(
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        ("list", "", "pods", "", ""),
        False,
        id="verb-mismatch",
    ),
    pytest.param(
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]},
        ("deletecollection", "", "pods", "", ""),
        True,
        id="verb-star",
    ),
    pytest.param(
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]},
        ("get", "", "pods", "", "a"),
        True,
        id="resource-name-match",
    ),
    pytest.param(
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]},
        ("get", "", "pods", "", "b"),
        False,
        id="resource-name-mismatch",
    ),
    pytest.param(
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"], "resourceNames": ["a"]},
        ("list", "", "pods", "", ""),
        False,
        id="resource-names-never-match-unnamed",
    ),
    pytest.param(
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": []},
        ("get", "", "pods", "", "z"),
        True,
        id="empty-resource-names",
    ),
    pytest.param(
        {"apiGroups": [""], "resources": [], "verbs": ["get"]},
        ("get", "", "pods", "", "z"),
        False,
        id="no-resources",
    ),
    pytest.param(
        {"nonResourceURLs": ["/apis/*"], "verbs": ["get"]},
        ("get", "", "pods", "", "z"),
        False,
        id="url-rule-ignores-resources",
    ),
]


@pytest.mark.parametrize(("rule", "request_", "allowed"), RULE_CASES)
def test_rule_matching(
    rule: dict[str, Any], request_: tuple[str, str, str, str, str], allowed: bool
) -> None:
    verb, group, resource, sub, name = request_
    authz = authorizer(
        cluster_role("r", [rule]), crb("b", "r", [{"kind": "User", "name": "alice"}])
    )
    assert (
        authz.authorize(
            "alice", ["system:authenticated"], verb, group, resource, sub, "default", name
        )
        is allowed
    )
    assert (
        authz.authorize(
            "bob", ["system:authenticated"], verb, group, resource, sub, "default", name
        )
        is False
    )


SUBJECT_CASES: list[Any] = [
    pytest.param({"kind": "User", "name": "alice"}, "alice", [], "", True, id="user"),
    pytest.param(
        {"kind": "User", "name": "alice"}, "Alice", [], "", False, id="user-case-sensitive"
    ),
    pytest.param({"kind": "Group", "name": "devs"}, "bob", ["devs"], "", True, id="group"),
    pytest.param({"kind": "Group", "name": "devs"}, "devs", [], "", False, id="group-not-user"),
    pytest.param(
        {"kind": "ServiceAccount", "namespace": "hpactl", "name": "controller"},
        SA,
        [],
        "",
        True,
        id="sa",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "namespace": "other", "name": "controller"},
        SA,
        [],
        "",
        False,
        id="sa-other-namespace",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "name": "controller"},
        SA,
        [],
        "",
        False,
        id="sa-without-namespace-in-crb",
    ),
    pytest.param(
        {"kind": "ServiceAccount", "name": "controller"},
        SA,
        [],
        "hpactl",
        True,
        id="sa-defaults-to-rolebinding-namespace",
    ),
    pytest.param(
        {"kind": "Group", "name": "system:serviceaccounts:hpactl"},
        SA,
        SA_GROUPS,
        "",
        True,
        id="sa-namespace-group",
    ),
]


@pytest.mark.parametrize(("subject", "user", "groups", "binding_ns", "allowed"), SUBJECT_CASES)
def test_subjects(
    subject: dict[str, Any], user: str, groups: list[str], binding_ns: str, allowed: bool
) -> None:
    rules = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]
    if binding_ns:
        objs = [role(binding_ns, "r", rules), rb(binding_ns, "b", "Role", "r", [subject])]
        ns = binding_ns
    else:
        objs = [cluster_role("r", rules), crb("b", "r", [subject])]
        ns = "anywhere"
    assert (
        authorizer(*objs).authorize(user, groups, "get", "", "configmaps", "", ns, "c") is allowed
    )


def test_rolebinding_grants_only_in_its_namespace() -> None:
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    authz = authorizer(
        role("team", "reader", rules),
        rb("team", "b", "Role", "reader", [sa_subject()]),
        cluster_role("pod-lister", rules),
        rb("other", "b2", "ClusterRole", "pod-lister", [sa_subject()]),
    )
    assert authz.authorize(SA, SA_GROUPS, "list", "", "pods", "", "team", "")
    assert authz.authorize(SA, SA_GROUPS, "list", "", "pods", "", "other", "")
    assert not authz.authorize(SA, SA_GROUPS, "list", "", "pods", "", "default", "")
    # A RoleBinding never grants at the cluster scope, even to a ClusterRole.
    assert not authz.authorize(SA, SA_GROUPS, "list", "", "pods", "", "", "")


def test_role_from_other_namespace_is_not_used() -> None:
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    authz = authorizer(
        role("elsewhere", "reader", rules), rb("team", "b", "Role", "reader", [sa_subject()])
    )
    allowed, reason = authz.check(
        SA, SA_GROUPS, RequestAttributes(True, "list", "", "", "v1", "pods", "", "team", "")
    )
    assert not allowed
    assert reason == 'RBAC: role.rbac.authorization.k8s.io "reader" not found'


def test_missing_cluster_roles_are_reported_as_reason() -> None:
    authz = authorizer(
        crb("b1", "nope", [{"kind": "User", "name": "u"}]),
        crb("b2", "gone", [{"kind": "User", "name": "u"}]),
    )
    allowed, reason = authz.check(
        "u", [], RequestAttributes(True, "get", "", "", "v1", "pods", "", "default", "p")
    )
    assert not allowed
    assert reason == (
        'RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, '
        'clusterrole.rbac.authorization.k8s.io "gone" not found]'
    )


def test_repeated_missing_role_is_reported_once() -> None:
    authz = authorizer(
        crb("b1", "nope", [{"kind": "User", "name": "u"}]),
        crb("b2", "nope", [{"kind": "Group", "name": "g"}]),
    )
    _, reason = authz.check(
        "u", ["g"], RequestAttributes(True, "get", "", "", "v1", "pods", "", "default", "p")
    )
    assert reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found'


def test_clusterrolebinding_to_a_role_is_ignored() -> None:
    binding = crb("b", "r", [{"kind": "User", "name": "u"}])
    binding["roleRef"]["kind"] = "Role"
    rules = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    authz = authorizer(role("default", "r", rules), binding)
    assert not authz.authorize("u", [], "get", "", "pods", "", "default", "p")


@pytest.mark.parametrize(
    ("path", "groups", "allowed"),
    [
        ("/api", ["system:authenticated"], True),
        ("/api/v1", ["system:authenticated"], True),
        ("/apis", ["system:authenticated"], True),
        ("/apis/autoscaling/v2", ["system:authenticated"], True),
        ("/version", ["system:authenticated"], True),
        ("/openapi/v2", ["system:authenticated"], True),
        ("/openapi/v3/apis/apps/v1", ["system:authenticated"], True),
        ("/healthz", ["system:unauthenticated"], True),
        ("/version", ["system:unauthenticated"], True),
        ("/api", ["system:unauthenticated"], False),
        ("/metrics", ["system:authenticated"], False),
        ("/logs", ["system:authenticated"], False),
        ("/metrics", ["system:masters"], True),
        ("/metrics", ["system:monitoring"], True),
        ("/readyz/etcd", ["system:monitoring"], True),
        ("/readyz/etcd", ["system:authenticated"], False),
        ("/openid/v1/jwks", ["system:serviceaccounts", "system:authenticated"], True),
        ("/openid/v1/jwks", ["system:authenticated"], False),
    ],
)
def test_default_discovery_access(path: str, groups: list[str], allowed: bool) -> None:
    authz = authorizer()
    assert authz.authorize_path("someone", groups, "get", path) is allowed
    if allowed and "system:masters" not in groups:
        assert not authz.authorize_path("someone", groups, "post", path)


def test_basic_user_may_review_itself_and_nothing_more() -> None:
    authz = authorizer()
    groups = ["system:authenticated"]
    assert authz.authorize(
        "u", groups, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""
    )
    assert authz.authorize(
        "u", groups, "create", "authorization.k8s.io", "selfsubjectrulesreviews", "", "", ""
    )
    assert not authz.authorize(
        "u", groups, "create", "authorization.k8s.io", "subjectaccessreviews", "", "", ""
    )
    assert not authz.authorize("u", groups, "list", "", "pods", "", "default", "")
    assert not authz.authorize(
        "u", [], "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""
    )


def test_stored_bootstrap_object_replaces_builtin() -> None:
    # An edited system:discovery that only allows /version.
    edited = cluster_role("system:discovery", [{"nonResourceURLs": ["/version"], "verbs": ["get"]}])
    authz = authorizer(edited)
    assert authz.authorize_path("u", ["system:authenticated"], "get", "/version")
    assert not authz.authorize_path("u", ["system:authenticated"], "get", "/apis")
    assert not Authorizer(lambda kind: [], builtin_policy=False).authorize_path(
        "u", ["system:authenticated"], "get", "/version"
    )


def test_non_resource_url_wildcards() -> None:
    authz = authorizer(
        cluster_role("r", [{"nonResourceURLs": ["/logs*", "/exact"], "verbs": ["get"]}]),
        crb("b", "r", [{"kind": "User", "name": "u"}]),
    )
    assert authz.authorize_path("u", [], "get", "/logs")
    assert authz.authorize_path("u", [], "get", "/logs/kube-apiserver.log")
    assert authz.authorize_path("u", [], "get", "/logsx")
    assert authz.authorize_path("u", [], "get", "/exact")
    assert not authz.authorize_path("u", [], "get", "/exact/more")


def test_aggregated_cluster_role_collects_matching_roles() -> None:
    aggregated = cluster_role(
        "monitoring",
        [],
        aggregationRule={
            "clusterRoleSelectors": [
                {"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}
            ]
        },
    )
    part = cluster_role(
        "pods-reader",
        [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        meta={"labels": {"rbac.example.com/aggregate-to-monitoring": "true"}},
    )
    other = cluster_role(
        "secrets-reader", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    )
    authz = authorizer(
        aggregated, part, other, crb("b", "monitoring", [{"kind": "User", "name": "u"}])
    )
    assert authz.authorize("u", [], "get", "", "pods", "", "default", "p")
    assert not authz.authorize("u", [], "get", "", "secrets", "", "default", "s")


def test_lookup_is_read_live() -> None:
    objects: list[dict[str, Any]] = [HPA_ROLE]
    authz = Authorizer(lambda kind: [o for o in objects if o["kind"] == kind])
    assert not authz.authorize(SA, SA_GROUPS, "list", "", "pods", "", "", "")
    objects.append(HPA_BINDING)
    assert authz.authorize(SA, SA_GROUPS, "list", "", "pods", "", "", "")


# ------------------------------------------------------------------ request attributes

ATTR_CASES: list[Any] = [
    pytest.param(
        "GET", "/api/v1/pods", {}, (True, "list", "", "pods", "", "", ""), id="list-all-namespaces"
    ),
    pytest.param(
        "GET",
        "/api/v1/pods",
        {"watch": "true"},
        (True, "watch", "", "pods", "", "", ""),
        id="watch-param",
    ),
    pytest.param(
        "GET", "/api/v1/pods", {"watch": "1"}, (True, "watch", "", "pods", "", "", ""), id="watch-1"
    ),
    pytest.param(
        "GET",
        "/api/v1/pods",
        {"watch": "false"},
        (True, "list", "", "pods", "", "", ""),
        id="watch-false",
    ),
    pytest.param(
        "GET",
        "/api/v1/watch/namespaces/d/pods",
        {},
        (True, "watch", "", "pods", "", "d", ""),
        id="watch-prefix",
    ),
    pytest.param(
        "GET", "/api/v1/namespaces/d/pods/p", {}, (True, "get", "", "pods", "", "d", "p"), id="get"
    ),
    pytest.param(
        "GET",
        "/api/v1/namespaces/d/pods",
        {"fieldSelector": "metadata.name=p"},
        (True, "list", "", "pods", "", "d", "p"),
        id="list-by-name",
    ),
    pytest.param(
        "GET",
        "/api/v1/namespaces/d/pods",
        {"fieldSelector": "metadata.name!=p"},
        (True, "list", "", "pods", "", "d", ""),
        id="list-not-name",
    ),
    pytest.param(
        "POST",
        "/api/v1/namespaces/d/events",
        {},
        (True, "create", "", "events", "", "d", ""),
        id="create",
    ),
    pytest.param(
        "PUT",
        "/apis/apps/v1/namespaces/d/deployments/web/scale",
        {},
        (True, "update", "apps", "deployments", "scale", "d", "web"),
        id="update-scale",
    ),
    pytest.param(
        "PATCH",
        "/apis/autoscaling/v2/namespaces/d/horizontalpodautoscalers/h/status",
        {},
        (True, "patch", "autoscaling", "horizontalpodautoscalers", "status", "d", "h"),
        id="patch-status",
    ),
    pytest.param(
        "DELETE",
        "/api/v1/namespaces/d/pods/p",
        {},
        (True, "delete", "", "pods", "", "d", "p"),
        id="delete",
    ),
    pytest.param(
        "DELETE",
        "/api/v1/namespaces/d/pods",
        {},
        (True, "deletecollection", "", "pods", "", "d", ""),
        id="deletecollection",
    ),
    pytest.param(
        "GET",
        "/api/v1/namespaces/d",
        {},
        (True, "get", "", "namespaces", "", "d", "d"),
        id="namespace-get",
    ),
    pytest.param(
        "PUT",
        "/api/v1/namespaces/d/finalize",
        {},
        (True, "update", "", "namespaces", "finalize", "d", "d"),
        id="namespace-finalize",
    ),
    pytest.param(
        "GET",
        "/api/v1/namespaces",
        {},
        (True, "list", "", "namespaces", "", "", ""),
        id="namespaces-list",
    ),
    pytest.param(
        "GET",
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/d/pods/*/requests",
        {"labelSelector": "app=web"},
        (True, "get", "custom.metrics.k8s.io", "pods", "requests", "d", "*"),
        id="custom-metrics-per-pod",
    ),
    pytest.param(
        "GET",
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/d/metrics/qps",
        {},
        (True, "get", "custom.metrics.k8s.io", "metrics", "", "d", "qps"),
        id="custom-metrics-namespace",
    ),
    pytest.param(
        "GET",
        "/apis/external.metrics.k8s.io/v1beta1/namespaces/d/queue_length",
        {},
        (True, "list", "external.metrics.k8s.io", "queue_length", "", "d", ""),
        id="external-metric",
    ),
    pytest.param("GET", "/apis", {}, (False, "get", "", "", "", "", ""), id="apis"),
    pytest.param("GET", "/apis/apps", {}, (False, "get", "", "", "", "", ""), id="group"),
    pytest.param(
        "GET", "/apis/apps/v1", {}, (False, "get", "", "", "", "", ""), id="group-version"
    ),
    pytest.param("GET", "/api", {}, (False, "get", "", "", "", "", ""), id="api"),
    pytest.param("GET", "/api/v1", {}, (False, "get", "", "", "", "", ""), id="api-v1"),
    pytest.param("GET", "/version", {}, (False, "get", "", "", "", "", ""), id="version"),
    pytest.param(
        "POST", "/openapi/v2", {}, (False, "post", "", "", "", "", ""), id="non-resource-post"
    ),
    pytest.param(
        "HEAD", "/healthz", {}, (False, "head", "", "", "", "", ""), id="non-resource-head"
    ),
]


@pytest.mark.parametrize(("method", "path", "query", "expected"), ATTR_CASES)
def test_request_attributes(
    method: str, path: str, query: dict[str, str], expected: tuple[Any, ...]
) -> None:
    a = request_attributes(method, path, query)
    assert (
        a.resource_request,
        a.verb,
        a.api_group,
        a.resource,
        a.subresource,
        a.namespace,
        a.name,
    ) == expected
    assert a.path == path


# ------------------------------------------------------------------ 403 Status

FORBIDDEN_CASES: list[Any] = [
    pytest.param(
        (SA, "list", "", "pods", "", "default", ""),
        {},
        'pods is forbidden: User "system:serviceaccount:hpactl:controller" cannot list resource "pods" in API group "" in the namespace "default"',
        {"kind": "pods"},
        id="namespaced-list",
    ),
    pytest.param(
        (SA, "watch", "autoscaling", "horizontalpodautoscalers", "", "", ""),
        {},
        'horizontalpodautoscalers.autoscaling is forbidden: User "system:serviceaccount:hpactl:controller" cannot watch resource "horizontalpodautoscalers" in API group "autoscaling" at the cluster scope',
        {"group": "autoscaling", "kind": "horizontalpodautoscalers"},
        id="cluster-scope",
    ),
    pytest.param(
        (SA, "update", "apps", "deployments", "scale", "default", "web"),
        {},
        'deployments.apps "web" is forbidden: User "system:serviceaccount:hpactl:controller" cannot update resource "deployments/scale" in API group "apps" in the namespace "default"',
        {"name": "web", "group": "apps", "kind": "deployments"},
        id="subresource",
    ),
    pytest.param(
        ("alice", "get", "", "", "", "", ""),
        {"path": "/metrics"},
        'forbidden: User "alice" cannot get path "/metrics"',
        {},
        id="non-resource",
    ),
    pytest.param(
        ("u", "get", "", "pods", "", "default", "p"),
        {"reason": 'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found'},
        'pods "p" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace "default": RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found',
        {"name": "p", "kind": "pods"},
        id="with-reason",
    ),
    pytest.param(
        ("u<script>", "get", "", "", "", "", ""),
        {"path": "/a&b"},
        'forbidden: User "u&lt;script&gt;" cannot get path "/a&amp;b"',
        {},
        id="html-escaped",
    ),
]


@pytest.mark.parametrize(("args", "kwargs", "message", "details"), FORBIDDEN_CASES)
def test_forbidden_status(
    args: tuple[str, ...], kwargs: dict[str, str], message: str, details: dict[str, str]
) -> None:
    status = forbidden_status(*args, **kwargs)
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }
