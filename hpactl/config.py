"""hpactl's configuration: kube-controller-manager's HPA flags and component-config
file, plus hpactl's own serving and logging settings.

Every setting is described once, in ``SETTINGS``; the ``run`` command builds its
flags from that table, ``--config`` files are read through it, and
``docs/flags.md`` is rendered from it (``python -m hpactl.cli.flagdoc``).

Precedence: built-in defaults < ``--config`` file < flags given on the command
line.  Anything wrong raises :class:`ConfigError` whose message is one line that
names the flag or file field.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any, Literal

import yaml

from hpactl.model.featuregates import (
    ALL_ALPHA,
    ALL_BETA,
    HPA_METRIC_SOURCE,
    KNOWN_GATES,
    FeatureGateError,
    FeatureGates,
    Stage,
    parse_feature_gates_text,
    parse_go_bool,
)
from hpactl.model.metric_providers import MetricProvider, providers_from_raw
from hpactl.model.times import format_go_duration, parse_go_duration

API_VERSION = "kubecontrollermanager.config.k8s.io/v1alpha1"
KIND = "KubeControllerManagerConfiguration"

# kube-controller-manager holds the Lease "kube-controller-manager"; hpactl must
# never compete for it, so it uses its own name by default.
DEFAULT_LEADER_ELECTION_RESOURCE_NAME = "hpactl"
KCM_LEADER_ELECTION_RESOURCE_NAME = "kube-controller-manager"

SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"

LogFormat = Literal["text", "json"]


#: The values of --hpa-sources: autoscaling/v2 HPAs, and hpactl's own resource.
HPA_SOURCES: tuple[str, ...] = ("builtin", "crd")

#: Upper bound of --shards: each shard is a Lease renewed every retry period.
MAX_SHARDS = 256


class ConfigError(ValueError):
    """Bad configuration. ``str(err)`` is one line: ``<flag or field>: <problem>``."""


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class HPAControllerConfig:
    """HPAControllerConfiguration (kube-controller-manager config v1alpha1)."""

    concurrent_syncs: int = 5
    sync_period: timedelta = timedelta(seconds=15)
    downscale_stabilization_window: timedelta = timedelta(minutes=5)
    tolerance: float = 0.1
    cpu_initialization_period: timedelta = timedelta(minutes=5)
    initial_readiness_delay: timedelta = timedelta(seconds=30)
    # Deprecated upstream and no-ops there too; kept so old command lines still start.
    upscale_forbidden_window: timedelta = timedelta(minutes=3)
    downscale_forbidden_window: timedelta = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class ClientConnectionConfig:
    """How to reach the API server (generic.clientConnection, --kubeconfig, --master)."""

    kubeconfig: str | None = None
    master: str | None = None
    qps: float = 20.0
    burst: int = 30


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    """generic.leaderElection (component-base LeaderElectionConfiguration)."""

    leader_elect: bool = True
    lease_duration: timedelta = timedelta(seconds=15)
    renew_deadline: timedelta = timedelta(seconds=10)
    retry_period: timedelta = timedelta(seconds=2)
    resource_lock: str = "leases"
    resource_name: str = DEFAULT_LEADER_ELECTION_RESOURCE_NAME
    resource_namespace: str = "kube-system"
    # hpactl only: take a lock named kube-controller-manager anyway (see validate).
    allow_controller_manager_lock: bool = False


@dataclass(frozen=True, slots=True)
class OtelSettings:
    """OpenTelemetry trace export, from the standard ``OTEL_*`` variables.

    Export is on only when an OTLP endpoint is set and the SDK is not disabled.
    """

    traces_endpoint: str | None = None
    service_name: str = "hpactl"
    sampler: str = "parentbased_always_on"
    sampler_arg: str | None = None
    sdk_disabled: bool = False

    @property
    def enabled(self) -> bool:
        return not self.sdk_disabled and self.traces_endpoint is not None


DEFAULT_ALWAYS_ALLOW_PATHS: tuple[str, ...] = ("/healthz", "/readyz", "/livez")


@dataclass(frozen=True, slots=True)
class MetricsAuthConfig:
    """Secure metrics serving: HTTPS with delegated authentication and authorization,
    named as kube-controller-manager names its secure-serving flags."""

    secure: bool = False
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    authentication_cache_ttl: timedelta = timedelta(seconds=10)
    authorized_cache_ttl: timedelta = timedelta(seconds=10)
    unauthorized_cache_ttl: timedelta = timedelta(seconds=10)


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """Everything ``hpactl run`` needs, validated."""

    hpa: HPAControllerConfig = field(default_factory=HPAControllerConfig)
    client: ClientConnectionConfig = field(default_factory=ClientConnectionConfig)
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    metrics_auth: MetricsAuthConfig = field(default_factory=MetricsAuthConfig)
    # Shadow mode: decide and compare with the writing controller, write nothing.
    shadow: bool = False
    # Active-active sharding: HPAs split by a stable hash into this many shards, each
    # owned through its own Lease (1: one leader Lease, as kube-controller-manager).
    shards: int = 1
    # Which HorizontalPodAutoscalers hpactl reconciles: autoscaling/v2's ("builtin") and
    # hpactl's own autoscaling.hpactl.dev resource ("crd"; managed clusters use it alone).
    hpa_sources: tuple[str, ...] = ("builtin",)
    # KEP-6382 / KEP-4261: metrics providers asked directly (gate HPAMetricSource).
    metrics_providers_config: str | None = None
    metric_providers: tuple[MetricProvider, ...] = ()
    # Decision records kept per HPA (0: none) and the debug endpoint serving them.
    decision_records: int = 5
    enable_debug_endpoints: bool = False
    log_format: LogFormat = "text"
    verbosity: int = 0
    # --vmodule: (logger-name pattern, V level) pairs, first match wins over -v.
    vmodule: tuple[tuple[str, int], ...] = ()
    otel: OtelSettings = field(default_factory=OtelSettings)
    config_file: str | None = None
    # Deprecation and environment notices for the operator (printed before start).
    warnings: tuple[str, ...] = ()

    @property
    def metrics_listen(self) -> tuple[str, int] | None:
        """(host, port) for /metrics, or None when disabled ("0")."""
        return parse_bind_address(self.metrics_bind_address)

    @property
    def health_probe_listen(self) -> tuple[str, int] | None:
        """(host, port) for /healthz and /readyz, or None when disabled ("0")."""
        return parse_bind_address(self.health_probe_bind_address)


# ----------------------------------------------------------------------- the table

Kind = Literal[
    "duration", "float", "float32", "int32", "bool", "string", "strings", "level", "gates"
]

SECTION_GENERIC = "Generic flags"
SECTION_HPA = "Horizontalpodautoscaling controller flags"
SECTION_SERVING = "Serving flags"
SECTION_LOGS = "Logs flags"
SECTION_MISC = "Misc flags"
SECTIONS: tuple[str, ...] = (
    SECTION_GENERIC,
    SECTION_HPA,
    SECTION_SERVING,
    SECTION_LOGS,
    SECTION_MISC,
)

# Go type names, as pflag prints them in --help.
GO_TYPE: Mapping[Kind, str] = {
    "duration": "duration",
    "float": "float",
    "float32": "float32",
    "int32": "int32",
    "bool": "",
    "string": "string",
    "strings": "strings",
    "level": "Level",
    "gates": "mapStringBool",
}


@dataclass(frozen=True, slots=True)
class Setting:
    """One flag (and, where upstream has one, its config-file field)."""

    key: str  # attribute path in ControllerConfig, e.g. "hpa.sync_period"
    flags: tuple[str, ...]  # first is the canonical name used in messages
    kind: Kind
    section: str
    help: str
    file_field: str | None = None  # dotted path in KubeControllerManagerConfiguration
    deprecated: str | None = None  # pflag MarkDeprecated message

    @property
    def flag(self) -> str:
        return self.flags[0]

    @property
    def default(self) -> Any:
        return _get_path(ControllerConfig(), self.key)


def _go_bool(value: bool) -> str:
    return "true" if value else "false"


def _gates_help() -> str:
    lines = [
        "A set of key=value pairs that describe feature gates for alpha/experimental features. "
        "Options are:",
        f"{ALL_ALPHA}=true|false (ALPHA - default=false)",
        f"{ALL_BETA}=true|false (BETA - default=false)",
    ]
    for name in sorted(KNOWN_GATES):
        spec = KNOWN_GATES[name]
        lines.append(f"{name}=true|false ({spec.stage.value} - default={_go_bool(spec.default)})")
    return "\n".join(lines)


_HPA = "hpaController."
_LE = "generic.leaderElection."
_CC = "generic.clientConnection."

SETTINGS: tuple[Setting, ...] = (
    # --- Generic flags (kube-controller-manager prints these under "Generic flags")
    Setting(
        "feature_gates",
        ("--feature-gates",),
        "gates",
        SECTION_GENERIC,
        _gates_help(),
    ),
    Setting(
        "client.burst",
        ("--kube-api-burst",),
        "int32",
        SECTION_GENERIC,
        "Burst to use while talking with kubernetes apiserver.",
        _CC + "burst",
    ),
    Setting(
        "client.qps",
        ("--kube-api-qps",),
        "float32",
        SECTION_GENERIC,
        "QPS to use while talking with kubernetes apiserver.",
        _CC + "qps",
    ),
    Setting(
        "leader_election.leader_elect",
        ("--leader-elect",),
        "bool",
        SECTION_GENERIC,
        "Start a leader election client and gain leadership before executing the main loop. "
        "Enable this when running replicated components for high availability.",
        _LE + "leaderElect",
    ),
    Setting(
        "leader_election.lease_duration",
        ("--leader-elect-lease-duration",),
        "duration",
        SECTION_GENERIC,
        "The duration that non-leader candidates will wait after observing a leadership "
        "renewal until attempting to acquire leadership of a led but unrenewed leader slot. "
        "This is effectively the maximum duration that a leader can be stopped before it is "
        "replaced by another candidate. This is only applicable if leader election is enabled.",
        _LE + "leaseDuration",
    ),
    Setting(
        "leader_election.renew_deadline",
        ("--leader-elect-renew-deadline",),
        "duration",
        SECTION_GENERIC,
        "The interval between attempts by the acting master to renew a leadership slot "
        "before it stops leading. This must be less than the lease duration. This is only "
        "applicable if leader election is enabled.",
        _LE + "renewDeadline",
    ),
    Setting(
        "leader_election.resource_lock",
        ("--leader-elect-resource-lock",),
        "string",
        SECTION_GENERIC,
        "The type of resource object that is used for locking during leader election. "
        "Supported options are 'leases'.",
        _LE + "resourceLock",
    ),
    Setting(
        "leader_election.resource_name",
        ("--leader-elect-resource-name",),
        "string",
        SECTION_GENERIC,
        "The name of resource object that is used for locking during leader election. "
        'Differs from kube-controller-manager\'s default ("kube-controller-manager") so that '
        "hpactl never competes for the controller manager's own lock.",
        _LE + "resourceName",
    ),
    Setting(
        "leader_election.allow_controller_manager_lock",
        ("--leader-elect-allow-controller-manager-lock",),
        "bool",
        SECTION_GENERIC,
        "Allow --leader-elect-resource-name=kube-controller-manager. That is the "
        "controller manager's own lock: holding it stops every controller of "
        "kube-controller-manager, and hpactl refuses it unless this is set (for a "
        "cluster whose controller manager runs with another lock name).",
    ),
    Setting(
        "leader_election.resource_namespace",
        ("--leader-elect-resource-namespace",),
        "string",
        SECTION_GENERIC,
        "The namespace of resource object that is used for locking during leader election.",
        _LE + "resourceNamespace",
    ),
    Setting(
        "leader_election.retry_period",
        ("--leader-elect-retry-period",),
        "duration",
        SECTION_GENERIC,
        "The duration the clients should wait between attempting acquisition and renewal "
        "of a leadership. This is only applicable if leader election is enabled.",
        _LE + "retryPeriod",
    ),
    # --- Horizontalpodautoscaling controller flags
    Setting(
        "hpa.concurrent_syncs",
        ("--concurrent-horizontal-pod-autoscaler-syncs",),
        "int32",
        SECTION_HPA,
        "The number of horizontal pod autoscaler objects that are allowed to sync "
        "concurrently. Larger number = more responsive horizontal pod autoscaler objects "
        "processing, but more CPU (and network) load.",
        _HPA + "concurrentHorizontalPodAutoscalerSyncs",
    ),
    Setting(
        "hpa.cpu_initialization_period",
        ("--horizontal-pod-autoscaler-cpu-initialization-period",),
        "duration",
        SECTION_HPA,
        "The period after pod start when CPU samples might be skipped.",
        _HPA + "horizontalPodAutoscalerCPUInitializationPeriod",
    ),
    Setting(
        "hpa.downscale_forbidden_window",
        ("--horizontal-pod-autoscaler-downscale-delay",),
        "duration",
        SECTION_HPA,
        "The period since last downscale, before another downscale can be performed in "
        "horizontal pod autoscaler.",
        _HPA + "horizontalPodAutoscalerDownscaleForbiddenWindow",
        deprecated="This flag is currently no-op and will be deleted.",
    ),
    Setting(
        "hpa.downscale_stabilization_window",
        ("--horizontal-pod-autoscaler-downscale-stabilization",),
        "duration",
        SECTION_HPA,
        "The period for which autoscaler will look backwards and not scale down below any "
        "recommendation it made during that period.",
        _HPA + "horizontalPodAutoscalerDownscaleStabilizationWindow",
    ),
    Setting(
        "hpa.initial_readiness_delay",
        ("--horizontal-pod-autoscaler-initial-readiness-delay",),
        "duration",
        SECTION_HPA,
        "The period after pod start during which readiness changes will be treated as "
        "initial readiness.",
        _HPA + "horizontalPodAutoscalerInitialReadinessDelay",
    ),
    Setting(
        "hpa.sync_period",
        ("--horizontal-pod-autoscaler-sync-period",),
        "duration",
        SECTION_HPA,
        "The period for syncing the number of pods in horizontal pod autoscaler.",
        _HPA + "horizontalPodAutoscalerSyncPeriod",
    ),
    Setting(
        "hpa.tolerance",
        ("--horizontal-pod-autoscaler-tolerance",),
        "float",
        SECTION_HPA,
        "The minimum change (from 1.0) in the desired-to-actual metrics ratio for the "
        "horizontal pod autoscaler to consider scaling.",
        _HPA + "horizontalPodAutoscalerTolerance",
    ),
    Setting(
        "hpa.upscale_forbidden_window",
        ("--horizontal-pod-autoscaler-upscale-delay",),
        "duration",
        SECTION_HPA,
        "The period since last upscale, before another upscale can be performed in "
        "horizontal pod autoscaler.",
        _HPA + "horizontalPodAutoscalerUpscaleForbiddenWindow",
        deprecated="This flag is currently no-op and will be deleted.",
    ),
    Setting(
        "shadow",
        ("--shadow",),
        "bool",
        SECTION_HPA,
        "Run beside the controller that scales (kube-controller-manager's, or another "
        "hpactl): decide as usual from the same informers and metrics, write nothing (no "
        "scale, no HPA status, no Events, no Lease: leader election is off whatever "
        "--leader-elect says), and compare each decision with what that controller "
        "records (hpactl_shadow_divergences_total; docs/shadow.md). Needs only read access "
        "(manifests/shadow/). Run one replica.",
        _HPA + "shadow",
    ),
    Setting(
        "shards",
        ("--shards",),
        "int32",
        SECTION_HPA,
        "Split the HorizontalPodAutoscalers into this many shards by a stable hash of "
        "their namespace, each owned through its own Lease (<leader-elect-resource-name>"
        "-shard-<i>); every running replica takes a fair share and a dead replica's shards "
        "are taken over within the lease duration (docs/high-availability.md). 1 is "
        "kube-controller-manager's single leader. Needs --leader-elect when greater than 1.",
        _HPA + "shards",
    ),
    Setting(
        "hpa_sources",
        ("--hpa-sources",),
        "strings",
        SECTION_HPA,
        "Which HorizontalPodAutoscalers to reconcile: builtin (autoscaling/v2, in place "
        "of kube-controller-manager's controller), crd (hpactl's own "
        "horizontalpodautoscalers.autoscaling.hpactl.dev, beside the built-in controller "
        "of a managed cluster), or both. With crd, built-in HPAs are still watched "
        "(read-only): an hpactl one targeting the same workload is not scaled "
        "(ScalingActive=False, ConflictingAutoscaler; docs/managed-clusters.md).",
    ),
    # --- hpactl's own serving flags, named as controller-runtime names them, and the
    # secure-serving, authentication and authorization flags of kube-controller-manager
    # that concern the secure metrics server.
    Setting(
        "metrics_auth.authentication_cache_ttl",
        ("--authentication-token-webhook-cache-ttl",),
        "duration",
        SECTION_SERVING,
        "The duration to cache responses from the webhook token authenticator (the "
        "TokenReview that authenticates a request to the secure metrics server).",
    ),
    Setting(
        "metrics_auth.always_allow_paths",
        ("--authorization-always-allow-paths",),
        "strings",
        SECTION_SERVING,
        "A list of HTTP paths to skip during authorization, i.e. these are authorized "
        "without contacting the 'core' kubernetes server. With --metrics-secure, requests "
        "for these paths on the metrics address need no token; a trailing * matches a "
        "prefix.",
    ),
    Setting(
        "metrics_auth.authorized_cache_ttl",
        ("--authorization-webhook-cache-authorized-ttl",),
        "duration",
        SECTION_SERVING,
        "The duration to cache 'authorized' responses from the webhook authorizer.",
    ),
    Setting(
        "metrics_auth.unauthorized_cache_ttl",
        ("--authorization-webhook-cache-unauthorized-ttl",),
        "duration",
        SECTION_SERVING,
        "The duration to cache 'unauthorized' responses from the webhook authorizer.",
    ),
    Setting(
        "metrics_providers_config",
        ("--metrics-providers-config",),
        "string",
        SECTION_HPA,
        "A YAML file naming metrics providers hpactl asks directly for some Pods, Object "
        "and External metrics (by metric name pattern, or by the API group an HPA names in "
        "its hpactl.dev/metric-sources annotation), over TLS with hpactl's own "
        "credentials; every other metric goes through the API server as usual "
        "(docs/extensions.md). Needs the HPAMetricSource feature gate.",
    ),
    Setting(
        "decision_records",
        ("--decision-records",),
        "int32",
        SECTION_SERVING,
        "The number of decision records kept per HorizontalPodAutoscaler (the latest "
        "syncs' explanations: inputs, each metric's proposal, stabilization, rate limits, "
        "min/max, the writes made), served by --enable-debug-endpoints and read by "
        "'hpactl explain'. 0 keeps none.",
    ),
    Setting(
        "enable_debug_endpoints",
        ("--enable-debug-endpoints",),
        "bool",
        SECTION_SERVING,
        "Serve each HorizontalPodAutoscaler's decision records as JSON at "
        "/debug/hpa/{namespace}/{name} on the metrics address (behind the same "
        "authentication and authorization as /metrics with --metrics-secure). Off by "
        "default: the records name workloads and show metric values.",
    ),
    Setting(
        "health_probe_bind_address",
        ("--health-probe-bind-address",),
        "string",
        SECTION_SERVING,
        "The address the /healthz, /livez and /readyz endpoints bind to, as HOST:PORT or "
        ':PORT; "0" disables them.',
    ),
    Setting(
        "metrics_bind_address",
        ("--metrics-bind-address",),
        "string",
        SECTION_SERVING,
        "The address the Prometheus /metrics endpoint binds to, as HOST:PORT or :PORT; "
        '"0" disables it.',
    ),
    Setting(
        "metrics_auth.secure",
        ("--metrics-secure",),
        "bool",
        SECTION_SERVING,
        "Serve /metrics over HTTPS and only to authenticated, authorized clients, as "
        "kube-controller-manager's secure port does: a request's bearer token is "
        "authenticated with a TokenReview and the user authorized with a "
        "SubjectAccessReview (verb get on the non-resource path /metrics). When false, "
        "/metrics is plain HTTP without authentication.",
    ),
    Setting(
        "metrics_auth.tls_cert_file",
        ("--tls-cert-file",),
        "string",
        SECTION_SERVING,
        "File containing the default x509 Certificate for HTTPS. (CA cert, if any, "
        "concatenated after server cert). If --metrics-secure is set and --tls-cert-file "
        "and --tls-private-key-file are not provided, a self-signed certificate and key "
        "are generated in memory at start.",
    ),
    Setting(
        "metrics_auth.tls_private_key_file",
        ("--tls-private-key-file",),
        "string",
        SECTION_SERVING,
        "File containing the default x509 private key matching --tls-cert-file.",
    ),
    # --- Logs flags
    Setting(
        "log_format",
        ("--logging-format",),
        "string",
        SECTION_LOGS,
        'Sets the log format. Permitted formats: "json", "text" ("console" is accepted as '
        "an alias of text).",
    ),
    Setting(
        "verbosity",
        ("-v", "--v"),
        "level",
        SECTION_LOGS,
        "number for the log level verbosity (hpactl: 0 lifecycle, rescales, warnings and "
        "errors; 2 relists; 4 every HPA sync; 5 libraries' debug records)",
    ),
    Setting(
        "vmodule",
        ("--vmodule",),
        "string",
        SECTION_LOGS,
        "comma-separated list of pattern=N settings for logger-filtered logging: a pattern "
        "is a glob or dotted prefix of hpactl's logger names (hpactl.controller, "
        "hpactl.cache, hpactl.kube.leader, ...).",
    ),
    # --- Misc flags
    Setting(
        "config_file",
        ("--config",),
        "string",
        SECTION_MISC,
        f"The path to a {KIND} file ({API_VERSION}). Flags given on the command line "
        "override its values.",
    ),
    Setting(
        "client.kubeconfig",
        ("--kubeconfig",),
        "string",
        SECTION_MISC,
        "Path to kubeconfig file with authorization and master location information (the "
        "master location can be overridden by the master flag). When neither --kubeconfig "
        "nor --master is given, the in-cluster service account is used if present, else "
        "$KUBECONFIG or ~/.kube/config.",
        _CC + "kubeconfig",
    ),
    Setting(
        "client.master",
        ("--master",),
        "string",
        SECTION_MISC,
        "The address of the Kubernetes API server (overrides any value in kubeconfig).",
    ),
)

SETTINGS_BY_KEY: Mapping[str, Setting] = {s.key: s for s in SETTINGS}

# Fields of KubeControllerManagerConfiguration v1alpha1 that hpactl reads
# (everything in SETTINGS with a file_field) and those it accepts and ignores
# because they concern other controllers or kube-controller-manager's own serving.
# The Go types carry no json tags; hpactl spells them in lowerCamelCase as every
# Kubernetes component configuration does.
IGNORED_TOP_LEVEL_SECTIONS: frozenset[str] = frozenset(
    {
        "kubeCloudShared",
        "attachDetachController",
        "csrSigningController",
        "daemonSetController",
        "deploymentController",
        "statefulSetController",
        "deprecatedController",
        "endpointController",
        "endpointSliceController",
        "endpointSliceMirroringController",
        "ephemeralVolumeController",
        "garbageCollectorController",
        "jobController",
        "cronJobController",
        "legacySATokenCleaner",
        "namespaceController",
        "nodeIPAMController",
        "nodeLifecycleController",
        "persistentVolumeBinderController",
        "podGCController",
        "replicaSetController",
        "replicationController",
        "resourceQuotaController",
        "saController",
        "serviceController",
        "ttlAfterFinishedController",
        "validatingAdmissionPolicyStatusController",
    }
)
IGNORED_GENERIC_FIELDS: frozenset[str] = frozenset(
    {
        "port",
        "address",
        "minResyncPeriod",
        "controllerStartInterval",
        "controllers",
        "debugging",
        "leaderMigrationEnabled",
        "leaderMigration",
    }
)
IGNORED_CLIENT_CONNECTION_FIELDS: frozenset[str] = frozenset({"acceptContentTypes", "contentType"})


# -------------------------------------------------------------------- conversions


def format_go_float(value: float) -> str:
    """Go ``strconv.FormatFloat(v, 'g', -1, 64)`` (how pflag shows float values)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    # repr gives the shortest round-tripping digits, as Go's shortest mode does.
    parts = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in parts.digits)
    dp = len(digits) + int(parts.exponent)  # decimal point position after digit 0
    exp10 = dp - 1
    if exp10 < -4 or exp10 >= 6:  # Go uses precision 6 for this test in shortest mode
        tail = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{tail}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return f"{sign}{digits}{'0' * (dp - len(digits))}"
    return f"{sign}{digits[:dp]}.{digits[dp:]}"


