"""OTEL_* settings and the choice of API client source."""

from __future__ import annotations

from hpactl.cli.run_cmd import parse_run_config
from hpactl.config import (
    SERVICE_ACCOUNT_TOKEN,
    ClientConnectionConfig,
    ClientSource,
    OtelSettings,
    read_otel_settings,
    select_client_source,
)


def test_otel_off_without_endpoint() -> None:
    settings, warnings = read_otel_settings({"OTEL_SERVICE_NAME": "x"})
    assert not settings.enabled
    assert settings.traces_endpoint is None
    assert warnings == ()


def test_otel_generic_endpoint_gets_the_traces_path() -> None:
    settings, _ = read_otel_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"})
    assert settings.enabled
    assert settings.traces_endpoint == "http://collector:4318/v1/traces"
    assert settings.service_name == "hpactl"
    assert settings.sampler == "parentbased_always_on"


def test_otel_traces_endpoint_is_used_as_given_and_wins() -> None:
    settings, _ = read_otel_settings(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318/custom",
            "OTEL_SERVICE_NAME": "hpactl-prod",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "0.25",
        }
    )
    assert settings == OtelSettings(
        traces_endpoint="http://b:4318/custom",
        service_name="hpactl-prod",
        sampler="parentbased_traceidratio",
        sampler_arg="0.25",
    )


def test_otel_disabled_by_sdk_switch_or_exporter_none() -> None:
    for env in (
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_SDK_DISABLED": "TRUE"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "none"},
    ):
        settings, _ = read_otel_settings(env)
        assert not settings.enabled


def test_otel_bad_values_are_reported_and_ignored() -> None:
    settings, warnings = read_otel_settings(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318",
            "OTEL_TRACES_SAMPLER": "sometimes",
            "OTEL_TRACES_SAMPLER_ARG": "2",
            "OTEL_SDK_DISABLED": "yes",
        }
    )
    assert settings.enabled
    assert settings.sampler == "parentbased_always_on"
    assert warnings == (
        'OTEL_SDK_DISABLED: ignoring "yes" (want true)',
        'OTEL_TRACES_SAMPLER: unknown sampler "sometimes", using parentbased_always_on',
    )
    _, warnings = read_otel_settings(
        {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}
    )
    assert warnings == ('OTEL_TRACES_SAMPLER_ARG: "2" is not a ratio in [0, 1], using 1.0',)


def test_run_config_carries_otel_settings_and_warnings() -> None:
    config = parse_run_config(
        [], {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "zipkin"}
    )
    assert config.otel.enabled
    assert config.warnings == ('OTEL_TRACES_EXPORTER: "zipkin" is not supported, using otlp',)


IN_CLUSTER_ENV = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def token_exists(path: str) -> bool:
    return path == SERVICE_ACCOUNT_TOKEN


def no_files(path: str) -> bool:
    return False


def test_explicit_flags_win_even_in_a_cluster() -> None:
    client = ClientConnectionConfig(kubeconfig="/k", master=None)
    assert select_client_source(client, IN_CLUSTER_ENV, token_exists) == ClientSource(
        "explicit", "/k"
    )
    client = ClientConnectionConfig(master="https://api:6443")
    assert select_client_source(client, IN_CLUSTER_ENV, token_exists) == ClientSource(
        "explicit", None, "https://api:6443"
    )


def test_in_cluster_when_service_account_and_env_present() -> None:
    assert select_client_source(
        ClientConnectionConfig(), IN_CLUSTER_ENV, token_exists
    ) == ClientSource("in-cluster")


def test_in_cluster_needs_the_token_file_and_both_variables() -> None:
    client = ClientConnectionConfig()
    assert select_client_source(client, IN_CLUSTER_ENV, no_files).kind == "default"
    assert (
        select_client_source(client, {"KUBERNETES_SERVICE_HOST": "h"}, token_exists).kind
        == "default"
    )


def test_default_uses_kubeconfig_variable() -> None:
    source = select_client_source(ClientConnectionConfig(), {"KUBECONFIG": "/home/u/kc"}, no_files)
    assert source == ClientSource("default", "/home/u/kc")
    assert select_client_source(ClientConnectionConfig(), {}, no_files) == ClientSource("default")
