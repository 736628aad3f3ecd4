"""TokenReview and SubjectAccessReview: delegated authentication and authorization,
answered as kube-apiserver answers them (raw HTTP, and the real kubectl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.kubectl import needs_kubectl, run_kubectl

from hpactl.emulator import Emulator

from .helpers import Http

TOKENREVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SARS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SA_USER = "system:serviceaccount:monitoring:prometheus"
AUDIENCE = "https://kubernetes.default.svc.cluster.local"


def token_review(token: str, audiences: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"token": token}
    if audiences is not None:
        spec["audiences"] = audiences
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}


def metrics_review(user: str, groups: list[str], path: str = "/metrics") -> dict[str, Any]:
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user,
            "groups": groups,
            "nonResourceAttributes": {"path": path, "verb": "get"},
        },
    }


def metrics_reader(emu: Emulator, subject: dict[str, str]) -> None:
    """A ClusterRole for /metrics (nonResourceURLs) bound to subject."""
    emu.store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        }
    )
    bind(emu, "metrics-reader", "metrics-reader", subject)


def bind(emu: Emulator, name: str, role: str, subject: dict[str, str]) -> None:
    emu.store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [subject],
        }
    )


async def test_token_review_says_who_a_token_is() -> None:
    async with Emulator(auth=True, namespaces=("default", "monitoring")) as emu:
        sa = emu.store.create(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "prometheus", "namespace": "monitoring"},
            }
        )
        token = emu.token_for_service_account("monitoring", "prometheus")
        admin = Http(emu, emu.admin_token)
        try:
            code, body = await admin.post(TOKENREVIEWS, token_review(token))
            assert code == 201, body
            assert body["kind"] == "TokenReview" and body["spec"]["token"] == token
            assert body["status"] == {
                "authenticated": True,
                "user": {
                    "username": SA_USER,
                    "uid": sa["metadata"]["uid"],
                    "groups": [
                        "system:serviceaccounts",
                        "system:serviceaccounts:monitoring",
                        "system:authenticated",
                    ],
                },
                "audiences": [AUDIENCE],
            }
            # A token nobody issued: not authenticated, no error (as kube-apiserver).
            code, body = await admin.post(TOKENREVIEWS, token_review("made-up"))
            assert code == 201 and body["status"] == {"user": {}}
            # Audiences: the token's must be among those asked for.
            code, body = await admin.post(TOKENREVIEWS, token_review(token, [AUDIENCE, "x"]))
            assert body["status"]["authenticated"] is True
            code, body = await admin.post(TOKENREVIEWS, token_review(token, ["other"]))
            assert "authenticated" not in body["status"]
            assert "is invalid for the target audiences" in body["status"]["error"]
            code, body = await admin.post(TOKENREVIEWS, token_review(""))
            assert (code, body["reason"], body["message"]) == (
                400,
                "BadRequest",
                "token is required for TokenReview in authentication",
            )
            # Create only, as on a real server.
            code, body = await admin.get(TOKENREVIEWS)
            assert code == 405 and body["reason"] == "MethodNotAllowed"
        finally:
            await admin.close()


async def test_reviews_are_in_discovery_and_need_create_under_rbac() -> None:
    async with Emulator(auth=True) as emu:
        for path, name in ((TOKENREVIEWS, "tokenreviews"), (SARS, "subjectaccessreviews")):
            group_version = path.rsplit("/", 1)[0]
            anon = Http(emu, emu.admin_token)
            try:
                code, doc = await anon.get(group_version)
            finally:
                await anon.close()
            assert code == 200
            (entry,) = [r for r in doc["resources"] if r["name"] == name]
            assert entry["verbs"] == ["create"] and entry["namespaced"] is False
        token = emu.token_for_service_account("default", "hpactl")
        sa = Http(emu, token)
        try:
            code, body = await sa.post(TOKENREVIEWS, token_review(token))
            assert code == 403
            assert body["message"] == (
                'tokenreviews.authentication.k8s.io is forbidden: User "system:serviceaccount:'
                'default:hpactl" cannot create resource "tokenreviews" in API group '
                '"authentication.k8s.io" at the cluster scope'
            )
            code, body = await sa.post(SARS, metrics_review("x", []))
            assert (
                code == 403 and 'cannot create resource "subjectaccessreviews"' in (body["message"])
            )
            # The built-in role a delegating component binds.
            bind(
                emu,
                "hpactl-auth",
                "system:auth-delegator",
                {"kind": "ServiceAccount", "name": "hpactl", "namespace": "default"},
            )
            code, body = await sa.post(TOKENREVIEWS, token_review(token))
            assert code == 201 and body["status"]["user"]["username"].endswith(":hpactl")
            code, body = await sa.post(SARS, metrics_review("x", ["y"]))
            assert code == 201 and body["status"] == {"allowed": False}
        finally:
            await sa.close()


async def test_subject_access_review_evaluates_rbac_for_the_subject() -> None:
    async with Emulator(auth=True) as emu:
        admin = Http(emu, emu.admin_token)
        groups = ["system:serviceaccounts", "system:authenticated"]
        try:
            code, body = await admin.post(SARS, metrics_review(SA_USER, groups))
            assert code == 201 and body["kind"] == "SubjectAccessReview"
            assert body["status"] == {"allowed": False}
            assert body["spec"]["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
            metrics_reader(
                emu, {"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}
            )
            code, body = await admin.post(SARS, metrics_review(SA_USER, groups))
            assert body["status"]["allowed"] is True
            # nonResourceURLs match the path exactly (no prefix without "*"), and the verb.
            code, body = await admin.post(SARS, metrics_review(SA_USER, groups, "/metrics/x"))
            assert body["status"]["allowed"] is False
            review = metrics_review(SA_USER, groups)
            review["spec"]["nonResourceAttributes"]["verb"] = "post"
            code, body = await admin.post(SARS, review)
            assert body["status"]["allowed"] is False
            # The bootstrap policy applies to the groups given: system:monitoring may.
            code, body = await admin.post(SARS, metrics_review("u", ["system:monitoring"]))
            assert body["status"]["allowed"] is True
            # Resource attributes, and the privileged group.
            resource: dict[str, Any] = {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {
                    "user": SA_USER,
                    "resourceAttributes": {
                        "verb": "list",
                        "group": "autoscaling",
                        "resource": "horizontalpodautoscalers",
                        "namespace": "default",
                    },
                },
            }
            code, body = await admin.post(SARS, resource)
            assert code == 201 and body["status"] == {"allowed": False}
            resource["spec"]["groups"] = ["system:masters"]
            code, body = await admin.post(SARS, resource)
            assert body["status"] == {"allowed": True}
            # A binding to a missing role: the authorizer's reason comes back.
            bind(emu, "dangling", "nope", {"kind": "User", "name": "bob"})
            code, body = await admin.post(SARS, metrics_review("bob", []))
            assert body["status"] == {
                "allowed": False,
                "reason": 'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found',
            }
        finally:
            await admin.close()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"user": "u"},
            'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
            'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes '
            "must be specified",
        ),
        (
            {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}},
            'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: '
            '"": at least one of user or group must be specified',
        ),
        (
            {
                "user": "u",
                "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
                "resourceAttributes": {"verb": "get", "resource": "pods"},
            },
            "cannot be specified in combination with resourceAttributes",
        ),
    ],
)
async def test_subject_access_review_validation(spec: dict[str, Any], message: str) -> None:
    async with Emulator(auth=True) as emu:
        admin = Http(emu, emu.admin_token)
        try:
            code, body = await admin.post(SARS, {"kind": "SubjectAccessReview", "spec": spec})
        finally:
            await admin.close()
    assert code == 422 and body["reason"] == "Invalid"
    assert message in body["message"]


async def test_without_auth_nothing_authenticates_and_everything_is_allowed() -> None:
    async with Emulator() as emu:
        http = Http(emu)
        try:
            code, body = await http.post(TOKENREVIEWS, token_review("anything"))
            assert code == 201 and body["status"] == {"user": {}}
            code, body = await http.post(SARS, metrics_review("u", []))
            assert code == 201 and body["status"] == {"allowed": True}
        finally:
            await http.close()


# --------------------------------------------------------------------------- kubectl


@needs_kubectl
async def test_kubectl_creates_reviews(tmp_path: Path) -> None:
    async with Emulator(auth=True, tls=True, namespaces=("default", "monitoring")) as emu:
        admin = emu.write_kubeconfig(tmp_path / "admin")
        token = emu.token_for_service_account("monitoring", "prometheus")
        metrics_reader(
            emu, {"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}
        )
        review = tmp_path / "tokenreview.yaml"
        review.write_text(json.dumps(token_review(token)))
        code, out, err = await run_kubectl(admin, "create", "-f", str(review), "-o", "json")
        assert code == 0, err
        status = json.loads(out)["status"]
        assert status["authenticated"] is True and status["user"]["username"] == SA_USER
        sar = tmp_path / "sar.yaml"
        user = status["user"]
        sar.write_text(json.dumps(metrics_review(user["username"], user["groups"])))
        code, out, err = await run_kubectl(admin, "create", "-f", str(sar), "-o", "json")
        assert code == 0, err
        assert json.loads(out)["status"]["allowed"] is True
        # The same request from an account without the right: kubectl shows the 403.
        sa = emu.write_kubeconfig(tmp_path / "sa", token=token)
        code, out, err = await run_kubectl(sa, "create", "-f", str(review), "-o", "json")
        assert code != 0
        assert 'cannot create resource "tokenreviews" in API group "authentication.k8s.io"' in err