def format_default(setting: Setting) -> str | None:
    """The default as pflag prints it (``15s``, ``0.1``, ``"leases"``); None if zero/empty."""
    value = setting.default
    if setting.kind == "gates":
        return None
    if setting.kind == "duration":
        return format_go_duration(value)
    if setting.kind == "bool":
        return _go_bool(value)
    if setting.kind in ("float", "float32"):
        return format_go_float(value)
    if setting.kind in ("int32", "level"):
        return str(value)
    if setting.kind == "strings":
        # pflag's stringSlice shows its default in brackets.
        return f"[{','.join(value)}]" if value else None
    if value is None or value == "" or value == ():
        return None
    return json.dumps(value)


_GO_INT = re.compile(r"[+-]?(0[xX][0-9a-fA-F_]+|0[oO]?[0-7_]*|0[bB][01_]+|[1-9][0-9_]*)\Z")
_GO_FLOAT = re.compile(
    r"[+-]?("
    r"(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"
    r"|0[xX]([0-9a-fA-F]+(\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)[pP][+-]?\d+"
    r"|[iI][nN][fF]([iI][nN][iI][tT][yY])?|[nN][aA][nN]"
    r")\Z"
)


def parse_go_int(text: str, bits: int = 32) -> int:
    """Go ``strconv.ParseInt(text, 0, bits)``; ValueError with Go's message."""
    syntax = ValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    if not _GO_INT.match(text) or "__" in text or text.endswith("_"):
        raise syntax
    body = text.lstrip("+-")
    if re.match(r"0[0-7_]+\Z", body):  # Go base 0: a bare leading 0 means octal
        body = "0o" + body[1:]
    try:
        value = int(body, 0)
    except ValueError:
        raise syntax from None
    if text.startswith("-"):
        value = -value
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise ValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def parse_go_float(text: str, bits: int = 64) -> float:
    """Go ``strconv.ParseFloat(text, bits)``; ValueError with Go's message."""
    if not _GO_FLOAT.match(text):
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax')
    lowered = text.lower()
    value = float.fromhex(text) if "0x" in lowered else float(text)
    if bits == 32 and math.isfinite(value) and abs(value) > 3.4028234663852886e38:
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    if math.isinf(value) and "inf" not in lowered:
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    return value


