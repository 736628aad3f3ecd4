"""Render the ``hpactl run`` flag and configuration reference from the code.

    python -m hpactl.cli.flagdoc > docs/flags.md
    python -m hpactl.cli.flagdoc --example-config > config/kube-controller-manager-config.yaml

Both outputs are checked by tests/config/test_flagdoc.py, which fails when the
committed files are stale.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hpactl.cli.run_cmd import HELP_SECTION, build_run_parser
from hpactl.config import (
    API_VERSION,
    GO_TYPE,
    IGNORED_CLIENT_CONNECTION_FIELDS,
    IGNORED_GENERIC_FIELDS,
    IGNORED_TOP_LEVEL_SECTIONS,
    KIND,
    SERVICE_ACCOUNT_TOKEN,
    SETTINGS,
    Setting,
    format_default,
)
from hpactl.model.featuregates import ALL_ALPHA, ALL_BETA, KNOWN_GATES

REGENERATE = "python -m hpactl.cli.flagdoc > docs/flags.md"
REGENERATE_EXAMPLE = (
    "python -m hpactl.cli.flagdoc --example-config > config/kube-controller-manager-config.yaml"
)

_BY_FLAG = {flag: s for s in SETTINGS for flag in s.flags}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _type_name(setting: Setting) -> str:
    return GO_TYPE[setting.kind] or "bool"


def _default_cell(setting: Setting) -> str:
    default = format_default(setting)
    return f"`{default}`" if default is not None else "—"


def _short_help(setting: Setting) -> str:
    if setting.kind == "gates":
        return "Comma-separated `Name=bool` pairs; see [Feature gates](#feature-gates)."
    return setting.help


def render_markdown() -> str:
    """docs/flags.md: flags by help section, the config file, gates and environment."""
    parser = build_run_parser()
    out: list[str] = [
        "# `hpactl run` flags and configuration",
        "",
        "<!-- Generated from hpactl/config.py; do not edit. Regenerate with:",
        f"     {REGENERATE} -->",
        "",
        "`hpactl run` takes the kube-controller-manager flags that concern the",
        "HorizontalPodAutoscaler controller, with the same names, value syntax and",
        "defaults, plus its own serving and logging flags. Durations are Go durations",
        "(`15s`, `5m0s`, `1h30m`, `300ms`); booleans are `--flag`, `--flag=true` or",
        "`--flag=false`; other values may be given as `--flag=value` or `--flag value`.",
        "Precedence: built-in defaults, then the `--config` file, then flags given on",
        "the command line.",
        "",
        "Bad configuration never starts the controller: `hpactl run` exits with",
        "status 2 and prints one line, `hpactl run: error: <flag or field>: <problem>`.",
        "",
        "## Flags",
        "",
    ]
    for group in parser._action_groups:  # argparse has no public accessor for groups
        actions = [a for a in group._group_actions if a.help != argparse.SUPPRESS]
        if not actions or group.title == HELP_SECTION:
            continue
        out += [f"### {group.title}", ""]
        out += ["| Flag | Type | Default | Config file field | Description |"]
        out += ["|---|---|---|---|---|"]
        for action in actions:
            setting = _BY_FLAG[action.option_strings[0]]
            flags = ", ".join(f"`{f}`" for f in action.option_strings)
            field = f"`{setting.file_field}`" if setting.file_field else "—"
            out.append(
                f"| {flags} | {_type_name(setting)} | {_default_cell(setting)} | {field} "
                f"| {_cell(_short_help(setting))} |"
            )
        out.append("")
    out += [
        f"### {HELP_SECTION}",
        "",
        "| Flag | Description |",
        "|---|---|",
        "| `-h`, `--help` | help for run |",
        "| `--version` | Print version information and quit |",
        "",
    ]
    deprecated = [s for s in SETTINGS if s.deprecated]
    out += [
        "### Deprecated flags",
        "",
        "Accepted for compatibility and hidden from `--help`, as in kube-controller-manager;",
        "they have no effect and print a deprecation notice.",
        "",
        "| Flag | Type | Default | Config file field | Notice |",
        "|---|---|---|---|---|",
    ]
    for s in deprecated:
        out.append(
            f"| `{s.flag}` | {_type_name(s)} | {_default_cell(s)} | `{s.file_field}` "
            f"| {_cell(str(s.deprecated))} |"
        )
    out += [
        "",
        "## Configuration file (`--config`)",
        "",
        f"YAML (or JSON) with `apiVersion: {API_VERSION}` and `kind: {KIND}`,",
        "the shape of kube-controller-manager's component configuration. Field names are",
        "the lowerCamelCase form of the upstream Go field names (the v1alpha1 Go types",
        "carry no json tags). Decoding is strict: unknown fields, duplicate fields and",
        'wrong value types are errors. Durations are strings (`"15s"`), numbers are',
        "numbers; `null` keeps the default. A commented example with every field and",
        "its default is `config/kube-controller-manager-config.yaml`.",
        "",
        "| Field | Type | Default | Flag |",
        "|---|---|---|---|",
    ]
    for s in sorted((s for s in SETTINGS if s.file_field), key=lambda s: str(s.file_field)):
        note = " (deprecated, no effect)" if s.deprecated else ""
        out.append(
            f"| `{s.file_field}` | {_type_name(s)} | {_default_cell(s)} | `{s.flag}`{note} |"
        )
    out += [
        "",
        "Accepted and ignored (they configure other controllers or kube-controller-manager's",
        "own serving):",
        "",
        "- top-level sections: "
        + ", ".join(f"`{n}`" for n in sorted(IGNORED_TOP_LEVEL_SECTIONS))
        + " (each must be a mapping);",
        "- in `generic`: " + ", ".join(f"`{n}`" for n in sorted(IGNORED_GENERIC_FIELDS)) + ";",
        "- in `generic.clientConnection`: "
        + ", ".join(f"`{n}`" for n in sorted(IGNORED_CLIENT_CONNECTION_FIELDS))
        + " (hpactl always speaks JSON).",
        "",
        "The configuration type has no `featureGates` field: feature gates are set with",
        "`--feature-gates` only. `--metrics-bind-address`, `--health-probe-bind-address`,",
        "the secure metrics flags (`--metrics-secure`, `--tls-*`, `--authentication-*`,",
        "`--authorization-*`), `--logging-format`, `-v` and `--master` are flags only.",
        "",
        "## Feature gates",
        "",
        "Only gates that concern the HPA controller are known; any other name is",
        "rejected (`unrecognized feature gate: <name>`). Defaults are those of",
        f"kube-controller-manager 1.37. `{ALL_ALPHA}=bool` / `{ALL_BETA}=bool` set every alpha",
        "(beta) gate not named explicitly. The flag may be repeated; values accumulate.",
        "",
        "| Gate | Stage | Default | Effect |",
        "|---|---|---|---|",
    ]
    for name in sorted(KNOWN_GATES):
        spec = KNOWN_GATES[name]
        default = "true" if spec.default else "false"
        out.append(
            f"| `{name}` | {spec.stage.value.lower()} | `{default}` | {_cell(spec.summary)} |"
        )
    out += [
        "",
        "## API server connection",
        "",
        "1. `--kubeconfig` and/or `--master` (or `generic.clientConnection.kubeconfig`) when given;",
        "2. otherwise the in-cluster service account, when `KUBERNETES_SERVICE_HOST` and",
        f"   `KUBERNETES_SERVICE_PORT` are set and `{SERVICE_ACCOUNT_TOKEN}` exists;",
        "3. otherwise `$KUBECONFIG` or `~/.kube/config` (kube-controller-manager would fail",
        "   here; hpactl is also run from workstations).",
        "",
        "## Differences from kube-controller-manager",
        "",
        "- `--leader-elect-resource-name` defaults to `hpactl`, not",
        "  `kube-controller-manager`, so the two never compete for one Lease. Only the",
        "  `leases` lock type exists (as in current client-go).",
        "- Stricter checks, where upstream would start and misbehave: the sync period",
        "  must be positive; tolerance must be a finite, non-negative number; the",
        "  downscale stabilization window, CPU initialization period and initial",
        "  readiness delay must not be negative; `--kube-api-qps` and `--kube-api-burst`",
        '  must be positive (client-go reads 0 or less as "default" or "unlimited").',
        "  The concurrency check and its message are upstream's.",
        "- `--logging-format` defaults to `json` and also accepts `console`",
        "  (kube-controller-manager: `text`, accepted here as `console`).",
        "- Metrics are served on `--metrics-bind-address` (plain HTTP unless",
        "  `--metrics-secure`), not on kube-controller-manager's `--secure-port`; of its",
        "  secure-serving, authentication and authorization flags only those listed",
        "  above exist. Flags of other controllers and `--kube-api-content-type` are not",
        "  accepted either: an unknown flag is an error.",
        "",
        "## Environment: OpenTelemetry",
        "",
        "Trace export uses the standard variables and is off unless an endpoint is set.",
        "",
        "| Variable | Meaning |",
        "|---|---|",
        "| `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` | OTLP/HTTP traces URL, used as given |",
        "| `OTEL_EXPORTER_OTLP_ENDPOINT` | base URL; `/v1/traces` is appended |",
        "| `OTEL_SERVICE_NAME` | service name (default `hpactl`) |",
        "| `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG` | sampler (default "
        "`parentbased_always_on`) and its ratio |",
        "| `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none` | turn export off |",
        "",
        "Unrecognised values are reported and ignored, as the OpenTelemetry",
        "specification asks, instead of stopping the controller.",
        "",
    ]
    return "\n".join(out)


def _yaml_scalar(setting: Setting) -> str:
    default = format_default(setting)
    if setting.kind == "duration":
        return default or "0s"
    if setting.kind == "string":
        return default if default is not None else '""'
    return default if default is not None else "null"


def render_example_config() -> str:
    """config/kube-controller-manager-config.yaml: every field hpactl reads, with its default."""
    by_section: dict[str, list[Setting]] = {}
    for s in SETTINGS:
        if s.file_field:
            section, _, _ = s.file_field.rpartition(".")
            by_section.setdefault(section, []).append(s)
    out = [
        "# Example configuration for `hpactl run --config FILE`.",
        "# Generated from hpactl/config.py; regenerate with:",
        f"#   {REGENERATE_EXAMPLE}",
        "#",
        "# Every field hpactl reads is listed with its default value. Flags given on",
        "# the command line override the file. Fields of other controllers",
        "# (deploymentController, ...) are accepted and ignored; anything else is an error.",
        f"apiVersion: {API_VERSION}",
        f"kind: {KIND}",
    ]
    written: set[str] = set()
    for section in ("generic.clientConnection", "generic.leaderElection", "hpaController"):
        parts = section.split(".")
        for depth in range(len(parts)):
            prefix = ".".join(parts[: depth + 1])
            if prefix not in written:
                out.append(f"{'  ' * depth}{parts[depth]}:")
                written.add(prefix)
        indent = "  " * len(parts)
        for s in sorted(by_section[section], key=lambda s: str(s.file_field)):
            name = str(s.file_field).rpartition(".")[2]
            summary = s.help.split(". ")[0].rstrip(".")
            if s.deprecated:
                out.append(f"{indent}# {s.flag} (deprecated upstream; accepted, no effect)")
                out.append(f"{indent}# {name}: {_yaml_scalar(s)}")
            else:
                out.append(f"{indent}# {s.flag}: {summary}.")
                out.append(f"{indent}{name}: {_yaml_scalar(s)}")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hpactl.cli.flagdoc")
    parser.add_argument("--example-config", action="store_true")
    args = parser.parse_args(argv)
    text = render_example_config() if args.example_config else render_markdown()
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
