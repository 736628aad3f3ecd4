"""--config FILE: KubeControllerManagerConfiguration, strict decoding, flag precedence."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from hpactl.cli.run_cmd import parse_run_config
from hpactl.config import ConfigError, ControllerConfig

HEADER = (
    "apiVersion: kubecontrollermanager.config.k8s.io/v1alpha1\n"
    "kind: KubeControllerManagerConfiguration\n"
)


def write(tmp_path: Path, body: str, header: str = HEADER) -> str:
    path = tmp_path / "kcm.yaml"
    path.write_text(header + body, encoding="utf-8")
    return str(path)


def load(path: str, *flags: str) -> ControllerConfig:
    return parse_run_config(["--config", path, *flags], {})


def error(path: str, *flags: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(path, *flags)
    message = str(info.value)
    assert "\n" not in message
    return message


FULL = """\
generic:
  clientConnection:
    kubeconfig: /etc/hpactl/kubeconfig
    qps: 55.5
    burst: 77
    contentType: application/vnd.kubernetes.protobuf
    acceptContentTypes: application/json
  leaderElection:
    leaderElect: false
    leaseDuration: 40s
    renewDeadline: 30s
    retryPeriod: 5s
    resourceLock: leases
    resourceName: my-lock
    resourceNamespace: hpactl-system
  controllers: ["*"]
  minResyncPeriod: 12h0m0s
hpaController:
  concurrentHorizontalPodAutoscalerSyncs: 9
  horizontalPodAutoscalerSyncPeriod: 30s
  horizontalPodAutoscalerDownscaleStabilizationWindow: 10m
  horizontalPodAutoscalerTolerance: 0.2
  horizontalPodAutoscalerCPUInitializationPeriod: 2m
  horizontalPodAutoscalerInitialReadinessDelay: 45s
deploymentController:
  concurrentDeploymentSyncs: 5
