"""Compact PodMetrics lists: the same samples, item for item, as the decoded JSON gives.

The shared fetcher keeps a namespace's PodMetricsList between syncs as ``PodSample``s
(parsed once) instead of decoded dicts; upstream's interpretation over them (sum over
the containers, one named container, missing resources, duplicates, malformed items)
must not move a single decision.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpactl.metrics.client import (
    PodSample,
    compact_pod_metrics,
    pod_metrics_from_items,
    pod_metrics_from_samples,
    resource_result,
    sample_labels,
)

quantity_st = st.sampled_from(["100m", "1", "250m", "1.5", "64Mi", "1Gi", "12345n", "0", 7])
usage_st = st.dictionaries(st.sampled_from(["cpu", "memory", "gpu"]), quantity_st, max_size=3)
container_st = st.fixed_dictionaries(
    {"name": st.sampled_from(["app", "side", "init"]), "usage": usage_st}
)
item_st = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {
                "name": st.sampled_from(["p0", "p1", "p2", "p3"]),
                "labels": st.dictionaries(
                    st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b"]), max_size=2
                ),
            }
        ),
        "timestamp": st.sampled_from(["2026-11-24T10:00:00Z", "2026-11-24T10:00:15.5Z"]),
        "window": st.sampled_from(["30s", "15s", "1m0s"]),
        "containers": st.lists(container_st, max_size=3),
    }
)


# No deadline: an example runs in a few ms; a loaded host's pause over Hypothesis's default
# 200 ms would fail it as "unreliable test timings", saying nothing about the code.
@settings(deadline=None)
@given(
    st.lists(item_st, max_size=12),
    st.sampled_from(["cpu", "memory", "gpu"]),
    st.sampled_from(["", "app", "side"]),
)
def test_compact_samples_give_what_the_items_give(
    items: list[dict[str, Any]], resource: str, container: str
) -> None:
    samples = compact_pod_metrics(items)
    assert all(isinstance(s, PodSample) for s in samples)
    assert [sample_labels(s) for s in samples] == [sample_labels(i) for i in items]
    assert pod_metrics_from_samples(samples, resource, container) == pod_metrics_from_items(
        items, resource, container
    )
    assert resource_result(samples, resource, container) == resource_result(
        items, resource, container
    )


def test_an_item_that_does_not_parse_is_kept_and_fails_only_where_it_did() -> None:
    good = {
        "metadata": {"name": "ok", "labels": {"app": "a"}},
        "timestamp": "2026-11-24T10:00:00Z",
        "window": "30s",
        "containers": [{"name": "app", "usage": {"cpu": "100m", "memory": "64Mi"}}],
    }
    bad_memory = {
        "metadata": {"name": "odd", "labels": {"app": "a"}},
        "timestamp": "2026-11-24T10:00:00Z",
        "window": "30s",
        "containers": [{"name": "app", "usage": {"cpu": "200m", "memory": "lots"}}],
    }
    samples = compact_pod_metrics([good, bad_memory])
    assert isinstance(samples[0], PodSample) and samples[1] is bad_memory
    # CPU reads fine from both, as before; memory fails on the malformed pod, as before.
    assert pod_metrics_from_samples(samples, "cpu") == pod_metrics_from_items(
        [good, bad_memory], "cpu"
    )
    with pytest.raises(ValueError):
        pod_metrics_from_items([good, bad_memory], "memory")
    with pytest.raises(ValueError):
        pod_metrics_from_samples(samples, "memory")


def test_pods_with_equal_labels_share_one_mapping() -> None:
    items = [
        {
            "metadata": {"name": f"web-{i}", "labels": {"app": "web", "hash": "1"}},
            "timestamp": "2026-11-24T10:00:00Z",
            "window": "30s",
            "containers": [{"name": "app", "usage": {"cpu": "100m"}}],
        }
        for i in range(3)
    ]
    samples = compact_pod_metrics(items)
    assert len({id(s.labels) for s in samples}) == 1
    assert samples[2].labels == {"app": "web", "hash": "1"}