def parse_flag_value(setting: Setting, raw: str) -> Any:
    """Convert one command-line value (a string) for ``setting``; ConfigError on bad text."""
    name = setting.flag
    try:
        if setting.kind == "duration":
            return parse_go_duration(raw)
        if setting.kind == "bool":
            return parse_go_bool(raw)
        if setting.kind == "int32":
            return parse_go_int(raw, 32)
        if setting.kind == "float":
            return parse_go_float(raw, 64)
        if setting.kind == "float32":
            return parse_go_float(raw, 32)
        if setting.kind == "strings":
            # pflag's stringSlice: comma-separated; an empty value is an empty list.
            return tuple(item.strip() for item in raw.split(",") if item.strip())
        if setting.kind == "level":
            # klog's Level.Set: strconv.ParseUint(value, 10, 32)
            if not re.fullmatch(r"[0-9]+", raw) or int(raw) >= 2**32:
                raise ValueError(f'strconv.ParseUint: parsing "{raw}": invalid syntax')
            return int(raw)
    except ValueError as exc:
        message = str(exc)
        if setting.kind == "duration":
            raise ConfigError(f"{name}: {message}") from None
        raise ConfigError(f'{name}: invalid value "{raw}": {message}') from None
    return raw


def _describe(value: object) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


def parse_file_value(setting: Setting, value: object, where: str) -> Any:
    """Convert one YAML value for ``setting`` (types as Go's strict JSON decoding wants)."""
    kind = setting.kind
    if kind == "duration":
        if not isinstance(value, str):
            raise ConfigError(
                f'{where}: must be a duration string such as "15s", got {_describe(value)}'
            )
        try:
            return parse_go_duration(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    if kind in ("float", "float32"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: must be a number, got {_describe(value)}")
        return float(value)
    if kind == "int32":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: must be an integer, got {_describe(value)}")
        if not -(2**31) <= value < 2**31:
            raise ConfigError(f"{where}: {value} is out of range for int32")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: must be true or false, got {_describe(value)}")
        return value
    if not isinstance(value, str):
        raise ConfigError(f"{where}: must be a string, got {_describe(value)}")
    return value


# ---------------------------------------------------------------- bind addresses

_PORT = re.compile(r"[0-9]{1,5}\Z")


def parse_bind_address(text: str) -> tuple[str, int] | None:
    """``HOST:PORT`` / ``:PORT`` / ``[v6]:PORT`` → (host, port); ``"0"`` or ``""`` → None.

    An empty host means all interfaces, as in Go's net.Listen.
    """
    if text in ("", "0"):
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not _PORT.match(port) or int(port) > 65535:
        raise ValueError(f'invalid address "{text}": want HOST:PORT, :PORT, or "0" to disable')
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f'invalid address "{text}": an IPv6 host must be in brackets')
    return host, int(port)


# ----------------------------------------------------------------- config files


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys, like Kubernetes' strict decoding."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise yaml.constructor.ConstructorError(
                None, None, f'duplicate field "{key}"', key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _construct_mapping,
)


