"""Bad input (issue 12): each object a real API server would reject, or a target hpactl
cannot scale, gets a clear condition and Event and never a traceback, and a healthy HPA
synced in the same run still scales normally.

Objects are planted through the emulator's raw store (``emu.store.create`` does not
validate), the way a lenient server or an old etcd would hand them to the controller.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from .builders import Obj, events, hpa, pod, pod_metrics, workload
from .test_controller_emulator import T0, Env, env  # noqa: F401  (the fixture)
from .test_target_kinds import daemonset


def healthy(env: Env) -> None:  # noqa: F811
    """A Deployment ``web`` of 2 pods at 200% of their cpu request and its HPA (max 4)."""
    names = workload(env.emu, "web", 2, T0)
    env.set_cpu(names, "200m")
    env.emu.store.create(hpa("web", "web", max_replicas=4))


async def sync_with_healthy(env: Env, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:  # noqa: F811
    """One sync of every HPA; the healthy one scaled 2 -> 4, and no sync ended in an
    unexpected exception (logged with its traceback, its repr as the record's error)."""
    capsys.readouterr()
    recs = {r.key: r for r in await env.step()}
    web = recs["default/web"]
    assert (web.current, web.desired, web.rescaled) == (2, 4, True), web.errors
    assert env.replicas("web") == 4
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, "a traceback was logged"
    crashed = [
        e for r in recs.values() for e in r.errors if re.match(r"^\w+(Error|Exception)\(", e)
    ]
    assert not crashed, crashed
    return recs


def conditions(env: Env, name: str) -> dict[str, Obj]:  # noqa: F811
    return {c["type"]: c for c in env.hpa_obj(name).get("status", {}).get("conditions", [])}


def one_event(env: Env, reason: str, name: str) -> Obj:  # noqa: F811
    evs = [e for e in events(env.emu, reason=reason) if e["involvedObject"]["name"] == name]
    assert len(evs) == 1, (reason, [(e["reason"], e["message"]) for e in events(env.emu)])
    return evs[0]


def deployment_obj(name: str, replicas: int, ns: str = "default", **selector: Any) -> Obj:
    sel = selector or {"matchLabels": {"app": name}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": sel,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


def pods_of(env: Env, app: str, n: int, ns: str = "default", **kw: Any) -> list[str]:  # noqa: F811
    return [
        env.emu.store.create(pod(app, i, T0, ns=ns, **kw))["metadata"]["name"] for i in range(n)
    ]


def cpu_target_hpa(name: str, target: Obj) -> Obj:
    h = hpa(name, name)
    h["spec"]["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    return h


# ----------------------------------------------------------------------- the target


async def test_a_target_that_cannot_scale_or_does_not_exist(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A DaemonSet (no scale subresource) and a kind no API group serves: upstream's
    FailedGetScale texts (see test_target_kinds.py and
    test_controller_emulator.py::test_unknown_kind_reports_no_mapping for the full
    conditions), while the healthy HPA in the same sync scales."""
    healthy(env)
    env.emu.store.create(daemonset("agent"))
    env.emu.store.create(hpa("agent", "agent", kind="DaemonSet"))
    env.emu.store.create(hpa("gadget", "g", kind="Gadget", api_version="example.com/v1"))
    env.emu.store.create(hpa("nokind", "g", kind="Deployment", api_version="nowhere.io/v1"))
    recs = await sync_with_healthy(env, capsys)
    for name, message in (
        ("agent", "the server could not find the requested resource"),
        ("gadget", 'no matches for kind "Gadget" in group "example.com"'),
        ("nokind", 'no matches for kind "Deployment" in group "nowhere.io"'),
    ):
        rec = recs[f"default/{name}"]
        assert rec.current is None and not rec.rescaled
        ev = one_event(env, "FailedGetScale", name)
        assert (ev["type"], ev["message"]) == ("Warning", message)
        cond = conditions(env, name)["AbleToScale"]
        assert (cond["status"], cond["reason"]) == ("False", "FailedGetScale")
        assert cond["message"] == (
            f"the HPA controller was unable to get the target's current scale: {message}"
        )


async def test_a_target_deleted_and_recreated_scales_again(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    healthy(env)
    names = workload(env.emu, "app", 2, T0)
    env.set_cpu(["web-0", "web-1", *names], "200m")
    env.emu.store.create(hpa("app", "app", max_replicas=8))
    await sync_with_healthy(env, capsys)
    assert env.replicas("app") == 4

    assert env.emu.store.delete("apps", "deployments", "default", "app")
    (rec,) = [r for r in await env.step(15) if r.key == "default/app"]
    assert rec.current is None and not rec.rescaled
    ev = one_event(env, "FailedGetScale", "app")
    assert ev["message"] == 'deployments.apps "app" not found'
    cond = conditions(env, "app")["AbleToScale"]
    assert (cond["status"], cond["reason"]) == ("False", "FailedGetScale")
    status = env.hpa_obj("app")["status"]
    assert (status["currentReplicas"], status["desiredReplicas"]) == (2, 4)  # kept

    # Recreated at 2 replicas, its 2 pods still at 200%: the HPA picks it up again.
    env.emu.store.create(deployment_obj("app", 2))
    (rec,) = [r for r in await env.step(15) if r.key == "default/app"]
    assert (rec.current, rec.desired, rec.rescaled) == (2, 4, True), rec.errors
    assert env.replicas("app") == 4
    cond = conditions(env, "app")["AbleToScale"]
    assert (cond["status"], cond["reason"]) == ("True", "SucceededRescale")


# ---------------------------------------------------------------------------- selectors


async def test_a_selector_matching_no_pods(env: Env, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    healthy(env)
    env.emu.store.create(deployment_obj("empty", 3))
    env.emu.store.create(hpa("empty", "empty"))
    recs = await sync_with_healthy(env, capsys)
    rec = recs["default/empty"]
    assert (rec.current, rec.rescaled) == (3, False) and env.replicas("empty") == 3
    err = (
        "failed to get cpu utilization: unable to get metrics for resource cpu: "
        "no metrics returned from resource metrics API"
    )
    assert one_event(env, "FailedGetResourceMetric", "empty")["message"] == err
    assert one_event(env, "FailedComputeMetricsReplicas", "empty")["message"] == (
        f"invalid metrics (1 invalid out of 1), first error is: "
        f"failed to get cpu resource metric value: {err}"
    )
    cond = conditions(env, "empty")["ScalingActive"]
    assert (cond["status"], cond["reason"]) == ("False", "FailedGetResourceMetric")
    assert cond["message"] == f"the HPA was unable to compute the replica count: {err}"


async def test_a_selector_matching_every_pod_of_a_namespace(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``app Exists`` (planted raw) selects all 6 pods of namespace ``all``, whatever
    workload they belong to: they are all counted, as upstream counts them."""
    healthy(env)
    env.emu.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "all"}})
    every = {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    env.emu.store.create(deployment_obj("greedy", 2, ns="all", **every))
    names = [n for app in ("a", "b", "c") for n in pods_of(env, app, 2, ns="all")]
    env.emu.metrics.set_pod_metrics(
        pod_metrics(["web-0", "web-1"], "200m", T0)
        + pod_metrics(names, "100m", T0, ns="all")  # 100% of request on 6 pods
    )
    env.emu.store.create(hpa("greedy", "greedy", ns="all", max_replicas=20))
    recs = await sync_with_healthy(env, capsys)
    rec = recs["all/greedy"]
    # ratio 100/50 = 2 over the 6 pods found: ceil(2 * 6) = 12, limited to 2x current.
    assert (rec.current, rec.desired, rec.rescaled) == (2, 4, True), rec.errors
    assert rec.explanation is not None and rec.explanation.limited_by == ("scale-up-limit",)
    dep = env.emu.store.get("apps", "deployments", "all", "greedy")
    assert dep is not None and dep["spec"]["replicas"] == 4
    assert not events(env.emu, ns="all", reason="AmbiguousSelector")


# ---------------------------------------------------------------------------- the pods


async def test_pods_without_requests(env: Env, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    healthy(env)
    env.emu.store.create(deployment_obj("noreq", 2))
    names = []
    for i in range(2):
        p = pod("noreq", i, T0)
        del p["spec"]["containers"][0]["resources"]
        names.append(env.emu.store.create(p)["metadata"]["name"])
    env.set_cpu(["web-0", "web-1", *names], "200m")
    env.emu.store.create(hpa("noreq", "noreq"))
    recs = await sync_with_healthy(env, capsys)
    assert not recs["default/noreq"].rescaled and env.replicas("noreq") == 2
    err = "failed to get cpu utilization: missing request for cpu in container c of Pod noreq-0"
    assert one_event(env, "FailedGetResourceMetric", "noreq")["message"] == err
    cond = conditions(env, "noreq")["ScalingActive"]
    assert (cond["status"], cond["reason"]) == ("False", "FailedGetResourceMetric")
    assert cond["message"] == f"the HPA was unable to compute the replica count: {err}"


async def test_a_container_resource_metric_naming_a_missing_container(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    healthy(env)
    names = workload(env.emu, "side", 2, T0)
    env.set_cpu(["web-0", "web-1", *names], "200m")  # PodMetrics name container "c" only
    h = hpa("side", "side")
    h["spec"]["metrics"] = [
        {
            "type": "ContainerResource",
            "containerResource": {
                "name": "cpu",
                "container": "sidecar",
                "target": {"type": "Utilization", "averageUtilization": 50},
            },
        }
    ]
    env.emu.store.create(h)
    recs = await sync_with_healthy(env, capsys)
    rec = recs["default/side"]
    assert not rec.rescaled and env.replicas("side") == 2
    # Newest upstream: a pod whose PodMetrics lack the container counts as missing, so no
    # sample is left.
    err = (
        "failed to get cpu utilization: "
        "did not receive metrics for targeted pods (pods might be unready)"
    )
    assert one_event(env, "FailedGetContainerResourceMetric", "side")["message"] == err
    assert one_event(env, "FailedComputeMetricsReplicas", "side")["message"] == (
        f"invalid metrics (1 invalid out of 1), first error is: "
        f"failed to get sidecar container metric value: {err}"
    )
    cond = conditions(env, "side")["ScalingActive"]
    assert (cond["status"], cond["reason"]) == ("False", "FailedGetContainerResourceMetric")
    assert cond["message"] == f"the HPA was unable to compute the replica count: {err}"

    # PodMetrics that do report a "sidecar" the pod spec does not have: no request for it.
    side = pod_metrics(names, "200m", T0)
    for m in side:
        m["containers"].append({"name": "sidecar", "usage": {"cpu": "10m"}})
    env.emu.metrics.set_pod_metrics(pod_metrics(["web-0", "web-1"], "200m", T0) + side)
    (rec,) = [r for r in await env.step(15) if r.key == "default/side"]
    assert not rec.rescaled and env.replicas("side") == 2
    err = "failed to get cpu utilization: container sidecar not found in Pod side-0"
    got = [e["message"] for e in events(env.emu, reason="FailedGetContainerResourceMetric")]
    assert got[-1] == err, got
    cond = conditions(env, "side")["ScalingActive"]
    assert cond["message"] == f"the HPA was unable to compute the replica count: {err}"


# ------------------------------------------------------------------------ metric targets

# What the API server's validation says of each (validateMetricTarget), in the
# InvalidHPA event hpactl emits instead of scaling on an infinite or negative ratio.
REFUSED_TARGETS = [
    (
        {"type": "AverageValue", "averageValue": "0"},
        'averageValue: Invalid value: "0": must be positive',
    ),
    (
        {"type": "AverageValue", "averageValue": "-100m"},
        'averageValue: Invalid value: "-100m": must be positive',
    ),
    (
        {"type": "AverageValue", "averageValue": 0},
        "averageValue: Invalid value: 0: must be positive",
    ),
    (
        {"type": "Utilization", "averageUtilization": 0},
        "averageUtilization: Invalid value: 0: must be greater than 0",
    ),
    (
        {"type": "Utilization", "averageUtilization": -50},
        "averageUtilization: Invalid value: -50: must be greater than 0",
    ),
    (
        {"type": "AverageValue", "averageValue": "1.5e3m"},
        "averageValue: cannot parse '1.5e3m': quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
]


@pytest.mark.parametrize(("target", "problem"), REFUSED_TARGETS)
async def test_a_metric_target_the_api_server_refuses(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    target: Obj,
    problem: str,
) -> None:
    healthy(env)
    names = workload(env.emu, "odd", 2, T0)
    env.set_cpu(["web-0", "web-1", *names], "200m")
    env.emu.store.create(cpu_target_hpa("odd", target))
    recs = await sync_with_healthy(env, capsys)
    rec = recs["default/odd"]
    assert rec.skipped == "invalid" and not rec.rescaled and env.replicas("odd") == 2
    message = f"invalid HorizontalPodAutoscaler: spec.metrics[0].resource.target.{problem}"
    assert rec.errors == (message,)
    ev = one_event(env, "InvalidHPA", "odd")
    assert (ev["type"], ev["message"]) == ("Warning", message)
    # Still refused, and not repeated, 5 minutes later (past any stabilization window).
    for _ in range(20):
        await env.step(15)
    assert env.replicas("odd") == 2
    assert one_event(env, "InvalidHPA", "odd")["count"] == 1


@pytest.mark.parametrize(
    ("target", "replicas", "reason"),
    [
        # usage 200m per pod against a target 1e30 (or 2147483647%) above it: scale to min
        # once the 5-minute scale-down window has passed.
        ({"type": "AverageValue", "averageValue": "1e30"}, 1, "All metrics below target"),
        ({"type": "Utilization", "averageUtilization": 2147483647}, 1, "All metrics below target"),
        # 0.0001 is 1m after MilliValue() rounds up: far above target, to max (10).
        ({"type": "AverageValue", "averageValue": "0.0001"}, 10, "cpu resource above target"),
    ],
)
async def test_extreme_metric_targets_scale_to_the_bound_they_imply(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    target: Obj,
    replicas: int,
    reason: str,
) -> None:
    healthy(env)
    names = workload(env.emu, "odd", 2, T0)
    env.set_cpu(["web-0", "web-1", *names], "200m")
    env.emu.store.create(cpu_target_hpa("odd", target))
    await sync_with_healthy(env, capsys)
    for _ in range(21):
        await env.step(15)
    assert env.replicas("odd") == replicas
    cond = conditions(env, "odd")["ScalingActive"]
    assert (cond["status"], cond["reason"]) == ("True", "ValidMetricFound")
    rescales = [
        e["message"]
        for e in events(env.emu, reason="SuccessfulRescale")
        if e["involvedObject"]["name"] == "odd"
    ]
    assert rescales and rescales[-1] == f"New size: {replicas}; reason: {reason}"


# ----------------------------------------------------------------------------- replicas


async def test_min_above_max_is_refused_not_flapped(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Upstream would scale 2 -> 5 (below min) then 5 -> 2 (above max), every sync."""
    healthy(env)
    names = workload(env.emu, "mm", 3, T0)
    env.emu.metrics.set_pod_metrics(
        pod_metrics(["web-0", "web-1"], "200m", T0) + pod_metrics(names, "50m", T0)
    )
    env.emu.store.create(hpa("mm", "mm", min_replicas=5, max_replicas=2))
    recs = await sync_with_healthy(env, capsys)
    assert recs["default/mm"].skipped == "invalid"
    await env.step(15)
    assert env.replicas("mm") == 3
    ev = one_event(env, "InvalidHPA", "mm")
    assert ev["message"] == (
        "invalid HorizontalPodAutoscaler: spec.maxReplicas: Invalid value: 2: "
        "must be greater than or equal to `minReplicas`"
    )
    assert not [
        e
        for e in events(env.emu, reason="SuccessfulRescale")
        if e["involvedObject"]["name"] == "mm"
    ]


@pytest.mark.parametrize("bad", [2**31, 10**12, -(2**31) - 1])
async def test_replica_bounds_outside_int32_are_refused(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    bad: int,
) -> None:
    healthy(env)
    names = workload(env.emu, "wide", 2, T0)
    env.set_cpu(["web-0", "web-1", *names], "200m")
    h = hpa("wide", "wide")
    h["spec"]["maxReplicas"] = bad
    env.emu.store.create(h)
    recs = await sync_with_healthy(env, capsys)
    assert recs["default/wide"].skipped == "invalid" and env.replicas("wide") == 2
    assert one_event(env, "InvalidHPA", "wide")["message"] == (
        f"invalid HorizontalPodAutoscaler: spec.maxReplicas: Invalid value: {bad}: "
        "out of range for int32"
    )


async def test_replica_counts_at_the_int32_limit(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    top = 2**31 - 1
    healthy(env)
    # maxReplicas at the limit: an ordinary scale up (2 pods at 400% -> 2x, the rate limit).
    up = workload(env.emu, "up", 2, T0)
    # A target at spec.replicas 2147483647 with 2 pods at 25%: a scale down, not an overflow.
    env.emu.store.create(deployment_obj("down", top))
    down = pods_of(env, "down", 2)
    # min = max = the limit: scaled straight to it.
    pinned = workload(env.emu, "pinned", 2, T0)
    env.emu.metrics.set_pod_metrics(
        pod_metrics(["web-0", "web-1"], "200m", T0)
        + pod_metrics(up, "400m", T0)
        + pod_metrics(down, "25m", T0)
        + pod_metrics(pinned, "50m", T0)
    )
    env.emu.store.create(hpa("up", "up", max_replicas=top))
    env.emu.store.create(hpa("down", "down", max_replicas=top))
    env.emu.store.create(hpa("pinned", "pinned", min_replicas=top, max_replicas=top))
    recs = await sync_with_healthy(env, capsys)
    assert (recs["default/up"].current, recs["default/up"].desired) == (2, 4)
    assert env.replicas("up") == 4
    assert (recs["default/pinned"].desired, env.replicas("pinned")) == (top, top)
    rec = recs["default/down"]
    assert rec.current == top and not rec.rescaled  # held by the scale-down window
    for _ in range(21):
        await env.step(15)
    # 2 pods at 25% of request against 50%: ceil(0.5 * 2) = 1 replica, once the window
    # has passed; never a write of a wrapped-around (negative) scale-up limit meanwhile.
    assert not events(env.emu, reason="FailedRescale")
    assert env.replicas("down") == 1
    assert env.hpa_obj("down")["status"]["desiredReplicas"] == 1


# ------------------------------------------------------ autoscaling/v1 and its annotations

MALFORMED_ANNOTATIONS = [
    (f"autoscaling.alpha.kubernetes.io/{key}", value)
    for key in ("metrics", "current-metrics", "conditions", "behavior")
    for value in (
        "not json",
        '{"a": 1}',
        "[1, 2]",
        '[{"type": "Pods", "pods": 1}]',
        '[{"type": "Object", "object": {"target": "x", "metricName": "m"}}]',
        '[{"type": "Pods", "pods": {"metricName": "q", "targetAverageValue": "lots"}}]',
        '{"ScaleUp": {"Policies": [{"Type": "Pods", "Value": "x"}]}}',
    )
]


@pytest.mark.parametrize(("key", "value"), MALFORMED_ANNOTATIONS)
async def test_a_v1_hpa_with_a_malformed_annotation_is_read_without_it(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    key: str,
    value: str,
) -> None:
    """Upstream's v1 conversion ignores an annotation that does not unmarshal; the
    emulator's crashed on some shapes (500 on create) before."""
    healthy(env)
    names = workload(env.emu, "old", 2, T0)
    env.set_cpu(["web-0", "web-1", *names], "200m")
    env.emu.store.create(
        {
            "apiVersion": "autoscaling/v1",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "old", "namespace": "default", "annotations": {key: value}},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "old"},
                "maxReplicas": 4,
                "targetCPUUtilizationPercentage": 50,
            },
        }
    )
    stored = env.hpa_obj("old")
    assert key not in stored["metadata"].get("annotations", {})
    recs = await sync_with_healthy(env, capsys)
    rec = recs["default/old"]
    assert (rec.current, rec.desired, rec.rescaled) == (2, 4, True), rec.errors
    assert env.replicas("old") == 4
    assert not [e for e in events(env.emu) if e["type"] == "Warning"]


# ---------------------------------------------------------- garbage config and scenario


def billion_laughs(top: str = "") -> bytes:
    """Ten levels of nine aliases each: 9**10 strings once expanded."""
    lines = [f'{top}a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for prev, cur in zip("abcdefghi", "bcdefghij", strict=True):
        lines.append(f"{top}{cur}: &{cur} [{', '.join([f'*{prev}'] * 9)}]")
    return ("\n".join(lines) + "\n").encode()


GARBAGE: dict[str, bytes] = {
    "binary": b"\xff\xfe\x00garbage\x00\x01",
    "nul": b"apiVersion: x\x00\n",
    "huge": b"# " + b"x" * (5 * 1024 * 1024) + b"\n",
    "wrong-kind": b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n",
    "scalar": b"42\n",
    "tabs": b"\t\t: :\n",
    "deep-list": b"[" * 50_000 + b"]" * 50_000,
    "deep-map": b"a: " + b"{a: " * 5_000 + b"1" + b"}" * 5_000,
    "billion-laughs": billion_laughs(),
}


@pytest.fixture
def restore_logging() -> Any:
    import structlog

    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.mark.parametrize("command", ["run", "simulate"])
@pytest.mark.parametrize("name", list(GARBAGE))
@pytest.mark.timeout(60)
def test_a_garbage_file_is_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    restore_logging: Any,
    command: str,
    name: str,
) -> None:
    """``hpactl run --config`` and ``hpactl simulate``: never a traceback, a hang or an
    exhausted memory (a deeply nested document raised RecursionError, a non-UTF-8
    scenario UnicodeDecodeError, and a "billion laughs" scenario expanded until
    MemoryError)."""
    from hpactl.cli import main

    path = tmp_path / f"{name}.yaml"
    path.write_bytes(GARBAGE[name])
    argv = ["run", "--config", str(path)] if command == "run" else ["simulate", str(path)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"hpactl {command}: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("command", "name", "problem"),
    [
        ("run", "binary", "not UTF-8 text"),
        ("simulate", "binary", "not UTF-8 text"),
        ("run", "deep-list", "invalid YAML: nested too deeply"),
        ("simulate", "deep-map", "invalid YAML: nested too deeply"),
        ("simulate", "billion-laughs", "invalid YAML: document contains excessive aliasing"),
        (
            "simulate",
            "nul",
            "invalid YAML: unacceptable character #x0000: special characters are not allowed",
        ),
    ],
)
def test_garbage_file_messages(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    restore_logging: Any,
    command: str,
    name: str,
    problem: str,
) -> None:
    from hpactl.cli import main

    path = tmp_path / f"{name}.yaml"
    path.write_bytes(GARBAGE[name])
    argv = ["run", "--config", str(path)] if command == "run" else ["simulate", str(path)]
    assert main(argv) == 2
    assert capsys.readouterr().err.rstrip("\n").endswith(problem)


# ------------------------------------------------------------------------------ behavior

REFUSED_BEHAVIORS = [
    (
        {"scaleDown": {"stabilizationWindowSeconds": 10**12}},
        "scaleDown.stabilizationWindowSeconds: Invalid value: 1000000000000: "
        "must be less than or equal to 3600",
    ),
    (
        {"scaleUp": {"stabilizationWindowSeconds": -100}},
        "scaleUp.stabilizationWindowSeconds: Invalid value: -100: "
        "must be greater than or equal to zero",
    ),
    (
        {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 10**12}]}},
        "scaleUp.policies[0].periodSeconds: Invalid value: 1000000000000: "
        "must be less than or equal to 1800",
    ),
    (
        {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 0}]}},
        "scaleUp.policies[0].periodSeconds: Invalid value: 0: must be greater than zero",
    ),
    (
        {"scaleDown": {"policies": [{"type": "Percent", "value": -100, "periodSeconds": 15}]}},
        "scaleDown.policies[0].value: Invalid value: -100: must be greater than zero",
    ),
]


@pytest.mark.parametrize(("behavior", "problem"), REFUSED_BEHAVIORS)
async def test_a_behavior_the_api_server_refuses(
    env: Env,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    behavior: Obj,
    problem: str,
) -> None:
    """A window or period of 10**12 s overflowed the datetime arithmetic: an
    OverflowError traceback on every sync. Now refused with the API server's words."""
    healthy(env)
    names = workload(env.emu, "odd", 2, T0)
    env.set_cpu(["web-0", "web-1", *names], "200m")
    h = hpa("odd", "odd")
    h["spec"]["behavior"] = behavior
    env.emu.store.create(h)
    recs = await sync_with_healthy(env, capsys)
    rec = recs["default/odd"]
    assert rec.skipped == "invalid" and env.replicas("odd") == 2
    message = f"invalid HorizontalPodAutoscaler: spec.behavior.{problem}"
    assert one_event(env, "InvalidHPA", "odd")["message"] == message
    for _ in range(3):
        await env.step(15)
    assert env.replicas("odd") == 2
    assert one_event(env, "InvalidHPA", "odd")["count"] == 1
