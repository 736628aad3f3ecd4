"""Wiring of ``hpactl run``'s probes and secure metrics: the kube layer's checks and
reviews handed to the observability server (which imports neither).

``readiness(app, leader_state) -> Readiness``
    The ``/readyz`` checks: ``api-server`` (the session's last answer),
    ``informer-caches``, ``informers`` (every list and watch getting through, a
    failure younger than 30 s forgiven) and ``leader-election``.
``secure_serving(config, session) -> SecureServing | None``
    With ``--metrics-secure``: the serving certificate (``--tls-cert-file`` /
    ``--tls-private-key-file``, or self-signed) and a :class:`DelegatedAuth` that
    reviews each request's token and access at the API server. ValueError (one line)
    when the certificate files are unusable.
``debug_endpoints(config, app) -> DebugEndpoints | None``
    With ``--enable-debug-endpoints``: the controller's decision records for
    ``/debug/hpa/{namespace}/{name}``.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import UTC, datetime

from hpactl.config import ControllerConfig
from hpactl.controller.app import ControllerApp
from hpactl.controller.zpages import zpages
from hpactl.kube.authn import DelegatedAuth
from hpactl.kube.health import api_server_check
from hpactl.kube.session import KubeSession
from hpactl.obs.server import DebugEndpoints, Readiness, SecureServing
from hpactl.obs.tls import serving_certificate

__all__ = ["debug_endpoints", "readiness", "secure_serving"]


def readiness(
    app: ControllerApp,
    leader_state: Callable[[], str],
    shards: Callable[[], tuple[bool, str]] | None = None,
) -> Readiness:
    """The checks of an open ControllerApp (``shards``: the shards held, with --shards)."""
    session = app.session
    return Readiness(
        caches_synced=lambda: app.caches_synced,
        leader_state=leader_state,
        api_server=api_server_check(session) if session is not None else None,
        # Every informer listed and watching; a stream down for less than 30 s passes.
        informers=app.informers.connected,
        shards=shards,
    )


def secure_serving(config: ControllerConfig, session: KubeSession | None) -> SecureServing | None:
    auth = config.metrics_auth
    if not auth.secure:
        return None
    if session is None:
        raise ValueError("--metrics-secure needs an API client to review requests")
    hosts = [socket.gethostname()]
    listen = config.metrics_listen
    if listen is not None and listen[0]:
        hosts.append(listen[0])
    certificate = serving_certificate(auth.tls_cert_file, auth.tls_private_key_file, hosts)
    reviewer = DelegatedAuth(
        session,
        authentication_ttl=auth.authentication_cache_ttl.total_seconds(),
        authorized_ttl=auth.authorized_cache_ttl.total_seconds(),
        unauthorized_ttl=auth.unauthorized_cache_ttl.total_seconds(),
    )
    return SecureServing(
        authorize=reviewer.review,
        certificate=certificate,
        always_allow_paths=auth.always_allow_paths,
    )


def debug_endpoints(config: ControllerConfig, app: ControllerApp) -> DebugEndpoints | None:
    """The decision records of an open ControllerApp, when debug endpoints are on."""
    if not config.enable_debug_endpoints:
        return None
    records = app.controller.records
    started = datetime.now(UTC)
    return DebugEndpoints(
        records=lambda namespace, name: records.to_json(f"{namespace}/{name}"),
        keys=lambda: list(records),
        pages=zpages(config, started, lambda: datetime.now(UTC)),
    )
