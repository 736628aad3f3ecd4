"""SelectorStore: upstream's hpaSelectorStore rules, and the cached ambiguity lookup
giving the core exactly the answer the whole namespace would."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hpactl.controller.selector_store import SelectorStore
from hpactl.core.metrics_eval import validate_and_parse_selector
from hpactl.model.hpa import hpa_from_raw
from hpactl.model.pod import pod_view_from_raw
from hpactl.model.selectors import Selector, parse_selector


def _hpa(name: str, ns: str = "default") -> Any:
    return hpa_from_raw(
        {
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                "maxReplicas": 5,
            },
        }
    )


def _pod(name: str, labels: dict[str, str], ns: str = "default") -> Any:
    return pod_view_from_raw(
        {"metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": {"containers": []}}
    )


def test_register_set_remove_follow_upstream() -> None:
    s = SelectorStore()
    s.set("default/a", parse_selector("app=a"))  # not registered: ignored
    assert "default/a" not in s
    s.register("default/a")
    assert s.snapshot("default")["default/a"].is_nothing
    s.set("default/a", parse_selector("app=a"))
    s.register("default/a")  # already known: keeps its selector
    assert str(s.snapshot("default")["default/a"]) == "app=a"
    s.register("other/a")
    assert set(s.snapshot("default")) == {"default/a"} and len(s) == 2
    s.remove("default/a")
    assert "default/a" not in s and s.snapshot("default") == {}


def test_relevant_tracks_selector_changes() -> None:
    s = SelectorStore()
    web = frozenset({("app", "web")})
    for k in ("default/a", "default/b"):
        s.register(k)
    assert set(s.relevant("default/a", [web])) == {"default/a"}
    s.set("default/b", parse_selector("app=web"))
    assert set(s.relevant("default/a", [web])) == {"default/a", "default/b"}
    s.set("default/b", parse_selector("app=other"))
    assert set(s.relevant("default/a", [web])) == {"default/a"}
    s.set("default/b", parse_selector("app in (web, other)"))
    assert set(s.relevant("default/a", [web])) == {"default/a", "default/b"}
    s.remove("default/b")
    assert set(s.relevant("default/a", [web])) == {"default/a"}


LABELS = st.dictionaries(
    st.sampled_from(["app", "tier"]), st.sampled_from(["x", "y", "z"]), min_size=1
)
SELECTORS = st.sampled_from(
    ["app=x", "app=y", "app in (x,y)", "tier=z", "app=x,tier=z", "app!=x", "tier", "!tier", ""]
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(st.none(), SELECTORS), min_size=1, max_size=6),
    st.lists(LABELS, max_size=6),
    st.integers(min_value=0, max_value=5),
    SELECTORS.filter(bool),
)
def test_relevant_gives_the_core_the_same_answer_as_the_whole_namespace(
    stored: list[str | None], pod_labels: list[dict[str, str]], who: int, own: str
) -> None:
    s = SelectorStore()
    keys = [f"default/h{i}" for i in range(len(stored))]
    for k, text in zip(keys, stored, strict=True):
        s.register(k)
        if text is not None:  # None: registered, not reconciled yet (match-nothing)
            s.set(k, parse_selector(text) if text else Selector.everything())
    key = keys[who % len(keys)]
    hpa = _hpa(key.split("/")[1])
    own_sel = parse_selector(own)
    pods = [_pod(f"p{i}", labels) for i, labels in enumerate(pod_labels)]
    mine = [p for p in pods if own_sel.matches(p.labels)]
    full = validate_and_parse_selector(hpa, own, pods, s.snapshot("default"))
    # Twice: the second answer comes from the cache.
    for _ in range(2):
        rel = s.relevant(key, {frozenset(p.labels.items()) for p in mine})
        fast = validate_and_parse_selector(hpa, own, mine, rel)
        assert (fast.error, fast.controlling_hpas) == (full.error, full.controlling_hpas)
        assert [e.message for e in fast.events] == [e.message for e in full.events]


# A small pool, so that answers cached early are asked for again after changes.
POOL = st.sampled_from(
    [{"app": "x"}, {"app": "y"}, {"app": "x", "tier": "z"}, {"tier": "z"}, {"app": "z"}]
)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("register"), st.integers(0, 4), st.none()),
        st.tuples(st.just("set"), st.integers(0, 4), st.one_of(st.none(), SELECTORS)),
        st.tuples(st.just("remove"), st.integers(0, 4), st.none()),
        st.tuples(st.just("ask"), st.integers(0, 4), st.lists(POOL, min_size=1, max_size=3)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_cached_answers_stay_equal_to_a_full_scan_while_selectors_change(
    ops: list[tuple[str, int, Any]],
) -> None:
    # Selector changes after answers were cached update the cache in place.
    s = SelectorStore()
    for op, i, arg in ops:
        key = f"default/h{i}"
        if op == "register":
            s.register(key)
        elif op == "set":
            s.set(key, Selector.nothing() if arg is None else parse_selector(arg))
        elif op == "remove":
            s.remove(key)
        else:
            label_sets = [frozenset(labels.items()) for labels in arg]
            everyone = s.snapshot("default")
            expected = {
                k for k, sel in everyone.items() if any(sel.matches(dict(ls)) for ls in label_sets)
            }
            if key in everyone:
                expected.add(key)
            got = s.relevant(key, label_sets)
            assert set(got) == expected
            assert all(got[k] is everyone[k] for k in got)
