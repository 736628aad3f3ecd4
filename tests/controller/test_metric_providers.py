"""Several metrics providers (KEP-6382 / KEP-4261, gate HPAMetricSource) against
emulators: the API server, plus two emulated metrics providers asked directly.

* ``keda``: an emulator over TLS with authentication on (a token maps to hpactl's
  service account, authorized by RBAC on external.metrics.k8s.io), routed by the
  metric name pattern ``queue_*``, its CA given as ``caFile``.
* ``prom``: an emulator over TLS without authentication (``auth: none``), declaring
  the API group ``prometheus.example.com``, which the HPA names for ``rps`` in its
  ``hpactl.dev/metric-sources`` annotation; its CA given as ``caData``.

The API server's own external metrics API serves ``queue_depth`` = 1 and no ``rps``,
so a metric fetched from the wrong place shows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hpactl.clock import VirtualClock
from hpactl.config import ConfigError
from hpactl.controller.app import ControllerApp
from hpactl.emulator.emulator import Emulator
from hpactl.flags import parse_run_config

from .builders import events, hpa, workload

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SOURCES = "hpactl.dev/metric-sources"
Obj = dict[str, Any]


def external(name: str, target: str) -> Obj:
    return {
        "type": "External",
        "external": {"metric": {"name": name}, "target": {"type": "Value", "value": target}},
    }


def web_hpa(sources: dict[str, str] | str | None) -> Obj:
    raw = hpa("web", "web", max_replicas=20)
    raw["spec"]["metrics"] = [external("queue_depth", "10"), external("rps", "100")]
    if sources is not None:
        text = sources if isinstance(sources, str) else json.dumps(sources)
        raw["metadata"]["annotations"] = {SOURCES: text}
    return raw


def value(name: str, v: str) -> Obj:
    return {"namespace": "default", "metricName": name, "value": v}


def grant_external_metrics(emu: Emulator, namespace: str, name: str) -> None:
    """RBAC on the provider: hpactl's service account may read external metrics."""
    emu.store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "external-metrics-reader"},
            "rules": [
                {
                    "apiGroups": ["external.metrics.k8s.io"],
                    "resources": ["*"],
                    "verbs": ["get", "list"],
                }
            ],
        }
    )
    emu.store.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "hpactl-external-metrics"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "external-metrics-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        }
    )


@dataclass
class Cluster:
    api: Emulator
    keda: Emulator
    prom: Emulator
    clock: VirtualClock
    config_file: Path
    app: ControllerApp | None = None

    async def step(self, seconds: float = 0.0) -> dict[str, Any]:
        assert self.app is not None
        if seconds:
            self.clock.advance(seconds)
        await self.app.wait_for_rv(self.api.store.current_resource_version(), timeout=10)
        return {r.key: r for r in await self.app.controller.sync_all()}

    def status(self) -> Obj:
        obj = self.api.store.get("autoscaling", "horizontalpodautoscalers", "default", "web")
        assert obj is not None
        return dict(obj["status"])

    def events(self) -> list[tuple[str, str, str]]:
        return sorted((e["type"], e["reason"], e["message"]) for e in events(self.api))


@asynccontextmanager
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    clock = VirtualClock(T0)
    async with AsyncExitStack() as stack:
        api = await stack.enter_async_context(Emulator(now=clock.now, bookmark_interval=0.05))
        keda = await stack.enter_async_context(Emulator(now=clock.now, tls=True, auth=True))
        prom = await stack.enter_async_context(Emulator(now=clock.now, tls=True))
        workload(api, "web", 4, T0)
        api.metrics.set_external([value("queue_depth", "1")])
        keda.metrics.set_external([value("queue_depth", "30")])
        prom.metrics.set_external([value("rps", "200")])
        token = keda.token_for_service_account("hpactl-system", "hpactl")
        grant_external_metrics(keda, "hpactl-system", "hpactl")
        (tmp_path / "token").write_text(token + "\n")
        assert keda.ca_pem is not None and prom.ca_pem is not None
        (tmp_path / "keda-ca.crt").write_bytes(keda.ca_pem or b"")
        providers = {
            "providers": [
                {
                    "name": "keda",
                    "url": keda.url,
                    "externalMetrics": ["queue_*"],
                    "caFile": str(tmp_path / "keda-ca.crt"),
                    "tokenFile": str(tmp_path / "token"),
                },
                {
                    "name": "prom",
                    "url": prom.url,
                    "apiGroup": "prometheus.example.com",
                    "caData": (prom.ca_pem or b"").decode(),
                    "auth": "none",
                },
            ]
        }
        config_file = tmp_path / "providers.yaml"
        config_file.write_text(json.dumps(providers))
        yield Cluster(api, keda, prom, clock, config_file)