def _yaml_error_line(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        problem = exc.problem or exc.context or "invalid YAML"
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return f"invalid YAML: {problem} (line {mark.line + 1}, column {mark.column + 1})"
        return f"invalid YAML: {problem}"
    return f"invalid YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"


def _read_text(path: str, flag: str) -> str:
    """The file's text; a ConfigError naming ``flag`` when it cannot be read."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise ConfigError(f'{flag}: cannot read "{path}": {exc.strerror or exc}') from None
    except UnicodeDecodeError:
        raise ConfigError(f'{flag}: cannot read "{path}": not UTF-8 text') from None


def read_config_file(path: str) -> dict[str, Any]:
    """Read a KubeControllerManagerConfiguration file into ``{setting key: value}``.

    Only the fields hpactl uses come back; the others are checked (known field,
    right shape for a section) and dropped.  ConfigError on anything else.
    """
    text = _read_text(path, "--config")
    try:
        document = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: {_yaml_error_line(exc)}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid YAML: nested too deeply") from None
    return config_from_document(document, path)


def read_metric_providers(
    config: ControllerConfig, names: Mapping[str, str]
) -> tuple[MetricProvider, ...]:
    """``--metrics-providers-config``: the file parsed and checked, with every file it
    names readable (a CA or a client certificate that does not load is refused here,
    at startup, rather than at the first metric)."""
    flag = names.get("metrics_providers_config", "--metrics-providers-config")
    path = config.metrics_providers_config or ""
    if not config.feature_gates.enabled(HPA_METRIC_SOURCE):
        raise ConfigError(f"{flag}: needs --feature-gates={HPA_METRIC_SOURCE}=true")
    text = _read_text(path, flag)
    try:
        document = yaml.load(text, Loader=_StrictLoader)
        providers = providers_from_raw(document)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{flag}: {path}: {_yaml_error_line(exc)}") from None
    except RecursionError:
        raise ConfigError(f"{flag}: {path}: invalid YAML: nested too deeply") from None
    except ValueError as exc:
        raise ConfigError(f"{flag}: {path}: {exc}") from None
    for i, p in enumerate(providers):
        where = f"{flag}: {path}: providers[{i}]"
        for field_name, file_path in p.files():
            if not os.path.isfile(file_path) or not os.access(file_path, os.R_OK):
                raise ConfigError(f'{where}.{field_name}: cannot read "{file_path}"')
        try:
            ctx = ssl.create_default_context()
            if p.ca_file or p.ca_data:
                ctx.load_verify_locations(cafile=p.ca_file or None, cadata=p.ca_data or None)
            if p.auth == "clientCertificate":
                ctx.load_cert_chain(p.client_certificate, p.client_key)
        except (ssl.SSLError, ValueError, OSError) as exc:
            raise ConfigError(
                f"{where}: the CA or client certificate does not load: {exc}"
            ) from None
    return providers


def _expect_mapping(value: object, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a mapping, got {_describe(value)}")
    return value


_FILE_SETTINGS: Mapping[str, Setting] = {s.file_field: s for s in SETTINGS if s.file_field}


def config_from_document(document: object, path: str) -> dict[str, Any]:
    """Validate a parsed configuration document; return ``{setting key: value}``."""
    if document is None:
        raise ConfigError(f"{path}: empty file, want a {KIND}")
    if not isinstance(document, dict):
        raise ConfigError(f"{path}: must be a {KIND} mapping, got {_describe(document)}")
    api_version = document.get("apiVersion")
    if api_version != API_VERSION:
        what = "missing" if api_version is None else f"got {_describe(api_version)}"
        raise ConfigError(f'{path}: apiVersion: must be "{API_VERSION}", {what}')
    kind = document.get("kind")
    if kind != KIND:
        what = "missing" if kind is None else f"got {_describe(kind)}"
        raise ConfigError(f'{path}: kind: must be "{KIND}", {what}')

    values: dict[str, Any] = {}

    def take(section: Mapping[str, Any], prefix: str, ignored: Iterable[str] = ()) -> None:
        ignored_set = frozenset(ignored)
        for name, value in section.items():
            dotted = f"{prefix}{name}"
            if name in ignored_set:
                continue
            setting = _FILE_SETTINGS.get(dotted)
            if setting is None:
                raise ConfigError(f"{path}: {dotted}: unknown field")
            if value is None:  # null keeps the default, as in Go's JSON decoding
                continue
            values[setting.key] = parse_file_value(setting, value, f"{path}: {dotted}")

    for name, value in document.items():
        if name in ("apiVersion", "kind"):
            continue
        if name == "hpaController":
            take(_expect_mapping(value, f"{path}: hpaController"), _HPA)
        elif name == "generic":
            generic = _expect_mapping(value, f"{path}: generic")
            for gname, gvalue in generic.items():
                if gname == "leaderElection":
                    take(_expect_mapping(gvalue, f"{path}: {_LE[:-1]}"), _LE)
                elif gname == "clientConnection":
                    take(
                        _expect_mapping(gvalue, f"{path}: {_CC[:-1]}"),
                        _CC,
                        IGNORED_CLIENT_CONNECTION_FIELDS,
                    )
                elif gname not in IGNORED_GENERIC_FIELDS:
                    raise ConfigError(f"{path}: generic.{gname}: unknown field")
        elif name in IGNORED_TOP_LEVEL_SECTIONS:
            _expect_mapping(value, f"{path}: {name}")
        else:
            raise ConfigError(f"{path}: {name}: unknown field")
    return values


# ------------------------------------------------------------------- assembling


def _get_path(obj: object, key: str) -> Any:
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


def _with_values(config: ControllerConfig, values: Mapping[str, Any]) -> ControllerConfig:
    nested: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for key, value in values.items():
        head, _, rest = key.partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            top[key] = value
    for head, changes in nested.items():
        top[head] = dataclasses.replace(getattr(config, head), **changes)
    return dataclasses.replace(config, **top)


def read_otel_settings(env: Mapping[str, str]) -> tuple[OtelSettings, tuple[str, ...]]:
    """OtelSettings from the standard variables, plus warnings for values ignored.

    Per the OpenTelemetry specification, unrecognised values are reported and
    ignored rather than fatal.
    """
    warnings: list[str] = []
    disabled_text = env.get("OTEL_SDK_DISABLED", "").strip().lower()
    sdk_disabled = disabled_text == "true"
    if disabled_text not in ("", "true", "false"):
        warnings.append(f'OTEL_SDK_DISABLED: ignoring "{env["OTEL_SDK_DISABLED"]}" (want true)')
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        sdk_disabled = True
    elif exporter not in ("", "otlp"):
        warnings.append(f'OTEL_TRACES_EXPORTER: "{exporter}" is not supported, using otlp')
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip() or None
    if endpoint is None:
        generic = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        if generic:
            # The spec's rule for OTLP/HTTP: the generic endpoint gets the signal path.
            endpoint = generic.rstrip("/") + "/v1/traces"
    sampler = env.get("OTEL_TRACES_SAMPLER", "").strip().lower() or "parentbased_always_on"
    known = (
        "always_on",
        "always_off",
        "traceidratio",
        "parentbased_always_on",
        "parentbased_always_off",
        "parentbased_traceidratio",
    )
    if sampler not in known:
        warnings.append(
            f'OTEL_TRACES_SAMPLER: unknown sampler "{sampler}", using parentbased_always_on'
        )
        sampler = "parentbased_always_on"
    sampler_arg = env.get("OTEL_TRACES_SAMPLER_ARG", "").strip() or None
    if sampler_arg is not None and sampler.endswith("traceidratio"):
        try:
            ratio = float(sampler_arg)
            if not 0.0 <= ratio <= 1.0:
                raise ValueError
        except ValueError:
            warnings.append(
                f'OTEL_TRACES_SAMPLER_ARG: "{sampler_arg}" is not a ratio in [0, 1], using 1.0'
            )
            sampler_arg = None
    settings = OtelSettings(
        traces_endpoint=endpoint,
        service_name=env.get("OTEL_SERVICE_NAME", "").strip() or "hpactl",
        sampler=sampler,
        sampler_arg=sampler_arg,
        sdk_disabled=sdk_disabled,
    )
    return settings, tuple(warnings)


def _parse_vmodule(text: str, name: str) -> tuple[tuple[str, int], ...]:
    """klog's ``pattern=N,...``; ConfigError naming the bad item."""
    out: list[tuple[str, int]] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        pattern, sep, level = item.partition("=")
        if not sep or not pattern.strip() or not level.strip().isdigit():
            raise ConfigError(f'{name}: "{item}": expected pattern=N (N a non-negative integer)')
        out.append((pattern.strip(), int(level)))
    return tuple(out)


def deprecation_warning(setting: Setting) -> str:
    """pflag's deprecation notice text."""
    return f"Flag {setting.flag} has been deprecated, {setting.deprecated}"


def build_config(
    flag_values: Mapping[str, str],
    gate_values: Iterable[str] = (),
    env: Mapping[str, str] | None = None,
) -> ControllerConfig:
    """Defaults < ``--config`` file < flags.

    ``flag_values`` maps setting keys to the raw text of flags actually given
    (last one wins); ``gate_values`` are the ``--feature-gates`` texts in order.
    """
    env = {} if env is None else env
    values: dict[str, Any] = {}
    names: dict[str, str] = {s.key: s.flag for s in SETTINGS}
    warnings: list[str] = []

    config_path = flag_values.get("config_file")
    if config_path is not None:
        if not config_path:
            raise ConfigError("--config: must not be empty")
        from_file = read_config_file(config_path)
        values.update(from_file)
        for key in from_file:
            setting = SETTINGS_BY_KEY[key]
            names[key] = f"{config_path}: {setting.file_field}"
            if setting.deprecated:
                warnings.append(
                    f"{config_path}: {setting.file_field} is deprecated and has no effect"
                )

    for key, raw in flag_values.items():
        setting = SETTINGS_BY_KEY[key]
        values[key] = parse_flag_value(setting, raw)
        names[key] = setting.flag
        if setting.deprecated:
            warnings.append(deprecation_warning(setting))

    gates_text = ",".join(gate_values)
    try:
        values["feature_gates"] = FeatureGates.from_map(parse_feature_gates_text(gates_text))
    except FeatureGateError as exc:
        raise ConfigError(f"--feature-gates: {exc}") from None

    for key in (
        "client.kubeconfig",
        "client.master",
        "config_file",
        "metrics_auth.tls_cert_file",
        "metrics_auth.tls_private_key_file",
    ):
        if values.get(key) == "":
            values[key] = None

    if "log_format" in values:
        fmt = str(values["log_format"]).lower()
        if fmt == "console":
            fmt = "text"
        if fmt not in ("json", "text"):
            raise ConfigError(
                f'{names["log_format"]}: unsupported format "{values["log_format"]}" '
                "(want text or json)"
            )
        values["log_format"] = fmt
    if "vmodule" in values:
        values["vmodule"] = _parse_vmodule(str(values["vmodule"]), names["vmodule"])

    otel, otel_warnings = read_otel_settings(env)
    values["otel"] = otel
    warnings.extend(otel_warnings)
    values["warnings"] = tuple(warnings)

    config = _with_values(ControllerConfig(), values)
    validate(config, names, frozenset(values) - {"feature_gates", "otel", "warnings"})
    if config.metrics_providers_config:
        config = dataclasses.replace(config, metric_providers=read_metric_providers(config, names))
    return config


def validate(
    config: ControllerConfig,
    names: Mapping[str, str] | None = None,
    given: frozenset[str] = frozenset(),
) -> None:
    """Semantic checks.

    ``names`` says how to call each setting in messages (its flag, or
    ``<file>: <field>``); ``given`` holds the keys set by a flag or the file, so a
    conflict between two settings blames the one the operator actually set.
    """

    def name(key: str) -> str:
        if names is not None and key in names:
            return names[key]
        return SETTINGS_BY_KEY[key].flag

    def short(key: str) -> str:
        # How to mention the other side of a conflict: the field or flag alone.
        return name(key).rpartition(": ")[2]

    d = format_go_duration
    hpa = config.hpa
    if hpa.sync_period <= timedelta(0):
        raise ConfigError(
            f"{name('hpa.sync_period')}: must be greater than 0, got {d(hpa.sync_period)}"
        )
    if not math.isfinite(hpa.tolerance):
        raise ConfigError(
            f"{name('hpa.tolerance')}: must be a finite number, got {format_go_float(hpa.tolerance)}"
        )
    if hpa.tolerance < 0:
        raise ConfigError(
            f"{name('hpa.tolerance')}: must not be negative, got {format_go_float(hpa.tolerance)}"
        )
    if hpa.concurrent_syncs < 1:
        raise ConfigError(
            f"{name('hpa.concurrent_syncs')}: must be greater than 0, but got {hpa.concurrent_syncs}"
        )
    for key in (
        "hpa.downscale_stabilization_window",
        "hpa.cpu_initialization_period",
        "hpa.initial_readiness_delay",
    ):
        value = _get_path(config, key)
        if value < timedelta(0):
            raise ConfigError(f"{name(key)}: must not be negative, got {d(value)}")

    client = config.client
    if not math.isfinite(client.qps) or client.qps <= 0:
        raise ConfigError(
            f"{name('client.qps')}: must be greater than 0, got {format_go_float(client.qps)}"
        )
    if client.burst < 1:
        raise ConfigError(f"{name('client.burst')}: must be greater than 0, got {client.burst}")

    le = config.leader_election
    if (
        le.leader_elect
        and le.resource_name == KCM_LEADER_ELECTION_RESOURCE_NAME
        and not le.allow_controller_manager_lock
    ):
        # A KubeControllerManagerConfiguration copied as it is names the controller
        # manager's own Lease: taking it would stop every controller it runs.
        raise ConfigError(
            f'{name("leader_election.resource_name")}: "{le.resource_name}" is '
            "kube-controller-manager's own lock; use another name (the default is "
            f'"{DEFAULT_LEADER_ELECTION_RESOURCE_NAME}") or set '
            "--leader-elect-allow-controller-manager-lock"
        )
    if le.leader_elect:
        for key in (
            "leader_election.lease_duration",
            "leader_election.renew_deadline",
            "leader_election.retry_period",
        ):
            value = _get_path(config, key)
            if value <= timedelta(0):
                raise ConfigError(f"{name(key)}: must be greater than 0, got {d(value)}")
        lease, renew, retry = (
            "leader_election.lease_duration",
            "leader_election.renew_deadline",
            "leader_election.retry_period",
        )
        # client-go leaderelection.NewLeaderElector: LeaseDuration > RenewDeadline.
        if le.renew_deadline >= le.lease_duration:
            if renew in given or lease not in given:
                raise ConfigError(
                    f"{name(renew)}: must be less than {short(lease)} "
                    f"({d(le.renew_deadline)} >= {d(le.lease_duration)})"
                )
            raise ConfigError(
                f"{name(lease)}: must be greater than {short(renew)} "
                f"({d(le.lease_duration)} <= {d(le.renew_deadline)})"
            )
        # ... and RenewDeadline > JitterFactor (1.2) * RetryPeriod.
        if le.renew_deadline <= le.retry_period * 1.2:
            if renew in given or retry not in given:
                raise ConfigError(
                    f"{name(renew)}: must be greater than 1.2 x {short(retry)} "
                    f"({d(le.renew_deadline)} <= 1.2 x {d(le.retry_period)})"
                )
            raise ConfigError(
                f"{name(retry)}: must be less than {short(renew)} / 1.2 "
                f"({d(le.retry_period)} >= {d(le.renew_deadline)} / 1.2)"
            )
    if not 1 <= config.shards <= MAX_SHARDS:
        raise ConfigError(
            f"{name('shards')}: must be between 1 and {MAX_SHARDS}, got {config.shards}"
        )
    if config.shards > 1 and not le.leader_elect and not config.shadow:
        raise ConfigError(
            f"{name('shards')}: {config.shards} shards need --leader-elect "
            "(each shard is owned through its own Lease)"
        )
    sources = config.hpa_sources
    unknown = [s for s in sources if s not in HPA_SOURCES]
    if unknown or not sources:
        shown = ",".join(sources) or '""'
        raise ConfigError(
            f"{name('hpa_sources')}: {shown}: must be a comma-separated list of "
            f"{' and '.join(HPA_SOURCES)}"
        )
    if le.resource_lock != "leases":
        raise ConfigError(
            f"{name('leader_election.resource_lock')}: unsupported lock type "
            f'"{le.resource_lock}" (hpactl supports "leases")'
        )
    for key in ("leader_election.resource_name", "leader_election.resource_namespace"):
        if not _get_path(config, key):
            raise ConfigError(f"{name(key)}: must not be empty")

    if config.decision_records < 0:
        raise ConfigError(
            f"{name('decision_records')}: must not be negative, got {config.decision_records}"
        )

    for key in ("metrics_bind_address", "health_probe_bind_address"):
        try:
            parse_bind_address(_get_path(config, key))
        except ValueError as exc:
            raise ConfigError(f"{name(key)}: {exc}") from None

    auth = config.metrics_auth
    cert, key_file = "metrics_auth.tls_cert_file", "metrics_auth.tls_private_key_file"
    if bool(auth.tls_cert_file) != bool(auth.tls_private_key_file):
        missing, other = (key_file, cert) if auth.tls_cert_file else (cert, key_file)
        raise ConfigError(f"{name(other)}: must be given together with {short(missing)}")
    if auth.tls_cert_file and not auth.secure:
        raise ConfigError(
            f"{name(cert)}: needs {short('metrics_auth.secure')} "
            "(without it /metrics is served over plain HTTP)"
        )
    for key in (
        "metrics_auth.authentication_cache_ttl",
        "metrics_auth.authorized_cache_ttl",
        "metrics_auth.unauthorized_cache_ttl",
    ):
        value = _get_path(config, key)
        if value < timedelta(0):
            raise ConfigError(f"{name(key)}: must not be negative, got {d(value)}")
    for path in auth.always_allow_paths:
        if not path.startswith("/"):
            raise ConfigError(
                f'{name("metrics_auth.always_allow_paths")}: "{path}" must start with "/"'
            )
        if "*" in path[:-1]:
            raise ConfigError(
                f'{name("metrics_auth.always_allow_paths")}: "{path}": only a trailing * is allowed'
            )


# ------------------------------------------------------------- client source


@dataclass(frozen=True, slots=True)
class ClientSource:
    """Where the API client configuration comes from (the client is built elsewhere).

    ``explicit``: --kubeconfig and/or --master; ``in-cluster``: the pod's service
    account; ``default``: $KUBECONFIG or ~/.kube/config (``kubeconfig`` is the
    $KUBECONFIG value, or None for the home-directory file).
    """

    kind: Literal["explicit", "in-cluster", "default"]
    kubeconfig: str | None = None
    master: str | None = None


def select_client_source(
    client: ClientConnectionConfig,
    env: Mapping[str, str],
    path_exists: Callable[[str], bool] = os.path.exists,
) -> ClientSource:
    """kube-controller-manager's choice (clientcmd.BuildConfigFromFlags): explicit
    flags first, then the in-cluster service account; hpactl then falls back to
    the usual kubeconfig files where upstream would fail."""
    if client.kubeconfig or client.master:
        return ClientSource("explicit", client.kubeconfig, client.master)
    if (
        env.get("KUBERNETES_SERVICE_HOST")
        and env.get("KUBERNETES_SERVICE_PORT")
        and path_exists(SERVICE_ACCOUNT_TOKEN)
    ):
        return ClientSource("in-cluster")
    return ClientSource("default", env.get("KUBECONFIG") or None)


__all__ = [
    "API_VERSION",
    "HPA_SOURCES",
    "KIND",
    "MAX_SHARDS",
    "SETTINGS",
    "ClientConnectionConfig",
    "ClientSource",
    "ConfigError",
    "ControllerConfig",
    "FeatureGates",
    "HPAControllerConfig",
    "LeaderElectionConfig",
    "MetricsAuthConfig",
    "OtelSettings",
    "Setting",
    "Stage",
    "build_config",
    "parse_bind_address",
    "read_config_file",
    "read_otel_settings",
    "select_client_source",
    "validate",
]
