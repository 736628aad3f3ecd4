"""`Emulator`: the API server in-process (tests, simulate, demo) or standalone."""

from __future__ import annotations

import asyncio
import base64
import secrets
import socket
import ssl
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from aiohttp import web

from hpactl.emulator.audit import DEFAULT_SIZE as DEFAULT_AUDIT_SIZE
from hpactl.emulator.audit import AuditLog
from hpactl.emulator.convert import default_object, to_storage
from hpactl.emulator.metrics_api import MetricsState, registry_kinds
from hpactl.emulator.rbac import Authorizer
from hpactl.emulator.registry import Registry, builtin_registry
from hpactl.emulator.server import ApiServer, ServerConfig, ServerHooks
from hpactl.emulator.store import Store, StoreState
from hpactl.emulator.validation import validate_custom, validate_stored

Obj = dict[str, Any]

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
ADMIN_USER = "admin"
ADMIN_GROUPS = ["system:masters", "system:authenticated"]
RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ServiceAccount")
_KIND_KEYS = {
    "Role": ("rbac.authorization.k8s.io", "roles"),
    "ClusterRole": ("rbac.authorization.k8s.io", "clusterroles"),
    "RoleBinding": ("rbac.authorization.k8s.io", "rolebindings"),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io", "clusterrolebindings"),
    "ServiceAccount": ("", "serviceaccounts"),
}


