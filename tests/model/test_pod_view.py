"""pod_view_from_raw: projection of raw Pod JSON into PodView."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hpactl.core.replica_calculator import calculate_requests
from hpactl.model.pod import ContainerView, PodView, is_pod_ready_running, pod_view_from_raw

T, F = True, False


def raw_pod(**overrides: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {"name": "app", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
                {"name": "proxy", "resources": {"requests": {"cpu": "0.5"}}},
            ]
        },
        "status": {
            "phase": "Running",
            "startTime": "2026-03-01T11:00:00Z",
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {
                    "type": "Ready",
                    "status": "True",
                    "lastTransitionTime": "2026-03-01T11:00:30Z",
                },
            ],
        },
    }
    for key, value in overrides.items():
        pod[key] = value
    return pod


def test_projection_of_a_running_pod() -> None:
    view = pod_view_from_raw(raw_pod())
    assert view == PodView(
        namespace="shop",
        name="web-1",
        labels={"app": "web"},
        phase="Running",
        deleting=False,
        ready=True,
        ready_transition=datetime(2026, 3, 1, 11, 0, 30, tzinfo=UTC),
        start_time=datetime(2026, 3, 1, 11, 0, 0, tzinfo=UTC),
        containers=(
            ContainerView("app", {"cpu": 250, "memory": 1024**3 * 1000}),
            ContainerView("proxy", {"cpu": 500}),
        ),
        sidecars=(),
        pod_requests=None,
    )
    assert is_pod_ready_running(view)


def test_ready_condition_states() -> None:
    def with_ready(status: str | None) -> PodView:
        conditions = [] if status is None else [{"type": "Ready", "status": status}]
        return pod_view_from_raw(raw_pod(status={"phase": "Running", "conditions": conditions}))

    absent, true, false, unknown = (with_ready(s) for s in (None, "True", "False", "Unknown"))
    assert (absent.ready, absent.ready_unknown, absent.ready_transition) == (None, False, None)
    assert (true.ready, true.ready_unknown) == (True, False)
    assert (false.ready, false.ready_unknown) == (False, False)
    assert (unknown.ready, unknown.ready_unknown) == (False, True)
    assert [is_pod_ready_running(p) for p in (absent, true, false, unknown)] == [F, T, F, F]
    assert absent.start_time is None


def test_first_ready_condition_wins_and_pending_is_not_ready_running() -> None:
    status = {
        "phase": "Pending",
        "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "Ready", "status": "True"},
        ],
    }
    view = pod_view_from_raw(raw_pod(status=status))
    assert view.ready is False
    running_ready = pod_view_from_raw(raw_pod(status={**status, "phase": "Running"}))
    assert not is_pod_ready_running(running_ready)


def test_deletion_timestamp_marks_deleting() -> None:
    meta = {"name": "web-1", "namespace": "shop", "deletionTimestamp": "2026-03-01T12:00:00Z"}
    assert pod_view_from_raw(raw_pod(metadata=meta)).deleting is True


def test_sidecars_are_restart_always_init_containers_only() -> None:
    spec = {
        "initContainers": [
            {"name": "migrate", "resources": {"requests": {"cpu": "1"}}},
            {"name": "mesh", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
        ],
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}],
    }
    view = pod_view_from_raw(raw_pod(spec=spec))
    assert view.sidecars == (ContainerView("mesh", {"cpu": 50}),)
    # upstream calculatePodRequestsFromContainers: containers + sidecars, not plain init.
    assert calculate_requests([view], "", "cpu", True) == {"web-1": 150}


def test_pod_level_requests_follow_pod_requests_helper() -> None:
    """Go resourcehelpers.PodRequests: sidecar aggregate, pod-level override, overhead."""
    spec = {
        "resources": {"requests": {"memory": "1Gi"}},
        "overhead": {"cpu": "10m"},
        "initContainers": [
            {"name": "init-a", "resources": {"requests": {"cpu": "500m"}}},
            {"name": "mesh", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
            {"name": "init-b", "resources": {"requests": {"cpu": "300m"}}},
        ],
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}],
    }
    view = pod_view_from_raw(raw_pod(spec=spec))
    # cpu: max(100 + 50, 500, 300 + 50) = 500, plus 10 overhead; memory from the pod level.
    assert view.pod_requests == {"cpu": 510, "memory": 1024**3 * 1000}
    assert calculate_requests([view], "", "cpu", True) == {"web-1": 510}
    assert calculate_requests([view], "", "cpu", False) == {"web-1": 150}
    assert calculate_requests([view], "app", "cpu", True) == {"web-1": 100}


def test_pod_level_requests_need_a_supported_resource() -> None:
    spec = {
        "resources": {"requests": {"ephemeral-storage": "1Gi"}},
        "containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}],
    }
    assert pod_view_from_raw(raw_pod(spec=spec)).pod_requests is None
    hugepages = {**spec, "resources": {"requests": {"hugepages-2Mi": "4Mi"}}}
    assert pod_view_from_raw(raw_pod(spec=hugepages)).pod_requests == {
        "cpu": 100,
        "hugepages-2Mi": 4 * 1024**2 * 1000,
    }


def test_minimal_and_odd_objects_do_not_break_the_projection() -> None:
    view = pod_view_from_raw({})
    assert (view.name, view.phase, view.containers, view.ready) == ("", "", (), None)
    odd = raw_pod(
        spec={
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "bogus", "memory": 5}}}]
        }
    )
    # An unparsable quantity reads as absent (the API server never stores one).
    assert pod_view_from_raw(odd).containers == (ContainerView("c", {"memory": 5000}),)
