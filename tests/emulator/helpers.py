"""Small HTTP helpers for the emulator tests (raw JSON over aiohttp)."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from kubernetes_asyncio.client import ApiClient

from hpactl.emulator import Emulator

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


class Http:
    def __init__(self, emu: Emulator, token: str | None = None) -> None:
        self.base = emu.url
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        ctx = emu.client_ssl_context()
        connector = aiohttp.TCPConnector(ssl=ctx) if ctx is not None else None
        self.session = aiohttp.ClientSession(headers=headers, connector=connector)

    async def close(self) -> None:
        await self.session.close()

    async def req(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        ctype: str = "application/json",
        accept: str = "application/json",
        params: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        async with self.session.request(
            method,
            self.base + path,
            data=data,
            params=params,
            headers={"Content-Type": ctype, "Accept": accept},
        ) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, text

    async def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        return await self.req("GET", path, **kw)

    async def post(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.req("POST", path, body, **kw)

    async def put(self, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
        return await self.req("PUT", path, body, **kw)

    async def patch(self, path: str, body: Any, ctype: str, **kw: Any) -> tuple[int, Any]:
        return await self.req("PATCH", path, body, ctype=ctype, **kw)

    async def delete(self, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return await self.req("DELETE", path, body, **kw)

    async def watch(
        self,
        path: str,
        params: dict[str, str],
        *,
        max_events: int = 1000,
        accept: str = "application/json",
    ) -> list[dict[str, Any]]:
        """Read a watch stream until it ends or max_events arrived."""
        events: list[dict[str, Any]] = []
        async with self.session.get(
            self.base + path, params=params, headers={"Accept": accept}
        ) as resp:
            assert resp.status == 200, await resp.text()
            async for line in resp.content:
                if line.strip():
                    events.append(json.loads(line))
                    if len(events) >= max_events:
                        break
        return events


async def api_json(
    api: ApiClient,
    path: str,
    method: str = "GET",
    *,
    query: dict[str, str] | None = None,
    body: Any = None,
    bearer: bool = False,
) -> tuple[int, Any]:
    """A request through kubernetes_asyncio's ApiClient (as the controller's clients
    make them): the status and the JSON body (or the text when it is not JSON)."""
    resp = await api.call_api(
        path,
        method,
        query_params=list((query or {}).items()),
        header_params={"Accept": "application/json", "Content-Type": "application/json"},
        body=body,
        auth_settings=["BearerToken"] if bearer else None,
        _preload_content=False,
        _request_timeout=10,
    )
    text = await resp.text()
    try:
        return resp.status, json.loads(text)
    except ValueError:
        return resp.status, text


def deployment(
    name: str, replicas: int = 1, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    labels = labels or {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }


def hpa_v2(
    name: str, target: str, *, min_r: int = 1, max_r: int = 5, metrics: list[Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": min_r,
            "maxReplicas": max_r,
            "metrics": metrics
            if metrics is not None
            else [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60},
                    },
                }
            ],
        },
    }


def pod(name: str, labels: dict[str, str], ns: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }


DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
HPAS = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
HPAS_V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
PODS = "/api/v1/namespaces/default/pods"
EVENTS = "/api/v1/namespaces/default/events"