kubeCloudShared: {}
"""


def test_every_field_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    config = load(path)
    assert config.config_file == path
    assert config.client.kubeconfig == "/etc/hpactl/kubeconfig"
    assert config.client.qps == 55.5
    assert config.client.burst == 77
    le = config.leader_election
    assert le.leader_elect is False
    assert le.lease_duration == timedelta(seconds=40)
    assert le.renew_deadline == timedelta(seconds=30)
    assert le.retry_period == timedelta(seconds=5)
    assert le.resource_lock == "leases"
    assert le.resource_name == "my-lock"
    assert le.resource_namespace == "hpactl-system"
    hpa = config.hpa
    assert hpa.concurrent_syncs == 9
    assert hpa.sync_period == timedelta(seconds=30)
    assert hpa.downscale_stabilization_window == timedelta(minutes=10)
    assert hpa.tolerance == 0.2
    assert hpa.cpu_initialization_period == timedelta(minutes=2)
    assert hpa.initial_readiness_delay == timedelta(seconds=45)
    assert config.warnings == ()


def test_flags_given_override_the_file_and_only_those(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    config = load(
        path,
        "--horizontal-pod-autoscaler-sync-period=1m",
        "--kube-api-burst=5",
        "--leader-elect",
    )
    assert config.hpa.sync_period == timedelta(minutes=1)
    assert config.client.burst == 5
    assert config.leader_election.leader_elect is True
    # Not given on the command line: the file's values stand.
    assert config.hpa.tolerance == 0.2
    assert config.client.qps == 55.5
    assert config.leader_election.lease_duration == timedelta(seconds=40)


def test_flags_before_config_also_win(tmp_path: Path) -> None:
    path = write(tmp_path, "hpaController:\n  horizontalPodAutoscalerTolerance: 0.3\n")
    config = parse_run_config(["--horizontal-pod-autoscaler-tolerance=0.05", "--config", path], {})
    assert config.hpa.tolerance == 0.05


def test_file_fields_not_given_keep_defaults(tmp_path: Path) -> None:
    config = load(write(tmp_path, "hpaController:\n  horizontalPodAutoscalerSyncPeriod: 20s\n"))
    assert config.hpa.sync_period == timedelta(seconds=20)
    assert config.hpa.tolerance == 0.1
    assert config.leader_election == ControllerConfig().leader_election


def test_null_keeps_the_default(tmp_path: Path) -> None:
    config = load(
        write(tmp_path, "hpaController:\n  horizontalPodAutoscalerTolerance:\ngeneric:\n")
    )
    assert config.hpa.tolerance == 0.1


def test_json_is_yaml(tmp_path: Path) -> None:
    body = (
        '{"apiVersion": "kubecontrollermanager.config.k8s.io/v1alpha1",'
        ' "kind": "KubeControllerManagerConfiguration",'
        ' "hpaController": {"concurrentHorizontalPodAutoscalerSyncs": 2}}'
    )
    assert load(write(tmp_path, body, header="")).hpa.concurrent_syncs == 2


def test_deprecated_forbidden_windows_are_accepted_with_a_notice(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "hpaController:\n"
        "  horizontalPodAutoscalerUpscaleForbiddenWindow: 1m\n"
        "  horizontalPodAutoscalerDownscaleForbiddenWindow: 2m\n",
    )
    config = load(path)
    assert config.hpa.upscale_forbidden_window == timedelta(minutes=1)
    assert config.warnings == (
        f"{path}: hpaController.horizontalPodAutoscalerUpscaleForbiddenWindow is deprecated and has no effect",
        f"{path}: hpaController.horizontalPodAutoscalerDownscaleForbiddenWindow is deprecated and has no effect",
    )


def test_example_config_gives_the_defaults() -> None:
    example = Path(__file__).parents[2] / "config" / "kube-controller-manager-config.yaml"
    config = load(str(example))
    assert config == ControllerConfig(config_file=str(example))


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            "hpaController:\n  horizontalPodAutoscalerSyncPeriod: x\n",
            'hpaController.horizontalPodAutoscalerSyncPeriod: time: invalid duration "x"',
        ),
        (
            "hpaController:\n  horizontalPodAutoscalerSyncPeriod: 15\n",
            'hpaController.horizontalPodAutoscalerSyncPeriod: must be a duration string such as "15s", got 15',
        ),
        (
            "hpaController:\n  horizontalPodAutoscalerSyncPeriod: 0s\n",
            "hpaController.horizontalPodAutoscalerSyncPeriod: must be greater than 0, got 0s",
        ),
        (
            "hpaController:\n  horizontalPodAutoscalerTolerance: -0.5\n",
            "hpaController.horizontalPodAutoscalerTolerance: must not be negative, got -0.5",
        ),
        (
            "hpaController:\n  horizontalPodAutoscalerTolerance: '0.1'\n",
            'hpaController.horizontalPodAutoscalerTolerance: must be a number, got "0.1"',
        ),
        (
            "hpaController:\n  concurrentHorizontalPodAutoscalerSyncs: 0\n",
            "hpaController.concurrentHorizontalPodAutoscalerSyncs: must be greater than 0, but got 0",
        ),
        (
            "hpaController:\n  concurrentHorizontalPodAutoscalerSyncs: 2.5\n",
            "hpaController.concurrentHorizontalPodAutoscalerSyncs: must be an integer, got 2.5",
        ),
        (
            "hpaController:\n  concurrentHorizontalPodAutoscalerSyncs: true\n",
            "hpaController.concurrentHorizontalPodAutoscalerSyncs: must be an integer, got true",
        ),
        (
            "hpaController:\n  concurrentHorizontalPodAutoscalerSyncs: 4294967296\n",
            "hpaController.concurrentHorizontalPodAutoscalerSyncs: 4294967296 is out of range for int32",
        ),
        (
            "hpaController:\n  horizontalPodAutoscalerUseRESTClients: true\n",
            "hpaController.horizontalPodAutoscalerUseRESTClients: unknown field",
        ),
        (
            "hpaController:\n  horizontalPodAutoscalerSyncperiod: 15s\n",
            "hpaController.horizontalPodAutoscalerSyncperiod: unknown field",
        ),
        ("hpaController: 5\n", "hpaController: must be a mapping, got 5"),
        (
            "generic:\n  leaderElection:\n    leaderElect: maybe\n",
            'generic.leaderElection.leaderElect: must be true or false, got "maybe"',
        ),
        (
            "generic:\n  leaderElection:\n    resourceLock: configmaps\n",
            'generic.leaderElection.resourceLock: unsupported lock type "configmaps" (hpactl supports "leases")',
        ),
        (
            "generic:\n  leaderElection:\n    resourceName: 7\n",
            "generic.leaderElection.resourceName: must be a string, got 7",
        ),
        (
            "generic:\n  leaderElection:\n    renewDeadline: 20s\n",
            "generic.leaderElection.renewDeadline: must be less than --leader-elect-lease-duration (20s >= 15s)",
        ),
        (
            "generic:\n  leaderElection:\n    leaseDuration: 5s\n",
            "generic.leaderElection.leaseDuration: must be greater than --leader-elect-renew-deadline (5s <= 10s)",
        ),
        (
            "generic:\n  leaderElection:\n    leaderElection: true\n",
            "generic.leaderElection.leaderElection: unknown field",
        ),
        (
            "generic:\n  clientConnection:\n    qps: 0\n",
            "generic.clientConnection.qps: must be greater than 0, got 0",
        ),
        (
            "generic:\n  clientConnection:\n    burst: -1\n",
            "generic.clientConnection.burst: must be greater than 0, got -1",
        ),
        (
            "generic:\n  clientConnection:\n    master: https://x\n",
            "generic.clientConnection.master: unknown field",
        ),
        ("generic:\n  unknownThing: 1\n", "generic.unknownThing: unknown field"),
        ("featureGates:\n  HPAScaleToZero: true\n", "featureGates: unknown field"),
        ("metadata:\n  name: x\n", "metadata: unknown field"),
        ("deploymentController: [1]\n", "deploymentController: must be a mapping, got [1]"),
    ],
)
def test_field_errors_name_the_file_and_field(tmp_path: Path, body: str, problem: str) -> None:
    path = write(tmp_path, body)
    assert error(path) == f"{path}: {problem}"


def test_error_from_a_file_field_overridden_by_a_valid_flag_does_not_fire(tmp_path: Path) -> None:
    path = write(tmp_path, "hpaController:\n  horizontalPodAutoscalerSyncPeriod: 0s\n")
    # The file value is well-formed; the flag replaces it before validation.
    config = load(path, "--horizontal-pod-autoscaler-sync-period=5s")
    assert config.hpa.sync_period == timedelta(seconds=5)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty file, want a KubeControllerManagerConfiguration"),
        ("- a\n- b\n", 'must be a KubeControllerManagerConfiguration mapping, got ["a", "b"]'),
        (
            "kind: KubeControllerManagerConfiguration\n",
            'apiVersion: must be "kubecontrollermanager.config.k8s.io/v1alpha1", missing',
        ),
        (
            "apiVersion: kubecontrollermanager.config.k8s.io/v1beta1\nkind: KubeControllerManagerConfiguration\n",
            'apiVersion: must be "kubecontrollermanager.config.k8s.io/v1alpha1", got "kubecontrollermanager.config.k8s.io/v1beta1"',
        ),
        (
            "apiVersion: kubecontrollermanager.config.k8s.io/v1alpha1\n",
            'kind: must be "KubeControllerManagerConfiguration", missing',
        ),
        (
            "apiVersion: kubecontrollermanager.config.k8s.io/v1alpha1\nkind: KubeSchedulerConfiguration\n",
            'kind: must be "KubeControllerManagerConfiguration", got "KubeSchedulerConfiguration"',
        ),
        (
            HEADER
            + "hpaController:\n  horizontalPodAutoscalerSyncPeriod: 1s\n  horizontalPodAutoscalerSyncPeriod: 2s\n",
            'invalid YAML: duplicate field "horizontalPodAutoscalerSyncPeriod" (line 5, column 3)',
        ),
    ],
)
def test_document_errors(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, text, header="")
    assert error(path) == f"{path}: {problem}"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (HEADER + "hpaController: {\n", "(line 4, column 1)"),
        (HEADER + "hpaController:\n  a: 1\n b: 2\n", "(line 5, column 2)"),
        (HEADER + "---\n" + HEADER, "(line 3, column 1)"),
        (HEADER + "hpaController: [\n  'x'\n", "(line 5, column 1)"),
    ],
)
def test_yaml_syntax_errors_are_one_line_with_position(
    tmp_path: Path, text: str, where: str
) -> None:
    # The wording between the prefix and the position is PyYAML's.
    path = write(tmp_path, text, header="")
    message = error(path)
    assert message.startswith(f"{path}: invalid YAML: ")
    assert message.endswith(where)


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.yaml")
    assert error(path) == f'--config: cannot read "{path}": No such file or directory'


def test_directory_instead_of_file(tmp_path: Path) -> None:
    assert error(str(tmp_path)).startswith(f'--config: cannot read "{tmp_path}": ')


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert error(str(path)) == f'--config: cannot read "{path}": not UTF-8 text'


KCM_LOCK = """\
generic:
  leaderElection:
    leaderElect: true
    resourceName: kube-controller-manager
    resourceNamespace: kube-system
