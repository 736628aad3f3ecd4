"""The series kube-controller-manager's dashboards and alerts read, served by ``hpactl run``.

``rest_client_*``, ``workqueue_*{name="horizontalpodautoscaler"}``,
``leader_election_master_status``, ``process_*`` and the Python runtime's, under
component-base's names, labels and buckets, with no ``*_created`` series; and every
query of ``manifests/monitoring/`` (dashboard and alert rules) reads only metric and
label names that a running hpactl serves.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from controller.builders import hpa, pod_metrics, workload
from controller.test_run_process import (
    Proc,
    _args,
    _fast_lease,
    _now,
    _replicas,
    spawn,
    wait_until,
)
from prometheus_client.parser import text_string_to_metric_families
from support.promql import family_of, grafana_expand, references

from hpactl.clock import VirtualClock
from hpactl.controller.scheduling import SyncSupervisor
from hpactl.emulator.emulator import Emulator
from hpactl.obs.metrics import (
    HPA_QUEUE,
    REST_CLIENT_BUCKETS,
    WORKQUEUE_BUCKETS,
    ControllerMetrics,
)

__all__ = ["spawn"]  # the fixture

pytestmark = pytest.mark.timeout(120)

MONITORING = Path(__file__).resolve().parents[2] / "manifests" / "monitoring"
# Labels Prometheus adds to every series of a ServiceMonitor target.
TARGET_LABELS = {"job", "instance", "namespace", "service", "pod", "endpoint", "container"}
# Series Prometheus makes itself for every target.
SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}


class Scrape:
    """One /metrics answer: raw text, sample names with their label sets, family names."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.families = {f.name: f for f in text_string_to_metric_families(text)}
        self.declared = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
        self.labels: dict[str, set[str]] = {}
        for fam in self.families.values():
            for s in fam.samples:
                self.labels.setdefault(s.name, set()).update(s.labels)

    def samples(self, metric: str, /, **labels: str) -> list[Any]:
        return [
            s
            for f in self.families.values()
            for s in f.samples
            if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items())
        ]

    def value(self, metric: str, /, **labels: str) -> float:
        return float(sum(s.value for s in self.samples(metric, **labels)))


async def scrape(proc: Proc) -> Scrape:
    port = await proc.port("metrics")
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/metrics") as r,
    ):
        assert r.status == 200
        return Scrape(await r.text())


def _buckets(s: Scrape, name: str) -> tuple[float, ...]:
    return tuple(sorted({float(x.labels["le"]) for x in s.samples(f"{name}_bucket")} - {math.inf}))


# ------------------------------------------------------------------ manifests' queries


def monitoring_queries() -> list[tuple[str, str]]:
    """(where, PromQL) for every alert rule and dashboard target in manifests/monitoring."""
    out: list[tuple[str, str]] = []
    for doc in yaml.safe_load_all((MONITORING / "prometheusrule.yaml").read_text()):
        for group in doc["spec"]["groups"]:
            for rule in group["rules"]:
                out.append((f"rule {rule.get('alert') or rule.get('record')}", rule["expr"]))
    dash = json.loads((MONITORING / "hpactl-dashboard.json").read_text())
    for panel in dash["panels"]:
        for target in panel.get("targets", []):
            expr = grafana_expand(target["expr"], {"job": "hpactl"})
            out.append((f"panel {panel['title']!r} {target['refId']}", expr))
    return out


def declared_labels() -> dict[str, set[str]]:
    """Label names of hpactl's own families, also those without a series yet."""
    metrics = ControllerMetrics()
    out: dict[str, set[str]] = {}
    for collector in list(metrics.registry._collector_to_names):
        names = metrics.registry._collector_to_names[collector]
        for name in names:
            out[name] = set(getattr(collector, "_labelnames", ()))
    return out


def unserved_references(s: Scrape) -> list[str]:
    """What the monitoring queries read that ``s`` does not serve."""
    known = s.declared | set(s.labels)
    declared = declared_labels()
    problems: list[str] = []
    for where, expr in monitoring_queries():
        refs = references(expr)
        if not refs.metrics:
            problems.append(f"{where}: reads no metric")
        for metric in refs.metrics - SYNTHETIC:
            fam = family_of(metric, known)
            if fam is None:
                problems.append(f"{where}: {metric} is not served")
                continue
            labels = set(s.labels.get(metric, set())) | declared.get(metric, set())
            labels |= declared.get(fam, set()) | TARGET_LABELS
            if metric.endswith("_bucket"):
                labels.add("le")
            for label in refs.selectors.get(metric, set()) - labels:
                problems.append(f"{where}: {metric} has no label {label!r}")
        for label in refs.labels - TARGET_LABELS - {"le"}:
            if not any(label in ls for ls in (*s.labels.values(), *declared.values())):
                problems.append(f"{where}: no served series has a label {label!r}")
    return problems