class Emulator:
    """A Kubernetes API server on 127.0.0.1 for hpactl's tests and demos.

    `async with Emulator() as emu:` starts it on an ephemeral port (`emu.url`).
    `emu.store` gives direct, synchronous access to the objects (see Store).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        history_size: int = 10_000,
        bookmark_interval: float = 60.0,
        min_request_timeout: float = 1800.0,
        now: Callable[[], datetime] | None = None,
        auth: bool = False,
        faults: Any = None,
        metrics: bool = True,
        namespaces: Iterable[str] = DEFAULT_NAMESPACES,
        git_version: str = "v1.32.0",
        tls: bool = False,
        audit: bool | int = False,
        watch_list: bool = True,
    ) -> None:
        self.host = host
        self._requested_port = port
        self.registry: Registry = builtin_registry()
        self.now: Callable[[], datetime] = now or (lambda: datetime.now(UTC))
        self.store = Store(
            self.registry,
            history_size=history_size,
            now=lambda: self.now(),
            to_storage=to_storage,
            defaulter=default_object,
            validator=validate_stored,
        )
        self.store.custom_validator = validate_custom
        self.admin_token = secrets.token_urlsafe(24)
        self._tokens: dict[str, tuple[str, list[str]]] | None = (
            {self.admin_token: (ADMIN_USER, list(ADMIN_GROUPS))} if auth else None
        )
        self.auth = auth
        # kubectl sends credentials only over https: use tls=True with auth for kubectl.
        self.tls = tls
        self._cert: Any = None
        self.metrics: Any = self._make_metrics_state() if metrics else None
        authorizer = Authorizer(self.objects_of_kind) if auth else None
        if faults is True:
            from hpactl.emulator.faults import FaultInjector

            faults = FaultInjector(metrics_state=self.metrics)
        self.faults: Any = faults or None
        # audit=True (or a size): record mutating requests, served at /emulator/audit
        self.audit: AuditLog | None = None
        if audit:
            self.audit = AuditLog(DEFAULT_AUDIT_SIZE if audit is True else int(audit))
            self.store.on_write.append(self.audit.on_write)
        self.server = ApiServer(
            self.store,
            self.registry,
            ServerConfig(
                bookmark_interval=bookmark_interval,
                min_request_timeout=min_request_timeout,
                git_version=git_version,
                watch_list=watch_list,
            ),
            ServerHooks(
                faults=self.faults,
                audit=self.audit,
                authorizer=authorizer,
                metrics=self.metrics,
                tokens=self._tokens,
            ),
        )
        self._namespaces = tuple(namespaces)
        for ns in self._namespaces:
            self.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        bind = getattr(self.faults, "bind_store_control", None)
        if bind is not None:
            bind(self)  # restore= / reset= fault rules act through snapshot/restore/reset
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ---- hooks for other modules -----------------------------------------------------------

    def _make_metrics_state(self) -> MetricsState:
        def pod_labels(namespace: str, name: str) -> Mapping[str, str] | None:
            e = self.store.get_entry(("", "pods"), namespace, name)
            if e is None:
                return None
            labels: Mapping[str, str] = e.obj.get("metadata", {}).get("labels") or {}
            return labels

        def object_labels(
            group: str, resource: str, namespace: str, name: str
        ) -> Mapping[str, str] | None:
            rt = self.registry.storage_type(group, resource)
            if rt is None:
                return None
            e = self.store.get_entry(rt.storage_key, namespace if rt.namespaced else "", name)
            if e is None:
                return None
            labels: Mapping[str, str] = e.obj.get("metadata", {}).get("labels") or {}
            return labels

        def next_rv() -> str:
            return str(self.store._next_rv())

        return MetricsState(
            pod_labels,
            lambda: self.now(),
            object_labels=object_labels,
            next_resource_version=next_rv,
            kinds=registry_kinds(self.registry),
        )

    def objects_of_kind(self, kind: str) -> list[Obj]:
        """All stored objects of an RBAC kind (or ServiceAccount): the Authorizer's lookup."""
        key = _KIND_KEYS.get(kind)
        if key is None:
            return []
        return [e.obj for e in self.store.iter_entries(key, None)]

    def token_for_service_account(self, namespace: str, name: str) -> str:
        """A bearer token authenticating as the ServiceAccount (no Secret needed)."""
        if self._tokens is None:
            raise RuntimeError("the emulator was started without auth=True")
        token = (
            "sa."
            + base64.urlsafe_b64encode(f"{namespace}:{name}".encode()).decode().rstrip("=")
            + "."
            + secrets.token_urlsafe(8)
        )
        self._tokens[token] = (
            f"system:serviceaccount:{namespace}:{name}",
            [
                "system:serviceaccounts",
                f"system:serviceaccounts:{namespace}",
                "system:authenticated",
            ],
        )
        return token

    def add_token(self, token: str, user: str, groups: Iterable[str]) -> None:
        if self._tokens is None:
            raise RuntimeError("the emulator was started without auth=True")
        self._tokens[token] = (user, list(groups))

    # ---- etcd snapshot and restore -------------------------------------------------------------

    def snapshot(self) -> StoreState:
        """An opaque copy of every stored object and of the resourceVersion counter."""
        return self.store.checkpoint()

    def restore(self, snapshot: StoreState) -> None:
        """Serve `snapshot` from now on, as after an etcd restore: older objects, lower
        resourceVersions (later writes continue from the snapshot's), open watches end."""
        self.store.restore_state(snapshot)

    def reset(self) -> None:
        """Restore to empty: no objects but the starting namespaces, the resourceVersion
        counter starting over. Open watches end."""
        self.store.reset(self._namespaces)

    # ---- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def ca_pem(self) -> bytes | None:
        """PEM of the CA that signed the serving certificate (None without TLS)."""
        return None if self._cert is None else bytes(self._cert.ca_pem)

    def client_ssl_context(self) -> ssl.SSLContext | None:
        """An SSL context trusting this emulator (None without TLS)."""
        if self._cert is None:
            return None
        return ssl.create_default_context(cadata=self._cert.ca_pem.decode())

    async def start(self) -> None:
        """Serve; after `stop()`, on the same port again (an API server restart)."""
        self.server._stopping.clear()
        app = self.server.make_app()
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, shutdown_timeout=1.0
        )
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port or self._requested_port))
        self.port = sock.getsockname()[1]
        self.server.address = f"{self.host}:{self.port}"
        ssl_context = None
        if self.tls:
            from hpactl.emulator.tls import make_serving_cert

            if self._cert is None:
                self._cert = make_serving_cert(self.host)
            ssl_context = self._cert.server_context()
        site = web.SockSite(self._runner, sock, ssl_context=ssl_context)
        await site.start()

    async def stop(self) -> None:
        self.server.stop_watches()
        if self._runner is not None:
            await asyncio.sleep(0)
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Emulator:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # ---- kubeconfig and manifests --------------------------------------------------------------

    def kubeconfig(self, *, token: str | None = None, context: str = "hpactl-emulator") -> Obj:
        user: Obj = {}
        if token is not None:
            user["token"] = token
        elif self.auth:
            user["token"] = self.admin_token
        cluster: Obj = {"server": self.url}
        if self._cert is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self._cert.ca_pem).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": cluster}],
            "users": [{"name": context, "user": user}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": "default"},
                }
            ],
            "current-context": context,
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | Path, *, token: str | None = None) -> Path:
        p = Path(path)
        p.write_text(yaml.safe_dump(self.kubeconfig(token=token), sort_keys=False))
        return p

    def load_manifests(self, texts: Iterable[str]) -> int:
        """Create or replace every object of YAML/JSON multi-document texts (Lists
        expanded), creating the namespaces they name. Metrics kinds (PodMetrics,
        MetricValue, ExternalMetricValue) go to the metrics state; each call replaces
        the custom and external values given."""
        n = 0
        custom: list[Obj] = []
        external: list[Obj] = []
        for text in texts:
            for doc in yaml.safe_load_all(text):
                for obj in _expand(doc):
                    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
                    if group.endswith("metrics.k8s.io") and self.metrics is None:
                        raise ValueError(f"metrics APIs not available for {obj.get('apiVersion')}")
                    if group == "metrics.k8s.io":
                        self.metrics.put_pod_metrics(obj)
                    elif group == "custom.metrics.k8s.io":
                        custom.append(obj)
                    elif group == "external.metrics.k8s.io":
                        external.append(obj)
                    else:
                        self.store.ensure_namespace(obj)
                        self.store.apply(obj)
                    n += 1
        if custom:
            self.metrics.set_custom(custom)
        if external:
            self.metrics.set_external(external)
        return n

    def apply_object(self, obj: Obj) -> Obj:
        """store.apply, except that PodMetrics go to the metrics state (custom and
        external values: use `emu.metrics.set_custom` / `set_external`)."""
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        if group == "metrics.k8s.io" and self.metrics is not None:
            self.metrics.put_pod_metrics(obj)
            return obj
        if group.endswith("metrics.k8s.io"):
            raise ValueError(f"use emu.metrics to script {obj.get('apiVersion')} values")
        return self.store.apply(obj)


def _expand(doc: Any) -> list[Obj]:
    if not isinstance(doc, dict):
        return []
    if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
        return [d for d in doc["items"] if isinstance(d, dict)]
    return [doc]
