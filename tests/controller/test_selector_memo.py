"""The selector validation memo (``hpactl.controller.selector_memo``) and the store
version it is keyed by change nothing a sync does.

A sync reuses its HPA's last ``validateAndParseSelector`` answer only while the
selector text, the pod objects and the namespace's selector-store version are the
same. The unit tests pin each invalidation (each fails when its check is removed);
the simulations run with the memo on and off and must give identical steps,
including an HPA that turns ambiguous when a second HPA takes its pods, and recovers
when that HPA goes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from hpactl.controller import selector_memo
from hpactl.controller.selector_memo import SelectorMemo
from hpactl.controller.selector_store import SelectorStore
from hpactl.core.metrics_eval import validate_and_parse_selector
from hpactl.model.hpa import hpa_from_raw
from hpactl.model.pod import PodView, pod_view_from_raw
from hpactl.model.selectors import parse_selector
from hpactl.simulate.runner import Simulation
from hpactl.simulate.scenario import parse_scenario
from tests.controller.test_sync_fast_path import SCENARIOS
from tests.simulate.scenarios import cpu_metric, deployment, hpa, pod, pod_metrics

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)
    selector_memo.REUSE_SELECTOR_VALIDATION = True


def test_the_store_version_moves_with_every_change_of_the_namespace() -> None:
    store = SelectorStore()
    v0 = store.version("a")
    store.register("a/x")
    v1 = store.version("a")
    assert v1 != v0
    store.register("a/x")  # already known: nothing changes
    assert store.version("a") == v1
    sel = parse_selector("app=web")
    store.set("a/x", sel)
    v2 = store.version("a")
    assert v2 != v1
    store.set("a/x", sel)  # the same object: the steady case
    assert store.version("a") == v2
    store.set("a/x", parse_selector("app=web,tier!=db"))
    v3 = store.version("a")
    assert v3 not in (v1, v2)
    store.set("a/unregistered", sel)  # ignored (upstream)
    store.relevant("a/x", [frozenset({("app", "web")})])  # a read
    store.register("b/y")  # another namespace
    assert store.version("a") == v3
    store.remove("a/x")
    v4 = store.version("a")
    assert v4 not in (v0, v1, v2, v3)
    store.register("a/x")  # back to one match-nothing key, as at v1: still a new number
    assert store.version("a") not in (v1, v4)


def test_a_new_selector_object_with_the_same_text_moves_the_version() -> None:
    """The memo's answer holds the selector objects it was given: any new one counts."""
    store = SelectorStore()
    store.register("a/x")
    store.set("a/x", parse_selector("app=web"))
    v = store.version("a")
    store.set("a/x", parse_selector.__wrapped__("app=web"))  # type: ignore[attr-defined]
    assert store.version("a") != v


def _pod(name: str, app: str = "web") -> PodView:
    return pod_view_from_raw(pod(name, app))


def _memo(pods: tuple[PodView, ...], version: int) -> SelectorMemo:
    h = hpa_from_raw(hpa("web"))
    result = validate_and_parse_selector(h, "app=web", pods, {})
    return SelectorMemo("app=web", pods, version, {}, result)


def test_the_memo_fits_only_the_inputs_it_was_computed_from() -> None:
    a, b = _pod("web-a"), _pod("web-b")
    memo = _memo((a, b), 7)
    assert memo.fits("app=web", [a, b], 7)  # a new list of the same pod objects
    assert not memo.fits("app=web", [a, _pod("web-b")], 7)  # an equal, new pod object
    assert not memo.fits("app=web", [b, a], 7)
    assert not memo.fits("app=web", [a], 7)
    assert not memo.fits("app=web", [a, b, _pod("web-c")], 7)
    assert not memo.fits("app=web,x=y", [a, b], 7)
    assert not memo.fits("app=web", [a, b], 8)
    selector_memo.REUSE_SELECTOR_VALIDATION = False
    assert not memo.fits("app=web", [a, b], 7)


def _twins() -> dict[str, Any]:
    """One HPA steady, then a second HPA on the same Deployment (both ambiguous), the
    second deleted (the first recovers), a pod relabelled away and back."""
    twin = hpa("twin", [cpu_metric(60)], min_replicas=2, max_replicas=8)
    twin["spec"]["scaleTargetRef"]["name"] = "web"
    return {
        "objects": [
            deployment("web", 3),
            pod("web-a"),
            pod("web-b"),
            pod("web-c"),
            hpa("web", [cpu_metric(60)], min_replicas=2, max_replicas=8),
        ],
        "metrics": {
            "pods": [
                pod_metrics("web-a", "400m"),
                pod_metrics("web-b", "300m"),
                pod_metrics("web-c", "350m"),
            ]
        },
        "steps": [
            {},
            {"repeat": 3},
            {"apply": [twin]},
            {"repeat": 3},
            {"delete": [{"kind": "HorizontalPodAutoscaler", "name": "twin"}]},
            {"repeat": 3},
            {"apply": [pod("web-b", app="other")]},
            {"repeat": 2},
            {"apply": [pod("web-b")]},
            {"repeat": 3},
        ],
    }


async def _run(
    doc: dict[str, Any], *, reuse: bool, base: Path | None = None
) -> list[dict[str, Any]]:
    selector_memo.REUSE_SELECTOR_VALIDATION = reuse
    try:
        scenario = parse_scenario(copy.deepcopy(doc), source="test", base_dir=base)
        async with Simulation(scenario) as sim:
            results = await sim.run()
    finally:
        selector_memo.REUSE_SELECTOR_VALIDATION = True
    return [{**r.to_json(), "rescales": r.rescales} for r in results]


async def test_a_memoized_validation_decides_as_a_fresh_one() -> None:
    doc = _twins()
    full = await _run(doc, reuse=False)
    fast = await _run(doc, reuse=True)
    text = repr(full)
    assert "AmbiguousSelector" in text  # the scenario reaches the case the memo must see
    for i, (a, b) in enumerate(zip(fast, full, strict=True)):
        assert a == b, f"step {i}: {[k for k in a if a[k] != b.get(k)]}"


@pytest.mark.parametrize(("name", "doc", "base"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
async def test_every_scenario_decides_the_same_with_the_memo(
    name: str, doc: dict[str, Any], base: Path | None
) -> None:
    """The fast-path harness's scenarios (every example, the recorded day, pods and
    HPAs changing under still samples), memo off and on."""
    full = await _run(doc, reuse=False, base=base)
    fast = await _run(doc, reuse=True, base=base)
    assert len(fast) == len(full)
    for i, (a, b) in enumerate(zip(fast, full, strict=True)):
        assert a == b, f"{name} step {i}: {[k for k in a if a[k] != b.get(k)]}"