@asynccontextmanager
async def controller(c: Cluster, *flags: str) -> AsyncIterator[None]:
    config = parse_run_config(["--master", c.api.url, *flags], {})
    async with ControllerApp(config, clock=c.clock, env={}) as app:
        c.app = app
        yield
        c.app = None


def gate_on(c: Cluster) -> tuple[str, ...]:
    return (
        "--feature-gates=HPAMetricSource=true",
        f"--metrics-providers-config={c.config_file}",
    )


def proposals(rec: Any) -> dict[str, int | None]:
    return {m.label: m.proposal for m in rec.explanation.metrics}


async def test_each_provider_serves_its_metric(tmp_path: Path) -> None:
    async with cluster(tmp_path) as c, controller(c, *gate_on(c)):
        c.api.store.create(web_hpa({"rps": "prometheus.example.com"}))
        rec = (await c.step())["default/web"]
        # queue_depth 30 from keda (not the API server's 1): 30/10 x 4 pods = 12;
        # rps 200 from prom: 200/100 x 4 = 8.
        assert list(proposals(rec).values()) == [12, 8]
        current = [m["external"]["current"]["value"] for m in c.status()["currentMetrics"]]
        assert current == ["30", "200"]
        # The rate limit applies to routed proposals as to any: max(2 x 4, 4) = 8.
        assert (rec.desired, rec.rescaled) == (8, True)
        assert "scale-up-limit" in rec.explanation.limited_by
        assert not [e for e in c.events() if e[0] == "Warning"]


async def test_a_provider_down_is_the_usual_failed_get_external_metric(tmp_path: Path) -> None:
    async with cluster(tmp_path) as c, controller(c, *gate_on(c)):
        c.api.store.create(web_hpa({"rps": "prometheus.example.com"}))
        await c.prom.stop()
        rec = (await c.step())["default/web"]
        warnings = [e for e in c.events() if e[0] == "Warning"]
        reasons = {e[1] for e in warnings}
        assert "FailedGetExternalMetric" in reasons
        (failed,) = [e for e in warnings if e[1] == "FailedGetExternalMetric"]
        assert failed[2].startswith(
            "unable to get external metric default/rps/nil: unable to fetch metrics from "
            "external metrics API: "
        )
        assert c.prom.url.removeprefix("https://") in failed[2]
        # keda still answers: its proposal stands, as upstream scales on the metrics it has.
        assert list(proposals(rec).values()) == [12, None]
        assert (rec.desired, rec.rescaled) == (8, True)


async def test_a_group_no_provider_declares_is_asked_of_the_api_server(tmp_path: Path) -> None:
    # KEP-6382 as written: /apis/<group>/v1beta1/... through the API server, never the
    # default group instead (KEP-4261). The emulator serves no such group: 404.
    async with cluster(tmp_path) as c, controller(c, *gate_on(c)):
        c.api.store.create(
            web_hpa({"queue_depth": "other.example.com", "rps": "prometheus.example.com"})
        )
        rec = (await c.step())["default/web"]
        (failed,) = [e for e in c.events() if e[1] == "FailedGetExternalMetric"]
        assert "the server could not find the requested resource" in failed[2]
        assert "default/queue_depth" in failed[2]
        assert list(proposals(rec).values()) == [None, 8]  # rps still from prom