# ------------------------------------------------------------------------ the process


async def test_run_serves_kube_controller_manager_series_and_the_monitoring_queries_read_them(
    spawn: Callable[..., Any],
) -> None:
    async with Emulator() as emu:
        names = workload(emu, "web", 2, _now())
        emu.metrics.set_pod_metrics(pod_metrics(names, "200m", _now()))
        emu.store.create(hpa("web", "web", max_replicas=4))
        proc: Proc = await spawn(_args(emu, *_fast_lease("hpactl-kcm")))
        await wait_until(lambda: _replicas(emu) == 4, 30, proc, "scale up to 4")

        first = await scrape(proc)
        # Syncs happen every second: the queue's counters and histograms move.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while True:
            second = await scrape(proc)
            q = {"name": HPA_QUEUE}
            moved = all(
                second.value(n, **q) > first.value(n, **q)
                for n in (
                    "workqueue_adds_total",
                    "workqueue_retries_total",
                    "workqueue_queue_duration_seconds_count",
                    "workqueue_work_duration_seconds_count",
                )
            ) and second.value("rest_client_requests_total") > first.value(
                "rest_client_requests_total"
            )
            if moved or loop.time() > deadline:
                break
            await asyncio.sleep(0.5)
        assert moved, "workqueue_* / rest_client_* did not move between scrapes"
        code = await proc.stop()
    assert code == 0

    s = second
    # No *_created series, as component-base serves none.
    assert "_created" not in s.text
    assert not [n for n in s.labels if n.endswith("_created")]

    # rest_client_*: client-go's labels and buckets; host is the API server's host:port.
    host = emu.url.split("://", 1)[1].rstrip("/")
    assert s.labels["rest_client_requests_total"] == {"code", "method", "host"}
    assert {x.labels["host"] for x in s.samples("rest_client_requests_total")} == {host}
    assert s.value("rest_client_requests_total", method="GET", code="200") > 0
    # The rescale and the status write (PUT, as upstream's Update).
    assert s.value("rest_client_requests_total", method="PUT", code="200") >= 2
    assert s.labels["rest_client_request_duration_seconds_bucket"] == {"verb", "host", "le"}
    assert _buckets(s, "rest_client_request_duration_seconds") == REST_CLIENT_BUCKETS
    assert s.value("rest_client_request_duration_seconds_count", verb="PUT") >= 2
    assert s.value("rest_client_rate_limiter_duration_seconds_count", verb="GET") > 0
    assert _buckets(s, "rest_client_rate_limiter_duration_seconds") == REST_CLIENT_BUCKETS

    # workqueue_*: the HPA queue's name; every family upstream serves.
    for name in (
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_retries_total",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_queue_duration_seconds_count",
        "workqueue_work_duration_seconds_count",
    ):
        assert {x.labels["name"] for x in s.samples(name)} == {HPA_QUEUE}, name
    for name in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):
        assert _buckets(s, name) == pytest.approx(WORKQUEUE_BUCKETS)
    # Every sync is one add, one take (queue duration), one piece of work and, for the
    # next period, one requeue (retry).
    adds = s.value("workqueue_adds_total")
    assert s.value("workqueue_queue_duration_seconds_count") <= adds
    assert s.value("workqueue_work_duration_seconds_count") <= adds
    assert s.value("workqueue_retries_total") <= adds

    # Leader election: this replica holds the Lease it was given.
    assert s.samples("leader_election_master_status")[0].labels == {"name": "hpactl-kcm"}
    assert s.value("leader_election_master_status", name="hpactl-kcm") == 1.0

    # process_* as a Go binary's; python_* where it serves go_*.
    for name in (
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_start_time_seconds",
        "process_open_fds",
        "process_max_fds",
        "python_info",
        "python_gc_collections_total",
        "python_gc_objects_collected_total",
    ):
        assert s.samples(name), name
    assert s.value("process_resident_memory_bytes") > 1e6

    # The dashboard's and the alert rules' queries read only what is served.
    assert unserved_references(s) == []


