"""--feature-gates parsing, as k8s.io/component-base/featuregate does it."""

from __future__ import annotations

import pytest

from hpactl.model.featuregates import (
    HPA_CONFIGURABLE_TOLERANCE,
    HPA_GENERATION,
    HPA_HISTORY_PERSISTENCE,
    HPA_OPTIMIZED_SELECTOR_STORE,
    HPA_SCALE_TO_ZERO,
    HPA_TOPOLOGY_SKEW_EVENTS,
    KNOWN_GATES,
    POD_LEVEL_RESOURCES,
    STALE_CONTROLLER_CONSISTENCY_HPA,
    FeatureGateError,
    FeatureGates,
    Stage,
    parse_feature_gates,
    parse_go_bool,
)


def test_defaults_are_kube_controller_manager_1_37() -> None:
    gates = FeatureGates.defaults().as_dict()
    upstream = {
        HPA_CONFIGURABLE_TOLERANCE: True,
        HPA_GENERATION: False,
        HPA_OPTIMIZED_SELECTOR_STORE: True,
        HPA_SCALE_TO_ZERO: True,
        POD_LEVEL_RESOURCES: True,
        STALE_CONTROLLER_CONSISTENCY_HPA: True,
    }
    assert {k: gates[k] for k in upstream} == upstream
    # Every other gate is hpactl's own (or an upstream proposal's not in 1.37): alpha and
    # off, so that by default status, conditions and events are exactly upstream's.
    own = set(gates) - set(upstream)
    assert HPA_TOPOLOGY_SKEW_EVENTS in own
    assert HPA_HISTORY_PERSISTENCE in own
    for name in own:
        assert gates[name] is False, name
        assert KNOWN_GATES[name].stage is Stage.ALPHA, name
    assert KNOWN_GATES[HPA_GENERATION].stage is Stage.ALPHA
    assert KNOWN_GATES[HPA_TOPOLOGY_SKEW_EVENTS].stage is Stage.ALPHA
    assert KNOWN_GATES[HPA_SCALE_TO_ZERO].stage is Stage.BETA


def test_parse_sets_named_gates_and_keeps_other_defaults() -> None:
    gates = parse_feature_gates("HPAScaleToZero=false,HPAGeneration=true")
    assert not gates.enabled(HPA_SCALE_TO_ZERO)
    assert gates.enabled(HPA_GENERATION)
    assert gates.enabled(HPA_CONFIGURABLE_TOLERANCE)
    assert str(gates) == "HPAGeneration=true,HPAScaleToZero=false"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("HPAGeneration=1", True),
        ("HPAGeneration=t", True),
        ("HPAGeneration=T", True),
        ("HPAGeneration=TRUE", True),
        ("HPAGeneration=True", True),
        ("HPAGeneration=0", False),
        ("HPAGeneration=f", False),
        ("HPAGeneration=FALSE", False),
        ("HPAGeneration=False", False),
        (" HPAGeneration = true ", True),  # keys and values are trimmed
        ("HPAGeneration=true,,", True),  # empty items are skipped
    ],
)
def test_go_parse_bool_values(text: str, expected: bool) -> None:
    assert parse_feature_gates(text).enabled(HPA_GENERATION) is expected


def test_later_value_for_same_gate_wins() -> None:
    assert (
        parse_feature_gates("HPAGeneration=true,HPAGeneration=false").enabled(HPA_GENERATION)
        is False
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Foo=true", "unrecognized feature gate: Foo"),
        ("hpascaletozero=true", "unrecognized feature gate: hpascaletozero"),
        # Removed in 1.32, so unknown to a 1.37 controller manager.
        ("HPAContainerMetrics=true", "unrecognized feature gate: HPAContainerMetrics"),
        ("HPAScaleToZero", "missing bool value for HPAScaleToZero"),
        (
            "HPAScaleToZero=yes",
            'invalid value of HPAScaleToZero=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
        ),
        (
            "HPAScaleToZero=",
            'invalid value of HPAScaleToZero=, err: strconv.ParseBool: parsing "": invalid syntax',
        ),
    ],
)
def test_rejections_use_upstream_messages(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError) as info:
        parse_feature_gates(text)
    assert str(info.value) == message


def test_all_alpha_and_all_beta_set_unnamed_gates_of_their_stage() -> None:
    gates = parse_feature_gates("AllAlpha=true,AllBeta=false")
    assert gates.enabled(HPA_GENERATION)
    assert not gates.enabled(HPA_SCALE_TO_ZERO)
    assert not gates.enabled(POD_LEVEL_RESOURCES)


def test_named_gate_wins_over_all_beta_in_any_order() -> None:
    for text in ("AllBeta=false,HPAScaleToZero=true", "HPAScaleToZero=true,AllBeta=false"):
        gates = parse_feature_gates(text)
        assert gates.enabled(HPA_SCALE_TO_ZERO)
        assert not gates.enabled(HPA_CONFIGURABLE_TOLERANCE)


def test_asking_for_an_unregistered_gate_is_a_programming_error() -> None:
    with pytest.raises(KeyError):
        FeatureGates.defaults().enabled("NoSuchGate")


def test_parse_go_bool_rejects_other_spellings() -> None:
    for text in ("yes", "on", "tRUE", "2", ""):
        with pytest.raises(ValueError, match="invalid syntax"):
            parse_go_bool(text)


def test_feature_gates_are_hashable_and_comparable() -> None:
    a = parse_feature_gates("HPAGeneration=true")
    b = parse_feature_gates("HPAGeneration=true")
    assert a == b
    assert hash(a) == hash(b)
    assert a != FeatureGates.defaults()
