"""`hpactl run` flags: names, Go value syntax, defaults and error messages."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from hpactl.cli.run_cmd import parse_run_config
from hpactl.config import (
    SETTINGS,
    ConfigError,
    ControllerConfig,
    format_default,
    format_go_float,
    parse_bind_address,
    parse_go_float,
    parse_go_int,
)
from hpactl.model.featuregates import FeatureGates


def parse(*argv: str) -> ControllerConfig:
    return parse_run_config(list(argv), {})


def attr(config: ControllerConfig, key: str) -> Any:
    value: Any = config
    for part in key.split("."):
        value = getattr(value, part)
    return value


def error(*argv: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse(*argv)
    message = str(info.value)
    assert "\n" not in message
    return message


# ------------------------------------------------------------------ defaults


def test_no_flags_gives_kube_controller_manager_defaults() -> None:
    config = parse()
    assert config == ControllerConfig()
    assert config.hpa.sync_period == timedelta(seconds=15)
    assert config.hpa.tolerance == 0.1
    assert config.hpa.downscale_stabilization_window == timedelta(minutes=5)
    assert config.hpa.initial_readiness_delay == timedelta(seconds=30)
    assert config.hpa.cpu_initialization_period == timedelta(minutes=5)
    assert config.hpa.concurrent_syncs == 5
    assert config.hpa.upscale_forbidden_window == timedelta(minutes=3)
    assert config.hpa.downscale_forbidden_window == timedelta(minutes=5)
    assert config.client.kubeconfig is None
    assert config.client.master is None
    assert config.client.qps == 20.0
    assert config.client.burst == 30
    le = config.leader_election
    assert le.leader_elect is True
    assert le.lease_duration == timedelta(seconds=15)
    assert le.renew_deadline == timedelta(seconds=10)
    assert le.retry_period == timedelta(seconds=2)
    assert le.resource_lock == "leases"
    # Not kube-controller-manager's "kube-controller-manager": never fight over its lock.
    assert le.resource_name == "hpactl"
    assert le.resource_namespace == "kube-system"
    assert config.metrics_bind_address == ":8080"
    assert config.metrics_listen == ("", 8080)
    assert config.health_probe_bind_address == ":8081"
    assert config.health_probe_listen == ("", 8081)
    assert config.log_format == "text" and config.vmodule == ()
    assert config.verbosity == 0
    assert config.feature_gates == FeatureGates.defaults()
    assert config.config_file is None
    assert config.warnings == ()
    assert not config.otel.enabled


DEFAULT_CASES: list[tuple[str, str | None]] = [
    ("--horizontal-pod-autoscaler-sync-period", "15s"),
    ("--horizontal-pod-autoscaler-tolerance", "0.1"),
    ("--horizontal-pod-autoscaler-downscale-stabilization", "5m0s"),
    ("--horizontal-pod-autoscaler-initial-readiness-delay", "30s"),
    ("--horizontal-pod-autoscaler-cpu-initialization-period", "5m0s"),
    ("--horizontal-pod-autoscaler-upscale-delay", "3m0s"),
    ("--horizontal-pod-autoscaler-downscale-delay", "5m0s"),
    ("--concurrent-horizontal-pod-autoscaler-syncs", "5"),
    ("--kube-api-qps", "20"),
    ("--kube-api-burst", "30"),
    ("--leader-elect", "true"),
    ("--leader-elect-lease-duration", "15s"),
    ("--leader-elect-renew-deadline", "10s"),
    ("--leader-elect-retry-period", "2s"),
    ("--leader-elect-resource-lock", '"leases"'),
    ("--leader-elect-resource-name", '"hpactl"'),
    ("--leader-elect-allow-controller-manager-lock", "false"),
    ("--leader-elect-resource-namespace", '"kube-system"'),
    ("--metrics-bind-address", '":8080"'),
    ("--health-probe-bind-address", '":8081"'),
    ("--metrics-secure", "false"),
    ("--tls-cert-file", None),
    ("--tls-private-key-file", None),
    ("--authorization-always-allow-paths", "[/healthz,/readyz,/livez]"),
    ("--authentication-token-webhook-cache-ttl", "10s"),
    ("--authorization-webhook-cache-authorized-ttl", "10s"),
    ("--authorization-webhook-cache-unauthorized-ttl", "10s"),
    ("--decision-records", "5"),
    ("--enable-debug-endpoints", "false"),
    ("--shadow", "false"),
    ("--shards", "1"),
    ("--hpa-sources", "[builtin]"),
    ("--metrics-providers-config", None),
    ("--logging-format", '"text"'),
    ("-v", "0"),
    ("--vmodule", None),
    ("--kubeconfig", None),
    ("--master", None),
    ("--config", None),
    ("--feature-gates", None),
]


@pytest.mark.parametrize(("flag", "shown"), DEFAULT_CASES)
def test_defaults_shown_go_style(flag: str, shown: str | None) -> None:
    (setting,) = [s for s in SETTINGS if flag in s.flags]
    assert format_default(setting) == shown


def test_every_setting_is_covered_by_the_default_table() -> None:
    assert {s.flag for s in SETTINGS} == {flag for flag, _ in DEFAULT_CASES}


# ------------------------------------------------------------- every flag parses

FLAG_CASES: list[tuple[list[str], str, Any]] = [
    (["--shadow"], "shadow", True),
    (["--shards=3"], "shards", 3),
    (["--hpa-sources=crd,builtin"], "hpa_sources", ("crd", "builtin")),
    # An empty value is no file (the file itself: tests/controller/test_metric_providers.py).
    (["--metrics-providers-config="], "metrics_providers_config", ""),
    (["--horizontal-pod-autoscaler-sync-period=30s"], "hpa.sync_period", timedelta(seconds=30)),
    (["--horizontal-pod-autoscaler-sync-period", "1m"], "hpa.sync_period", timedelta(minutes=1)),
    (["--horizontal-pod-autoscaler-tolerance=0.05"], "hpa.tolerance", 0.05),
    (["--horizontal-pod-autoscaler-tolerance", "0"], "hpa.tolerance", 0.0),
    (["--horizontal-pod-autoscaler-tolerance=1e-1"], "hpa.tolerance", 0.1),
    (
        ["--horizontal-pod-autoscaler-downscale-stabilization=1h30m"],
        "hpa.downscale_stabilization_window",
        timedelta(hours=1, minutes=30),
    ),
    (
        ["--horizontal-pod-autoscaler-downscale-stabilization=0s"],
        "hpa.downscale_stabilization_window",
        timedelta(0),
    ),
    (
        ["--horizontal-pod-autoscaler-initial-readiness-delay=500ms"],
        "hpa.initial_readiness_delay",
        timedelta(milliseconds=500),
    ),
    (
        ["--horizontal-pod-autoscaler-cpu-initialization-period=2m30s"],
        "hpa.cpu_initialization_period",
        timedelta(minutes=2, seconds=30),
    ),
    (["--concurrent-horizontal-pod-autoscaler-syncs=10"], "hpa.concurrent_syncs", 10),
    (["--concurrent-horizontal-pod-autoscaler-syncs", "0x10"], "hpa.concurrent_syncs", 16),
    (
        ["--horizontal-pod-autoscaler-upscale-delay=1m"],
        "hpa.upscale_forbidden_window",
        timedelta(minutes=1),
    ),
    (
        ["--horizontal-pod-autoscaler-downscale-delay=2m"],
        "hpa.downscale_forbidden_window",
        timedelta(minutes=2),
    ),
    (["--kubeconfig=/etc/kube/config"], "client.kubeconfig", "/etc/kube/config"),
    (["--kubeconfig", "kc.yaml"], "client.kubeconfig", "kc.yaml"),
    (["--kubeconfig="], "client.kubeconfig", None),
    (["--master=https://10.0.0.1:6443"], "client.master", "https://10.0.0.1:6443"),
    (["--kube-api-qps=50.5"], "client.qps", 50.5),
    (["--kube-api-burst", "100"], "client.burst", 100),
    (["--leader-elect=false"], "leader_election.leader_elect", False),
    (["--leader-elect"], "leader_election.leader_elect", True),
    (
        ["--leader-elect-lease-duration=30s"],
        "leader_election.lease_duration",
        timedelta(seconds=30),
    ),
    (["--leader-elect-renew-deadline=5s"], "leader_election.renew_deadline", timedelta(seconds=5)),
    (["--leader-elect-retry-period=1s"], "leader_election.retry_period", timedelta(seconds=1)),
    (["--leader-elect-resource-lock=leases"], "leader_election.resource_lock", "leases"),
    (["--leader-elect-resource-name=my-hpa"], "leader_election.resource_name", "my-hpa"),
    (
        ["--leader-elect-allow-controller-manager-lock"],
        "leader_election.allow_controller_manager_lock",
        True,
    ),
    (
        ["--leader-elect-resource-namespace", "hpactl-system"],
        "leader_election.resource_namespace",
        "hpactl-system",
    ),
    (["--metrics-bind-address=127.0.0.1:9090"], "metrics_bind_address", "127.0.0.1:9090"),
    (["--metrics-bind-address=0"], "metrics_bind_address", "0"),
    (["--health-probe-bind-address=[::1]:9091"], "health_probe_bind_address", "[::1]:9091"),
    (["--metrics-secure"], "metrics_auth.secure", True),
    (
        ["--authorization-always-allow-paths=/healthz, /debug/*"],
        "metrics_auth.always_allow_paths",
        ("/healthz", "/debug/*"),
    ),
    (["--authorization-always-allow-paths="], "metrics_auth.always_allow_paths", ()),
    (
        ["--authentication-token-webhook-cache-ttl=1m"],
        "metrics_auth.authentication_cache_ttl",
        timedelta(minutes=1),
    ),
    (
        ["--authorization-webhook-cache-authorized-ttl=5m"],
        "metrics_auth.authorized_cache_ttl",
        timedelta(minutes=5),
    ),
    (
        ["--authorization-webhook-cache-unauthorized-ttl=0s"],
        "metrics_auth.unauthorized_cache_ttl",
        timedelta(0),
    ),
    (["--decision-records=0"], "decision_records", 0),
    (["--decision-records", "20"], "decision_records", 20),
    (["--enable-debug-endpoints"], "enable_debug_endpoints", True),
    (["--logging-format=console"], "log_format", "text"),
    (["--logging-format", "text"], "log_format", "text"),
    (["--logging-format=JSON"], "log_format", "json"),
    (["--vmodule=hpactl.cache=4,hpactl.c*=2"], "vmodule", (("hpactl.cache", 4), ("hpactl.c*", 2))),
    (["--vmodule", ""], "vmodule", ()),
    (["-v", "4"], "verbosity", 4),
    (["-v=3"], "verbosity", 3),
    (["-v2"], "verbosity", 2),
    (["--v=5"], "verbosity", 5),
    (["--v", "6"], "verbosity", 6),
]


@pytest.mark.parametrize(("argv", "key", "expected"), FLAG_CASES)
def test_flag_sets_its_field_and_nothing_else(argv: list[str], key: str, expected: Any) -> None:
    config = parse(*argv)
    assert attr(config, key) == expected
    # Every other field keeps its default.
    default = ControllerConfig()
    head, _, rest = key.partition(".")
    if rest:
        expected_config = dataclasses.replace(
            default,
            **{head: dataclasses.replace(getattr(default, head), **{rest: attr(config, key)})},
        )
    else:
        expected_config = dataclasses.replace(default, **{key: attr(config, key)})
    assert dataclasses.replace(config, warnings=()) == expected_config


def test_every_flag_has_a_parse_case() -> None:
    keys = {key for _, key, _ in FLAG_CASES}
    # --config, --feature-gates and the TLS pair (one needs the other) have their own tests.
    tls = {"metrics_auth.tls_cert_file", "metrics_auth.tls_private_key_file"}
    assert keys == {s.key for s in SETTINGS} - {"config_file", "feature_gates"} - tls


def test_tls_files_come_as_a_pair_with_secure_metrics() -> None:
    config = parse(
        "--metrics-secure", "--tls-cert-file=/tls/tls.crt", "--tls-private-key-file", "/tls/k"
    )
    auth = config.metrics_auth
    assert (auth.secure, auth.tls_cert_file, auth.tls_private_key_file) == (
        True,
        "/tls/tls.crt",
        "/tls/k",
    )
    assert dataclasses.replace(config, metrics_auth=ControllerConfig().metrics_auth) == (
        ControllerConfig()
    )
    assert error("--metrics-secure", "--tls-cert-file=c") == (
        "--tls-cert-file: must be given together with --tls-private-key-file"
    )
    assert error("--metrics-secure", "--tls-private-key-file=k") == (
        "--tls-private-key-file: must be given together with --tls-cert-file"
    )
    assert error("--tls-cert-file=c", "--tls-private-key-file=k") == (
        "--tls-cert-file: needs --metrics-secure (without it /metrics is served over plain HTTP)"
    )
    # Empty values mean "not given", as for --kubeconfig.
    assert parse("--tls-cert-file=", "--tls-private-key-file=").metrics_auth.tls_cert_file is None


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--leader-elect"], True),
        (["--leader-elect=true"], True),
        (["--leader-elect=false"], False),
        (["--leader-elect=False"], False),
        (["--leader-elect=0"], False),
        (["--leader-elect=1"], True),
        (["--leader-elect=T"], True),
        (["--leader-elect=f"], False),
        (["--leader-elect", "false"], False),
        (["--leader-elect=false", "--leader-elect"], True),  # last one wins
    ],
)
def test_boolean_forms(argv: list[str], expected: bool) -> None:
    assert parse(*argv).leader_election.leader_elect is expected


def test_separate_value_may_start_with_a_dash_as_in_pflag() -> None:
    assert error("--leader-elect-lease-duration", "-5s") == (
        "--leader-elect-lease-duration: must be greater than 0, got -5s"
    )
    assert parse("--kubeconfig", "-").client.kubeconfig == "-"


def test_last_occurrence_of_a_flag_wins() -> None:
    config = parse(
        "--horizontal-pod-autoscaler-sync-period=10s", "--horizontal-pod-autoscaler-sync-period=20s"
    )
    assert config.hpa.sync_period == timedelta(seconds=20)


def test_feature_gate_flags_accumulate() -> None:
    config = parse("--feature-gates=HPAScaleToZero=false", "--feature-gates", "HPAGeneration=true")
    assert not config.feature_gates.enabled("HPAScaleToZero")
    assert config.feature_gates.enabled("HPAGeneration")
    assert config.feature_gates.enabled("HPAConfigurableTolerance")


def test_deprecated_flags_are_accepted_with_pflag_notice() -> None:
    config = parse(
        "--horizontal-pod-autoscaler-upscale-delay=1m",
        "--horizontal-pod-autoscaler-downscale-delay=1m",
    )
    assert config.warnings == (
        "Flag --horizontal-pod-autoscaler-upscale-delay has been deprecated, "
        "This flag is currently no-op and will be deleted.",
        "Flag --horizontal-pod-autoscaler-downscale-delay has been deprecated, "
        "This flag is currently no-op and will be deleted.",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("15s", timedelta(seconds=15)),
        ("5m0s", timedelta(minutes=5)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("300ms", timedelta(milliseconds=300)),
        ("1.5m", timedelta(seconds=90)),
        ("1h1m1s", timedelta(hours=1, minutes=1, seconds=1)),
        ("2500us", timedelta(microseconds=2500)),
        ("+20s", timedelta(seconds=20)),
    ],
)
def test_go_durations(text: str, expected: timedelta) -> None:
    assert parse(f"--horizontal-pod-autoscaler-sync-period={text}").hpa.sync_period == expected


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--no-such-flag"], "--no-such-flag: unknown flag"),
        (["--no-such-flag=1"], "--no-such-flag: unknown flag"),
        # No abbreviations: Go flags must be spelled out.
        (
            ["--horizontal-pod-autoscaler-sync=15s"],
            "--horizontal-pod-autoscaler-sync: unknown flag",
        ),
        (["extra"], 'unexpected argument "extra": run takes only flags'),
        (["--", "x"], 'unexpected argument "x": run takes only flags'),
        (
            ["--horizontal-pod-autoscaler-sync-period"],
            "--horizontal-pod-autoscaler-sync-period: flag needs an argument",
        ),
        (["-v"], "-v: flag needs an argument"),
        (
            ["--horizontal-pod-autoscaler-sync-period=x"],
            '--horizontal-pod-autoscaler-sync-period: time: invalid duration "x"',
        ),
        (
            ["--horizontal-pod-autoscaler-sync-period=15"],
            '--horizontal-pod-autoscaler-sync-period: time: missing unit in duration "15"',
        ),
        (
            ["--horizontal-pod-autoscaler-downscale-stabilization=1d"],
            '--horizontal-pod-autoscaler-downscale-stabilization: time: unknown unit "d" in duration "1d"',
        ),
        (
            ["--leader-elect-lease-duration="],
            '--leader-elect-lease-duration: time: invalid duration ""',
        ),
        (
            ["--horizontal-pod-autoscaler-sync-period=0s"],
            "--horizontal-pod-autoscaler-sync-period: must be greater than 0, got 0s",
        ),
        (
            ["--horizontal-pod-autoscaler-sync-period=-5s"],
            "--horizontal-pod-autoscaler-sync-period: must be greater than 0, got -5s",
        ),
        (
            ["--horizontal-pod-autoscaler-tolerance=-0.1"],
            "--horizontal-pod-autoscaler-tolerance: must not be negative, got -0.1",
        ),
        (
            ["--horizontal-pod-autoscaler-tolerance=NaN"],
            "--horizontal-pod-autoscaler-tolerance: must be a finite number, got NaN",
        ),
        (
            ["--horizontal-pod-autoscaler-tolerance=10%"],
            '--horizontal-pod-autoscaler-tolerance: invalid value "10%": strconv.ParseFloat: parsing "10%": invalid syntax',
        ),
        (
            ["--horizontal-pod-autoscaler-downscale-stabilization=-1m"],
            "--horizontal-pod-autoscaler-downscale-stabilization: must not be negative, got -1m0s",
        ),
        (
            ["--horizontal-pod-autoscaler-initial-readiness-delay=-1s"],
            "--horizontal-pod-autoscaler-initial-readiness-delay: must not be negative, got -1s",
        ),
        (
            ["--horizontal-pod-autoscaler-cpu-initialization-period=-1s"],
            "--horizontal-pod-autoscaler-cpu-initialization-period: must not be negative, got -1s",
        ),
        (
            ["--concurrent-horizontal-pod-autoscaler-syncs=0"],
            "--concurrent-horizontal-pod-autoscaler-syncs: must be greater than 0, but got 0",
        ),
        (
            ["--concurrent-horizontal-pod-autoscaler-syncs=-3"],
            "--concurrent-horizontal-pod-autoscaler-syncs: must be greater than 0, but got -3",
        ),
        (
            ["--concurrent-horizontal-pod-autoscaler-syncs=2.5"],
            '--concurrent-horizontal-pod-autoscaler-syncs: invalid value "2.5": strconv.ParseInt: parsing "2.5": invalid syntax',
        ),
        (
            ["--concurrent-horizontal-pod-autoscaler-syncs=3000000000"],
            '--concurrent-horizontal-pod-autoscaler-syncs: invalid value "3000000000": strconv.ParseInt: parsing "3000000000": value out of range',
        ),
        (["--kube-api-qps=0"], "--kube-api-qps: must be greater than 0, got 0"),
        (["--kube-api-qps=-1"], "--kube-api-qps: must be greater than 0, got -1"),
        (
            ["--kube-api-qps=fast"],
            '--kube-api-qps: invalid value "fast": strconv.ParseFloat: parsing "fast": invalid syntax',
        ),
        (
            ["--kube-api-qps=1e39"],
            '--kube-api-qps: invalid value "1e39": strconv.ParseFloat: parsing "1e39": value out of range',
        ),
        (["--kube-api-burst=0"], "--kube-api-burst: must be greater than 0, got 0"),
        (
            ["--kube-api-burst=lots"],
            '--kube-api-burst: invalid value "lots": strconv.ParseInt: parsing "lots": invalid syntax',
        ),
        (
            ["--leader-elect=yes"],
            '--leader-elect: invalid value "yes": strconv.ParseBool: parsing "yes": invalid syntax',
        ),
        (
            ["--leader-elect-lease-duration=0s"],
            "--leader-elect-lease-duration: must be greater than 0, got 0s",
        ),
        (
            ["--leader-elect-renew-deadline=15s"],
            "--leader-elect-renew-deadline: must be less than --leader-elect-lease-duration (15s >= 15s)",
        ),
        (
            ["--leader-elect-retry-period=9s"],
            "--leader-elect-retry-period: must be less than --leader-elect-renew-deadline / 1.2 (9s >= 10s / 1.2)",
        ),
        (
            ["--leader-elect-resource-lock=endpoints"],
            '--leader-elect-resource-lock: unsupported lock type "endpoints" (hpactl supports "leases")',
        ),
        (["--leader-elect-resource-name="], "--leader-elect-resource-name: must not be empty"),
        (
            ["--leader-elect-resource-namespace="],
            "--leader-elect-resource-namespace: must not be empty",
        ),
        (
            ["--metrics-bind-address=8080"],
            '--metrics-bind-address: invalid address "8080": want HOST:PORT, :PORT, or "0" to disable',
        ),
        (
            ["--authorization-always-allow-paths=/healthz,metrics"],
            '--authorization-always-allow-paths: "metrics" must start with "/"',
        ),
        (
            ["--authorization-always-allow-paths=/*/x"],
            '--authorization-always-allow-paths: "/*/x": only a trailing * is allowed',
        ),
        (
            ["--authorization-webhook-cache-authorized-ttl=-1s"],
            "--authorization-webhook-cache-authorized-ttl: must not be negative, got -1s",
        ),
        (["--decision-records=-1"], "--decision-records: must not be negative, got -1"),
        (
            ["--health-probe-bind-address=:99999"],
            '--health-probe-bind-address: invalid address ":99999": want HOST:PORT, :PORT, or "0" to disable',
        ),
        (
            ["--health-probe-bind-address=::1:80"],
            '--health-probe-bind-address: invalid address "::1:80": an IPv6 host must be in brackets',
        ),
        (
            ["--logging-format=xml"],
            '--logging-format: unsupported format "xml" (want text or json)',
        ),
        (["-v=-1"], '-v: invalid value "-1": strconv.ParseUint: parsing "-1": invalid syntax'),
        (
            ["--vmodule=hpactl.cache"],
            '--vmodule: "hpactl.cache": expected pattern=N (N a non-negative integer)',
        ),
        (
            ["--v=high"],
            '-v: invalid value "high": strconv.ParseUint: parsing "high": invalid syntax',
        ),
        (["--feature-gates=Foo=true"], "--feature-gates: unrecognized feature gate: Foo"),
        (
            ["--feature-gates=HPAScaleToZero"],
            "--feature-gates: missing bool value for HPAScaleToZero",
        ),
        (
            ["--feature-gates=HPAScaleToZero=maybe"],
            '--feature-gates: invalid value of HPAScaleToZero=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax',
        ),
        (["--config="], "--config: must not be empty"),
    ],
)
def test_error_messages(argv: list[str], message: str) -> None:
    assert error(*argv) == message


def test_leader_election_timings_are_not_checked_when_election_is_off() -> None:
    config = parse("--leader-elect=false", "--leader-elect-renew-deadline=1m")
    assert config.leader_election.renew_deadline == timedelta(minutes=1)


# --------------------------------------------------------- Go value helpers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10", 10),
        ("-7", -7),
        ("+7", 7),
        ("0x1F", 31),
        ("0o17", 15),
        ("017", 15),
        ("0b101", 5),
        ("1_000", 1000),
        ("0", 0),
    ],
)
def test_parse_go_int(text: str, expected: int) -> None:
    assert parse_go_int(text) == expected


@pytest.mark.parametrize(
    "text", ["", " 1", "1 ", "1.0", "08", "_1", "1__0", "0x", "0o", "0b", "0x_", "abc", "--1"]
)
def test_parse_go_int_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid syntax"):
        parse_go_int(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.1", 0.1),
        ("1", 1.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("-2.5E-1", -0.25),
        ("0x1p-2", 0.25),
        ("+Inf", float("inf")),
    ],
)
def test_parse_go_float(text: str, expected: float) -> None:
    assert parse_go_float(text) == expected


@pytest.mark.parametrize("text", ["", "1_0", " 1", "1,5", "0.1.2", "e5"])
def test_parse_go_float_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid syntax"):
        parse_go_float(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1, "0.1"),
        (20.0, "20"),
        (0.0, "0"),
        (-1.0, "-1"),
        (123456.0, "123456"),
        (1e6, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (2.5e-7, "2.5e-07"),
        (1e21, "1e+21"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Inf"),
    ],
)
def test_format_go_float_matches_strconv_g(value: float, text: str) -> None:
    assert format_go_float(value) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (":8080", ("", 8080)),
        ("0.0.0.0:8080", ("0.0.0.0", 8080)),
        ("localhost:0", ("localhost", 0)),
        ("[::]:8081", ("::", 8081)),
        ("0", None),
        ("", None),
    ],
)
def test_parse_bind_address(text: str, expected: tuple[str, int] | None) -> None:
    assert parse_bind_address(text) == expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--shards=0"], "--shards: must be between 1 and 256, got 0"),
        (["--shards=257"], "--shards: must be between 1 and 256, got 257"),
        (
            ["--shards=4", "--leader-elect=false"],
            "--shards: 4 shards need --leader-elect (each shard is owned through its own Lease)",
        ),
    ],
)
def test_shards_bounds_and_leader_election(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse(*argv)
    assert str(err.value) == message


def test_shards_accepted_with_leader_election() -> None:
    assert parse("--shards=8").shards == 8
    assert parse().shards == 1