"""


def test_the_controller_managers_own_lock_is_refused(tmp_path: Path) -> None:
    """A kube-controller-manager configuration copied as it is would make hpactl take
    the controller manager's Lease (and stop all its controllers)."""
    path = write(tmp_path, KCM_LOCK)
    message = error(path)
    assert message.startswith(
        f'{path}: generic.leaderElection.resourceName: "kube-controller-manager" is '
        "kube-controller-manager's own lock"
    )
    assert "--leader-elect-allow-controller-manager-lock" in message
    # The flag overrides the file's name, as every flag does.
    assert load(path, "--leader-elect-resource-name=hpactl").leader_election.resource_name == (
        "hpactl"
    )
    forced = load(path, "--leader-elect-allow-controller-manager-lock")
    assert forced.leader_election.resource_name == "kube-controller-manager"
    # Without leader election no lock is taken: nothing to refuse.
    assert not load(path, "--leader-elect=false").leader_election.leader_elect


def test_the_controller_managers_own_lock_is_refused_as_a_flag() -> None:
    with pytest.raises(ConfigError) as info:
        parse_run_config(["--leader-elect-resource-name=kube-controller-manager"], {})
    assert str(info.value).startswith(
        '--leader-elect-resource-name: "kube-controller-manager" is '
        "kube-controller-manager's own lock"
    )
