"""The shared fetcher's label index picks exactly what a full selector scan picks."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hpactl.metrics.client import sample_labels
from hpactl.metrics.shared import _LabelIndex
from hpactl.model.selectors import parse_selector

KEYS = ["app", "tier", "env"]
VALS = ["a", "b", "c"]

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALS), max_size=3)
req_st = st.one_of(
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(KEYS), st.sampled_from(VALS)),
    st.builds(lambda k, v: f"{k}=={v}", st.sampled_from(KEYS), st.sampled_from(VALS)),
    st.builds(lambda k, v: f"{k}!={v}", st.sampled_from(KEYS), st.sampled_from(VALS)),
    st.builds(
        lambda k, vs: f"{k} in ({','.join(vs)})",
        st.sampled_from(KEYS),
        st.lists(st.sampled_from(VALS), min_size=1, max_size=3, unique=True),
    ),
    st.builds(
        lambda k, vs: f"{k} notin ({','.join(vs)})",
        st.sampled_from(KEYS),
        st.lists(st.sampled_from(VALS), min_size=1, max_size=3, unique=True),
    ),
    st.sampled_from(KEYS),
    st.builds(lambda k: f"!{k}", st.sampled_from(KEYS)),
)


# No deadline: an example runs in a few ms; a loaded host's pause over Hypothesis's default
# 200 ms would fail it as "unreliable test timings", saying nothing about the code.
@settings(deadline=None)
@given(st.lists(labels_st, max_size=30), st.lists(req_st, max_size=3))
def test_index_select_equals_scan(all_labels: list[dict[str, str]], reqs: list[str]) -> None:
    items: list[dict[str, Any]] = [
        {"metadata": {"name": f"p{i}", "labels": labels}} for i, labels in enumerate(all_labels)
    ]
    sel = parse_selector(",".join(reqs))
    idx = _LabelIndex(items, sample_labels)
    assert idx.select(sel) == [i for i in items if sel.matches(i["metadata"]["labels"])]