async def test_gate_off_is_upstream_byte_for_byte(tmp_path: Path) -> None:
    async def run(sources: dict[str, str] | None) -> tuple[Obj, list[tuple[str, str, str]]]:
        async with cluster(tmp_path) as c, controller(c):
            c.api.store.create(web_hpa(sources))
            await c.step()
            return c.status(), c.events()

    upstream = await run(None)
    assert await run({"rps": "prometheus.example.com"}) == upstream
    # Upstream asks the API server for both: queue_depth 1 there, no rps at all.
    status, evs = upstream
    assert status["currentMetrics"][0]["external"]["current"]["value"] == "1"
    assert any(e[1] == "FailedGetExternalMetric" and "default/rps" in e[2] for e in evs)


async def test_malformed_annotation_warns_and_routes_as_if_unset(tmp_path: Path) -> None:
    async def run(sources: str | None) -> tuple[Obj, list[tuple[str, str, str]]]:
        async with cluster(tmp_path) as c, controller(c, *gate_on(c)):
            c.api.store.create(web_hpa(sources))
            await c.step()
            return c.status(), c.events()

    unset_status, unset_events = await run(None)
    status, evs = await run('{"rps": "External.Metrics"}')
    (cond,) = [x for x in status["conditions"] if x["type"] == "AnnotationsValid"]
    assert (cond["status"], cond["reason"]) == ("False", "InvalidMetricSources")
    assert cond["message"] == (
        'annotation hpactl.dev/metric-sources=\'{"rps": "External.Metrics"}\' metric '
        "'rps': \"External.Metrics\" is not a valid API group (a lowercase DNS subdomain); "
        "the metrics are fetched as if it were unset"
    )
    assert ("Warning", "InvalidMetricSources", cond["message"]) in evs
    rest = [x for x in status["conditions"] if x is not cond]
    assert {**status, "conditions": rest} == unset_status
    assert [e for e in evs if e[1] != "InvalidMetricSources"] == unset_events
    # Unset: queue_depth by pattern from keda, rps (no pattern) from the API server.
    assert unset_status["currentMetrics"][0]["external"]["current"]["value"] == "30"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("providers: []", "providers: must be a non-empty list"),
        (
            "providers: [{name: keda, url: http://x, externalMetrics: [a]}]",
            "providers[0].url: must be an https:// URL (the metrics API over TLS)",
        ),
        (
            "providers: [{name: keda, url: https://x}]",
            "providers[0]: routes nothing (give apiGroup, externalMetrics or customMetrics)",
        ),
        (
            "providers: [{name: k, url: https://x, apiGroup: external.metrics.k8s.io}]",
            'providers[0].apiGroup: "external.metrics.k8s.io" is a default metrics API group '
            "(leave the source out instead)",
        ),
        (
            "providers: [{name: k, url: https://x, externalMetrics: [a], caFile: /nonexistent}]",
            'providers[0].caFile: cannot read "/nonexistent"',
        ),
        (
            "providers: [{name: k, url: https://x, externalMetrics: [a], tokn: x}]",
            "providers[0]: unknown field 'tokn'",
        ),
        (
            "providers: [{name: k",
            "invalid YAML: expected ',' or '}', but got '<stream end>' (line 1, column 21)",
        ),
    ],
)
def test_bad_config_is_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "providers.yaml"
    path.write_text(text)
    flags = ["--feature-gates=HPAMetricSource=true", f"--metrics-providers-config={path}"]
    with pytest.raises(ConfigError) as err:
        parse_run_config(flags, {})
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith("--metrics-providers-config: ")
    assert message in line


def test_the_config_needs_the_gate(tmp_path: Path) -> None:
    path = tmp_path / "providers.yaml"
    path.write_text("providers: [{name: k, url: https://x, externalMetrics: [a], auth: none}]")
    with pytest.raises(ConfigError) as err:
        parse_run_config([f"--metrics-providers-config={path}"], {})
    assert str(err.value) == (
        "--metrics-providers-config: needs --feature-gates=HPAMetricSource=true"
    )


def test_hpactl_run_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "providers.yaml"
    path.write_text("providers: [{name: keda, url: https://keda.keda.svc}]")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "hpactl",
            "run",
            "--feature-gates=HPAMetricSource=true",
            f"--metrics-providers-config={path}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
    assert out.stderr == (
        f"hpactl run: error: --metrics-providers-config: {path}: providers[0]: routes "
        "nothing (give apiGroup, externalMetrics or customMetrics)\n"
    )