async def test_with_shards_each_shard_lease_has_its_series(spawn: Callable[..., Any]) -> None:
    async with Emulator() as emu:
        proc: Proc = await spawn(_args(emu, *_fast_lease("hpactl-kcm"), "--shards=3"))

        async def held() -> Scrape:
            return await scrape(proc)

        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while True:
            s = await held()
            if s.value("hpactl_shards_held") == 3 or loop.time() > deadline:
                break
            await asyncio.sleep(0.2)
        assert s.value("hpactl_shards_held") == 3
        status = {x.labels["name"]: x.value for x in s.samples("leader_election_master_status")}
        # One series per shard Lease, as one client-go elector per Lease would serve.
        assert status == {f"hpactl-kcm-shard-{i}": 1.0 for i in range(3)}
        assert await proc.stop() == 0


# ------------------------------------------------------------------ the checker itself


def test_the_query_check_catches_a_misspelt_metric_and_label() -> None:
    text = (
        "# HELP workqueue_depth d\n# TYPE workqueue_depth gauge\n"
        'workqueue_depth{name="horizontalpodautoscaler"} 0.0\n'
    )
    s = Scrape(text)
    assert references('sum(workqueue_depth{name="x"})').metrics == {"workqueue_depth"}
    problems = unserved_references(s)
    # Against a scrape of one family, every other query's metric is reported.
    assert any("rest_client_requests_total is not served" in p for p in problems)
    refs = references('sum by (nmae) (rate(workqueue_adds_totl{nmae="x"}[5m]))')
    assert refs.metrics == {"workqueue_adds_totl"}
    assert refs.labels == {"nmae"}
    assert family_of("workqueue_adds_totl", s.declared) is None
    assert family_of(
        "rest_client_request_duration_seconds_bucket", {"rest_client_request_duration_seconds"}
    )
    with pytest.raises(ValueError, match="unknown function"):
        references("rat(workqueue_depth[5m])")


# ---------------------------------------------------------------- the schedule's queue


class _Observer:
    def __init__(self) -> None:
        self.adds = 0
        self.queued: list[float] = []
        self.work: list[float] = []
        self.requeues = 0

    def added(self) -> None:
        self.adds += 1

    def started(self, queued_seconds: float) -> None:
        self.queued.append(queued_seconds)

    def done(self, seconds: float) -> None:
        self.work.append(seconds)

    def requeued(self) -> None:
        self.requeues += 1


async def test_the_schedule_reports_depth_waits_work_and_requeues() -> None:
    """One worker, three keys due together, each sync 2 s: two wait in the queue."""
    clock = VirtualClock()
    obs = _Observer()

    async def sync(_key: str) -> None:
        await clock.sleep(2.0)

    sup = SyncSupervisor(clock, 10.0, 1, sync, observer=obs)
    sup.start()
    for key in ("a/1", "a/2", "a/3"):  # added while running: due at once
        sup.add(key)
    await clock.settle()
    await clock.run_for(1.0)
    # Due at once; one syncing for 1 s, two waiting for the worker.
    depth, unfinished, longest = sup.queue_state()
    assert (depth, unfinished, longest) == (2, 1.0, 1.0)
    assert obs.adds == 3
    await clock.run_for(5.5)
    # All three synced back to back: waits 0, 2 and 4 s; 2 s of work each.
    assert obs.queued == pytest.approx([0.0, 2.0, 4.0])
    assert obs.work == pytest.approx([2.0, 2.0, 2.0])
    assert obs.requeues == 3
    assert sup.queue_state() == (0, 0.0, 0.0)
    await sup.stop()


def test_controller_metrics_serve_no_created_series_and_upstream_queue_name() -> None:
    m = ControllerMetrics()
    m.workqueue.added()
    m.workqueue.started(0.5)
    m.workqueue.done(0.25)
    m.workqueue.requeued()
    m.observe_rest_request("update", "10.0.0.1:443", "200", 0.01)
    m.observe_rate_limiter("list", "10.0.0.1:443", 0.0)
    m.leader_lease("hpactl", True)
    s = Scrape(m.render().decode())
    assert "_created" not in s.text
    assert s.value("workqueue_adds_total", name="horizontalpodautoscaler") == 1
    assert s.value("workqueue_depth", name="horizontalpodautoscaler") == 0
    assert s.value("rest_client_requests_total", code="200", method="PUT", host="10.0.0.1:443") == 1
    assert s.value("rest_client_rate_limiter_duration_seconds_count", verb="GET") == 1
    assert s.value("leader_election_master_status", name="hpactl") == 1
