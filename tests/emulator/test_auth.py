"""Bearer-token authentication and RBAC enforcement hooks of the emulator."""

from __future__ import annotations

import pytest

from hpactl.emulator import Emulator

from .helpers import DEPLOYMENTS, HPAS, Http, deployment


async def test_tokens_required_when_auth_is_on() -> None:
    async with Emulator(auth=True) as emu:
        anon = Http(emu)
        admin = Http(emu, emu.admin_token)
        try:
            code, body = await anon.get(DEPLOYMENTS)
            assert (code, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
            code, body = await admin.post(DEPLOYMENTS, deployment("web"))
            assert code == 201
            assert emu.kubeconfig()["users"][0]["user"]["token"] == emu.admin_token
            code, _ = await anon.get("/healthz")
            assert code == 200
        finally:
            await anon.close()
            await admin.close()


async def test_service_account_token_is_subject_to_rbac() -> None:
    pytest.importorskip("hpactl.emulator.rbac")
    async with Emulator(auth=True) as emu:
        token = emu.token_for_service_account("default", "hpactl")
        sa = Http(emu, token)
        try:
            code, body = await sa.get(HPAS)
            assert code == 403 and body["reason"] == "Forbidden"
            assert (
                'User "system:serviceaccount:default:hpactl" cannot list resource "horizontalpodautoscalers"'
                in body["message"]
            )
            emu.store.create(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {"name": "hpa-reader"},
                    "rules": [
                        {
                            "apiGroups": ["autoscaling"],
                            "resources": ["horizontalpodautoscalers"],
                            "verbs": ["get", "list", "watch"],
                        }
                    ],
                }
            )
            emu.store.create(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": "hpa-reader"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": "hpa-reader",
                    },
                    "subjects": [
                        {"kind": "ServiceAccount", "name": "hpactl", "namespace": "default"}
                    ],
                }
            )
            code, body = await sa.get(HPAS)
            assert code == 200 and body["kind"] == "HorizontalPodAutoscalerList"
            code, body = await sa.put(HPAS + "/x/status", {})
            assert code == 403
            assert 'cannot update resource "horizontalpodautoscalers/status"' in body["message"]
            code, _ = await sa.get("/apis")  # discovery is open to authenticated users
            assert code == 200
        finally:
            await sa.close()


async def test_tokens_need_auth_mode(emulator: Emulator) -> None:
    with pytest.raises(RuntimeError):
        emulator.token_for_service_account("default", "x")
