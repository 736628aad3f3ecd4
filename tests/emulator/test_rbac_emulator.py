"""RBAC enforced by the full emulator for ServiceAccount tokens, as a controller
(kubernetes_asyncio) meets it. (kubectl sends no bearer token to an http:// server,
kubernetes/kubectl#744, so kubectl can only be tested against an https emulator.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api
from kubernetes_asyncio.client.exceptions import ApiException

from hpactl.emulator import Emulator

from .helpers import api_json

SA_USER = "system:serviceaccount:hpactl:controller"

ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "pod-reader"},
    "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
        {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["list"]},
    ],
}
BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "pod-reader"},
    "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "pod-reader",
    },
    "subjects": [{"kind": "ServiceAccount", "namespace": "hpactl", "name": "controller"}],
}


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(auth=True, namespaces=("default", "hpactl")) as emu:
        emu.store.create(ROLE)
        emu.store.create(BINDING)
        yield emu


def _client(emu: Emulator, token: str) -> ApiClient:
    cfg = Configuration(host=emu.url)
    cfg.api_key = {"BearerToken": token}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    return ApiClient(cfg)


async def _raw(api: ApiClient, path: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    return await api_json(api, path, method, body=body, bearer=True)


async def test_service_account_gets_what_its_role_grants(emu: Emulator) -> None:
    token = emu.token_for_service_account("hpactl", "controller")
    async with _client(emu, token) as api:
        pods = await CoreV1Api(api).list_pod_for_all_namespaces(_request_timeout=10)
        assert pods.items == []
        assert (await _raw(api, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods"))[0] == 200
        # Discovery is open to every authenticated user.
        for path in ("/api", "/apis", "/apis/apps/v1", "/version"):
            assert (await _raw(api, path))[0] == 200, path

        with pytest.raises(ApiException) as exc:
            await CoreV1Api(api).list_namespaced_secret("default", _request_timeout=10)
        assert exc.value.status == 403
        body = json.loads(exc.value.body)
        assert body["message"] == (
            f'secrets is forbidden: User "{SA_USER}" cannot list resource "secrets" '
            'in API group "" in the namespace "default"'
        )
        assert (body["reason"], body["details"]) == ("Forbidden", {"kind": "secrets"})

        status, body = await _raw(api, "/apis/apps/v1/namespaces/default/deployments/web/scale")
        assert status == 403
        assert body["message"] == (
            f'deployments.apps "web" is forbidden: User "{SA_USER}" cannot get resource '
            '"deployments/scale" in API group "apps" in the namespace "default"'
        )
        status, body = await _raw(api, "/apis/autoscaling/v2/horizontalpodautoscalers?watch=true")
        assert status == 403
        assert body["message"] == (
            f'horizontalpodautoscalers.autoscaling is forbidden: User "{SA_USER}" cannot watch '
            'resource "horizontalpodautoscalers" in API group "autoscaling" at the cluster scope'
        )


async def test_bindings_take_effect_when_written(emu: Emulator) -> None:
    token = emu.token_for_service_account("hpactl", "other")
    async with _client(emu, token) as api:
        path = "/api/v1/namespaces/default/pods"
        assert (await _raw(api, path))[0] == 403
        emu.store.create(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"namespace": "default", "name": "other-reads-pods"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "pod-reader",
                },
                "subjects": [{"kind": "ServiceAccount", "namespace": "hpactl", "name": "other"}],
            }
        )
        assert (await _raw(api, path))[0] == 200
        # The RoleBinding grants in its namespace only.
        assert (await _raw(api, "/api/v1/namespaces/hpactl/pods"))[0] == 403


async def test_unknown_token_is_unauthorized(emu: Emulator) -> None:
    async with _client(emu, "not-a-token") as api:
        status, body = await _raw(api, "/api/v1/pods")
    assert status == 401
    assert body["reason"] == "Unauthorized"
