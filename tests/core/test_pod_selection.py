"""KEP-5325 pod selection: annotation parsing, the owner set, the filter (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core_builders import bare_hpa

from hpactl.cache.projections import workload_scale_from_raw
from hpactl.core.extension_conditions import annotation_problems, apply_problems
from hpactl.core.pod_selection import (
    LABEL_SELECTOR,
    OWNER_REFERENCE,
    owned_only,
    owner_uids,
    selection_strategy,
)
from hpactl.model.metrics import ExternalMetricValues, PodMetric
from hpactl.model.pod import PodView, pod_view_from_raw

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _pod(name: str, owners: list[dict[str, object]] | None = None) -> PodView:
    meta: dict[str, object] = {"name": name, "namespace": "ns", "labels": {"app": "web"}}
    if owners is not None:
        meta["ownerReferences"] = owners
    return pod_view_from_raw({"metadata": meta, "spec": {}, "status": {}})


def test_strategy_from_the_annotation_only_with_the_gate() -> None:
    annotated = bare_hpa({"hpactl.dev/selection-strategy": "OwnerReference"})
    assert selection_strategy(annotated, True).strategy == OWNER_REFERENCE
    assert selection_strategy(annotated, False).strategy == LABEL_SELECTOR
    assert selection_strategy(bare_hpa(), True).strategy == LABEL_SELECTOR
    bad = selection_strategy(bare_hpa({"hpactl.dev/selection-strategy": "OwnerReferences"}), True)
    assert bad.strategy == LABEL_SELECTOR and bad.error is not None
    assert "'OwnerReferences'" in bad.error
    bad_hpa = bare_hpa({"hpactl.dev/selection-strategy": "OwnerReferences"})
    (problem,) = annotation_problems(bad_hpa, selection_strategy=True)
    assert (problem.reason, problem.message) == ("InvalidSelectionStrategy", bad.error)
    conds = apply_problems((), (problem,), NOW)
    assert [(c.type, c.status, c.reason, c.message) for c in conds] == [
        ("AnnotationsValid", "False", "InvalidSelectionStrategy", bad.error)
    ]
    assert annotation_problems(bad_hpa, selection_strategy=False) == ()
    assert (
        apply_problems(conds, annotation_problems(bare_hpa(), selection_strategy=True), NOW) == ()
    )


def test_controller_owner_is_projected() -> None:
    refs: list[dict[str, object]] = [
        {"kind": "Job", "uid": "job-1"},  # not the controller
        {"kind": "ReplicaSet", "uid": "rs-1", "controller": True},
    ]
    assert _pod("a", refs).owner_uid == "rs-1"
    assert _pod("b").owner_uid == ""
    assert _pod("c", [{"kind": "Job", "uid": "job-1", "controller": False}]).owner_uid == ""
    rs = workload_scale_from_raw(
        "ReplicaSet",
        {
            "metadata": {
                "name": "web-1",
                "uid": "rs-1",
                "ownerReferences": [{"kind": "Deployment", "uid": "dep-1", "controller": True}],
            },
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
        },
    )
    assert (rs.uid, rs.owner_uid) == ("rs-1", "dep-1")


def test_owner_set_follows_the_target_s_replicasets() -> None:
    rs = [("rs-old", "dep"), ("rs-new", "dep"), ("rs-other", "dep-2"), ("rs-bare", "")]
    assert owner_uids("dep", rs) == frozenset({"dep", "rs-old", "rs-new"})
    assert owner_uids("", rs) is None  # unknown target: no filtering (the KEP's fallback)


def test_filter_drops_the_stranger_from_pods_and_per_pod_metrics() -> None:
    mine = _pod("web-1", [{"uid": "rs-new", "controller": True}])
    stranger = _pod("debug")
    sample = PodMetric(NOW, timedelta(seconds=30), 100)
    external = ExternalMetricValues((5,), NOW)
    pods, metrics = owned_only(
        [mine, stranger],
        [{"web-1": sample, "debug": sample}, external, None],
        frozenset({"dep", "rs-new"}),
    )
    assert pods == (mine,)
    assert metrics == ({"web-1": sample}, external, None)
