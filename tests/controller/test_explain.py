"""``hpactl explain`` against the emulator: the real controller (ControllerApp on a
virtual clock, driven by the simulator's harness) records its decisions, the
observability server serves them at /debug/hpa/..., and the command reads them back;
without a server, the one-off decision reads the emulator directly.

Each case sets up one limiting rule and checks that the answer names it with the
numbers that decided."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hpactl.obs.server import ObservabilityServer
from hpactl.simulate.runner import Simulation
from hpactl.simulate.scenario import parse_scenario

from .explaining import debug_server, explain, server_url

ROOT = Path(__file__).resolve().parents[2]
START = datetime.now(UTC).replace(microsecond=0)
LONG_AGO = (START - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def deployment(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "example/app:1"}]},
            },
        },
    }


def pod(i: int, *, ready: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"web-{i}", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "example/app:1",
                    "resources": {"requests": {"cpu": "500m"}},
                }
            ]
        },
        "status": {
            "phase": "Running",
            "startTime": LONG_AGO,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": LONG_AGO,
                }
            ],
        },
    }


def usage(i: int, cpu: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "default", "name": f"web-{i}"},
        "containers": [{"name": "web", "usage": {"cpu": cpu}}],
    }


def hpa(
    *, min_replicas: int = 1, max_replicas: int = 10, behavior: dict[str, Any] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50},
                },
            }
        ],
    }
    if behavior is not None:
        spec["behavior"] = behavior
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": spec,
    }


@dataclass(frozen=True)
class Case:
    replicas: int
    cpu: list[str | None]  # per pod; None: no sample for that pod
    hpa: dict[str, Any]
    unready: tuple[int, ...] = ()
    unavailable: tuple[str, ...] = ()
    steps: int = 1


FAST_DOWN = {"scaleDown": {"stabilizationWindowSeconds": 0}}

CASES: dict[str, Case] = {
    # 270m of 500m = 54% against 50%: ratio 1.08, inside [0.90, 1.10].
    "tolerance": Case(4, ["270m"] * 4, hpa()),
    # 33% → ceil(0.66 x 6) = 4; the first sync's seeded recommendation (6) holds it.
    "stabilization": Case(6, ["165m"] * 6, hpa()),
    # 100% → 4, at most one pod per minute.
    "scale-up-policy": Case(
        2,
        ["500m"] * 2,
        hpa(
            behavior={
                "scaleUp": {
                    "stabilizationWindowSeconds": 0,
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                }
            }
        ),
    ),
    # 10% → 1, at most one pod fewer per minute.
    "scale-down-policy": Case(
        5,
        ["50m"] * 5,
        hpa(
            behavior={
                "scaleDown": {
                    "stabilizationWindowSeconds": 0,
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                }
            }
        ),
    ),
    "max": Case(2, ["500m"] * 2, hpa(max_replicas=3)),
    "min": Case(3, ["50m"] * 3, hpa(min_replicas=2, behavior=FAST_DOWN)),
    "failing-metric": Case(2, ["250m"] * 2, hpa(), unavailable=("metrics.k8s.io",)),
    # Two of four pods have no sample: 100% on the others would scale up, so the two
    # count as 0: 1000m / 2000m = 50% → ratio 1.0, held by the tolerance.
    "missing-metrics": Case(4, ["500m", "500m", None, None], hpa()),
    # Two ready pods at 150%, two not ready counted as 0 → 75% → ratio 1.5 → 6.
    "unready-pods": Case(4, ["750m"] * 4, hpa(), unready=(2, 3)),
}


def scenario(case: Case) -> dict[str, Any]:
    pods = [pod(i, ready=i not in case.unready) for i in range(len(case.cpu))]
    metrics: dict[str, Any] = {
        "pods": [usage(i, c) for i, c in enumerate(case.cpu) if c is not None]
    }
    if case.unavailable:
        metrics["unavailable"] = list(case.unavailable)
    return {
        "name": "explain",
        "start": START.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "objects": [deployment(case.replicas), *pods, case.hpa],
        "metrics": metrics,
        "steps": [{} for _ in range(case.steps)],
    }


@dataclass
class Running:
    sim: Simulation
    server: ObservabilityServer

    @property
    def url(self) -> str:
        return server_url(self.server)

    @property
    def kubeconfig(self) -> str:
        assert self.sim.kubeconfig is not None
        return str(self.sim.kubeconfig)


@contextlib.asynccontextmanager
async def running(case: Case, tmp_path: Path, *, sync: bool = True) -> AsyncIterator[Running]:
    """The case's cluster and controller; ``sync``: run its steps (else nothing has
    acted on the HPA yet)."""
    async with Simulation(parse_scenario(scenario(case)), workdir=tmp_path) as sim:
        if sync:
            await sim.run()
        app = sim.app
        assert app is not None
        async with debug_server(app) as server:
            yield Running(sim, server)


def first_line(text: str) -> str:
    return text.splitlines()[0]


# What the newest record's answer says, per case (after "default/web at <time>: ").
EXPECTED_FROM_RECORDS: dict[str, Callable[[str], bool]] = {
    "tolerance": lambda a: (
        a
        == (
            "held at 4: cpu is within tolerance: 54% against a target of 50% is a ratio of 1.08, "
            "inside [0.90, 1.10] (tolerance 10% down, 10% up)"
        )
    ),
    "stabilization": lambda a: a.startswith(
        "held at 6 by the scale-down stabilization window: the highest recommendation in the "
        f"last 300 s was 6 (at {START:%H:%M:%S}); cpu alone would give 4"
    ),
    "scale-up-policy": lambda a: (
        a
        == (
            "scaled up from 2 to 3, not 4, limited by scale-up policy (Pods 1 per 60s): at most 3 "
            "replicas now; cpu alone would give 4"
        )
    ),
    "scale-down-policy": lambda a: (
        a
        == (
            "scaled down from 5 to 4, not 1, limited by scale-down policy (Pods 1 per 60s): "
            "at least 4 replicas now; cpu alone would give 1"
        )
    ),
    "max": lambda a: (
        a == "scaled up from 2 to 3, not 4, capped at maxReplicas 3; cpu alone would give 4"
    ),
    "min": lambda a: (
        a == "scaled down from 3 to 2, not 1, kept at minReplicas 2; cpu alone would give 1"
    ),
    "failing-metric": lambda a: (
        a.startswith("held at 2: no metric could be computed: cpu failed: ")
        and "unable to get metrics for resource cpu" in a
        # the metrics API's 503, as client-go words it
        and "the server is currently unable to handle the request" in a
    ),
    "missing-metrics": lambda a: (
        a.startswith(
            "held at 4: cpu is within tolerance: 100% against a target of 50% is a ratio of 1.00"
        )
        and a.endswith(
            "; 2 of 4 pods set aside (no metrics: web-2, web-3), the ratio adjusted for them"
        )
    ),
    "unready-pods": lambda a: (
        a
        == (
            "scaled up from 4 to 6: cpu is at 150% against a target of 50% (ratio 1.50); 2 of 4 "
            "pods set aside (not ready: web-2, web-3), the ratio adjusted for them"
        )
    ),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_explain_names_the_rule_from_the_running_controllers_records(
    name: str, tmp_path: Path
) -> None:
    async with running(CASES[name], tmp_path) as r:
        code, out, err = await explain("default/web", "--server", r.url)
        assert (code, err) == (0, "")
        head = first_line(out)
        prefix = "default/web at "
        assert head.startswith(prefix)
        answer = head.split(": ", 1)[1]
        assert EXPECTED_FROM_RECORDS[name](answer), answer
        # The JSON form holds the same record the endpoint serves.
        code, out, _ = await explain("default/web", "--server", r.url, "--output", "json")
        doc = json.loads(out)
        assert code == 0 and doc["source"] == "server" and doc["hpa"] == "default/web"
        (rec,) = doc["records"]
        assert rec["explanation"]["currentReplicas"] == CASES[name].replicas


async def test_record_details_and_writes(tmp_path: Path) -> None:
    async with running(CASES["scale-up-policy"], tmp_path) as r:
        _, out, _ = await explain("default/web", "--server", r.url)
        assert "  cpu: 100% / target 50%, ratio 2.00 (tolerance [0.90, 1.10]), 2 of 2 pods" in out
        assert "  rate limit: at most 3 by scaleUp Pods 1 per 60s (applied)" in out
        assert "  writes: scale set to 3; status written; events: Normal SuccessfulRescale" in out
        _, out, _ = await explain("default/web", "--server", r.url, "-o", "json")
        rec = json.loads(out)["records"][0]
        assert rec["writes"]["scale"] == {
            "attempted": True,
            "replicas": 3,
            "result": "ok",
            "error": None,
        }
        assert rec["explanation"]["rateLimit"]["limit"] == 3


async def test_records_keep_the_last_n_newest_last(tmp_path: Path) -> None:
    case = replace(CASES["stabilization"], steps=7)
    async with running(case, tmp_path) as r:
        app = r.sim.app
        assert app is not None
        recs = app.controller.records.get("default/web")
        assert len(recs) == 5  # the default --decision-records
        times = [x.time for x in recs]
        assert times == sorted(times) and times[-1] - times[0] == timedelta(seconds=60)
        _, out, _ = await explain("default/web", "--server", r.url)
        assert out.count("\n  ") >= 4 and "earlier:" in out
        assert len(out.split("earlier:")[1].strip().splitlines()) == 4


async def test_unknown_hpa_falls_back_to_the_cluster_and_says_it_does_not_exist(
    tmp_path: Path,
) -> None:
    async with running(CASES["tolerance"], tmp_path) as r:
        code, out, err = await explain(
            "default/nope", "--server", r.url, "--kubeconfig", r.kubeconfig
        )
        assert code == 1 and out == ""
        lines = err.splitlines()
        assert lines[0].endswith(
            "no decision records for default/nope; computing a one-off decision"
        )
        assert lines[1] == "hpactl explain: error: no HorizontalPodAutoscaler default/nope"


# ------------------------------------------------------------------- one-off


EXPECTED_ONE_OFF: dict[str, str] = {
    "tolerance": "would stay at 4: cpu is within tolerance: 54% against a target of 50% is a "
    "ratio of 1.08",
    # No history here: the seeded recommendation does not exist, so it would scale down,
    # and it says it cannot know the window.
    "stabilization": "would scale down from 6 to 4: cpu is at 33% against a target of 50% "
    "(ratio 0.66)",
    # Behavior rate limits need past scale events: not applied.
    "scale-up-policy": "would scale up from 2 to 4: cpu is at 100% against a target of 50% "
    "(ratio 2.00)",
    "max": "would scale up from 2 to 3, not 4, capped at maxReplicas 3; cpu alone would give 4",
    "min": "would scale down from 3 to 2, not 1, kept at minReplicas 2; cpu alone would give 1",
    "failing-metric": "would stay at 2: no metric could be computed: cpu failed: ",
    "missing-metrics": "would stay at 4: cpu is within tolerance: 100% against a target of 50%",
    "unready-pods": "would scale up from 4 to 6: cpu is at 150% against a target of 50% "
    "(ratio 1.50); 2 of 4 pods set aside (not ready: web-2, web-3)",
}


@pytest.mark.parametrize("name", list(EXPECTED_ONE_OFF))
async def test_one_off_decision_from_the_cluster(name: str, tmp_path: Path) -> None:
    async with running(CASES[name], tmp_path, sync=False) as r:
        writes: list[object] = []
        r.sim.emu.store.on_write.append(writes.append)
        code, out, err = await explain("default/web", "--server", "", "--kubeconfig", r.kubeconfig)
        assert (code, err) == (0, "")
        head = first_line(out)
        assert head.startswith("default/web (computed now from the cluster): ")
        answer = head.split(": ", 1)[1]
        assert answer.startswith(EXPECTED_ONE_OFF[name]), answer
        # The window's history is not known (the "min" case has a 0 s window: none).
        window_line = "not known here: the recommendations of the last 300 s" in out
        assert window_line == (name not in ("failing-metric", "min"))
        if name == "scale-up-policy":
            assert "scaleUp / scaleDown policies of spec.behavior are not applied" in out
        assert "no controller has written this HPA's status yet" in out
        assert writes == []  # read-only


async def test_one_off_shows_what_the_writing_controller_last_wrote(tmp_path: Path) -> None:
    async with running(CASES["stabilization"], tmp_path) as r:
        _, out, _ = await explain("default/web", "--server", "", "--kubeconfig", r.kubeconfig)
        assert "the controller that scales it last wrote desiredReplicas 6" in out
        assert (
            "    AbleToScale=True (ScaleDownStabilized): recent recommendations were higher "
            "than current one, applying the highest recent recommendation"
        ) in out


async def test_bad_names_and_unreachable_clusters_are_one_line_errors(tmp_path: Path) -> None:
    for bad in ("web", "/web", "default/", "Default/web", "default/web/x"):
        code, out, err = await explain(bad, "--server", "")
        assert code == 2 and out == "" and len(err.splitlines()) == 1, (bad, err)
        assert err.startswith("hpactl explain: error: ")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    code, out, err = await explain(
        "default/web", "--server", "", "--kubeconfig", str(kubeconfig), "--timeout", "2"
    )
    assert code == 1 and out == ""
    assert (
        err.startswith("hpactl explain: error: cannot reach the cluster: ")
        and len(err.splitlines()) == 1
    )
    code, _, err = await explain("default/web", "--server", "", "--kubeconfig", str(tmp_path / "x"))
    assert (
        code == 1 and err == f"hpactl explain: error: kubeconfig {tmp_path / 'x'}: no such file\n"
    )


# ------------------------------------------------------------------- kubectl plugin


def test_the_plugin_entry_point_is_declared() -> None:
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["kubectl-hpactl"] == scripts["hpactl"] == "hpactl.cli:main"


async def test_kubectl_hpactl_explain(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    venv_bin = Path(sys.executable).parent
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    if not (venv_bin / "kubectl-hpactl").exists():
        pytest.skip("kubectl-hpactl is not installed in this environment (pip install -e .)")
    async with running(CASES["max"], tmp_path) as r:
        env = {
            **os.environ,
            "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
            "KUBECONFIG": r.kubeconfig,
            "HPACTL_SERVER": r.url,
        }
        proc = await asyncio.to_thread(
            subprocess.run,
            [kubectl, "hpactl", "explain", "default/web"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert "capped at maxReplicas 3; cpu alone would give 4" in first_line(proc.stdout)
        # Without the server: the one-off decision through the kubeconfig kubectl uses.
        env["HPACTL_SERVER"] = ""
        proc = await asyncio.to_thread(
            subprocess.run,
            [kubectl, "hpactl", "explain", "default/web", "--kubeconfig", r.kubeconfig],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        assert first_line(proc.stdout).startswith("default/web (computed now from the cluster)")


# ------------------------------------------------------------------- feature gates


def owned(obj: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    ref = {"apiVersion": "apps/v1", "kind": kind, "name": name, "controller": True}
    obj["metadata"]["ownerReferences"] = [ref]
    return obj


def annotated_hpa(annotations: dict[str, str]) -> dict[str, Any]:
    out = hpa(behavior=FAST_DOWN)
    out["metadata"]["annotations"] = annotations
    return out


@contextlib.asynccontextmanager
async def cluster(objects: list[dict[str, Any]], cpu: dict[str, str], tmp_path: Path) -> Any:
    """The objects and per-pod CPU usage, nothing synced: for one-off decisions."""
    doc = {
        "name": "explain-gates",
        "start": START.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "objects": objects,
        "metrics": {
            "pods": [
                {
                    "metadata": {"namespace": "default", "name": name},
                    "containers": [{"name": "web", "usage": {"cpu": c}}],
                }
                for name, c in cpu.items()
            ]
        },
        "steps": [{}],
    }
    async with Simulation(parse_scenario(doc), workdir=tmp_path) as sim:
        assert sim.kubeconfig is not None
        yield str(sim.kubeconfig)


async def one_off(kubeconfig: str, *gates: str) -> str:
    code, out, err = await explain(
        "default/web", "--server", "", "--kubeconfig", kubeconfig, *gates
    )
    assert (code, err) == (0, ""), err
    return first_line(out).split(": ", 1)[1]


async def test_one_off_takes_the_feature_gates_suspend(tmp_path: Path) -> None:
    objects = [
        deployment(2),
        pod(0),
        pod(1),
        annotated_hpa({"autoscaling.kubernetes.io/suspend": "true"}),
    ]
    # 500m of 500m = 100% against 50%: scale up, unless suspended.
    async with cluster(objects, {"web-0": "500m", "web-1": "500m"}, tmp_path) as kc:
        assert (await one_off(kc)).startswith("would scale up from 2 to 4")
        assert (await one_off(kc, "--feature-gates=HPASuspend=false")).startswith(
            "would scale up from 2 to 4"
        )
        suspended = await one_off(kc, "--feature-gates=HPASuspend=true")
        assert "the HPA is suspended" in suspended, suspended
        # Repeated flags join as hpactl run's do (the last value of a gate wins).
        again = await one_off(
            kc, "--feature-gates=HPASuspend=false", "--feature-gates", "HPASuspend=true"
        )
        assert again == suspended


async def test_one_off_takes_the_feature_gates_owner_reference(tmp_path: Path) -> None:
    rs = owned(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": deployment(2)["spec"]["template"],
            },
        },
        "Deployment",
        "web",
    )
    stranger = pod(9)
    stranger["metadata"]["name"] = "debug"
    objects = [
        deployment(2),
        rs,
        owned(pod(0), "ReplicaSet", "web-1"),
        owned(pod(1), "ReplicaSet", "web-1"),
        stranger,
        annotated_hpa({"hpactl.dev/selection-strategy": "OwnerReference"}),
    ]
    # The owned pods at 50%: on target. The stranger (a debugging pod with the
    # target's labels) at 500% drags label selection up.
    cpu = {"web-0": "250m", "web-1": "250m", "debug": "2500m"}
    async with cluster(objects, cpu, tmp_path) as kc:
        # Label selection: 3000m over three 500m requests = 200%, ratio 4 -> 12.
        assert (await one_off(kc)).startswith("would scale up from 2 to 10, not 12")
        owner = await one_off(kc, "--feature-gates=HPASelectionStrategy=true")
        assert owner.startswith("would stay at 2: cpu is within tolerance: 50% against"), owner


async def test_bad_feature_gates_are_refused_as_run_refuses_them(tmp_path: Path) -> None:
    for value, message in [
        ("Nope=true", "unrecognized feature gate: Nope"),
        ("HPASuspend=yes", "invalid value of HPASuspend=yes"),
    ]:
        code, out, err = await explain("default/web", "--server", "", f"--feature-gates={value}")
        assert (code, out) == (2, "")
        assert (
            err.startswith("hpactl explain: error: --feature-gates: ")
            and len(err.splitlines()) == 1
        ), err
        assert message in err, err
