"""The ``hpactl run`` flag parser: kube-controller-manager flag syntax → ``ControllerConfig``.

Flag names, value syntax (Go durations, ``--flag`` / ``--flag=false`` booleans)
and defaults are kube-controller-manager's; the flags come from
``hpactl.config.SETTINGS``.  Kept out of ``hpactl.cli`` so that the simulator
(scenario ``flags``) parses flags exactly as ``hpactl run`` does without
importing the command-line layer.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn

from hpactl.config import (
    SECTIONS,
    SETTINGS,
    ConfigError,
    ControllerConfig,
    Setting,
    build_config,
    format_default,
)

PROG = "hpactl run"
USAGE = "hpactl run [flags]"
DESCRIPTION = (
    "Run the HorizontalPodAutoscaler controller: a drop-in for the one in "
    "kube-controller-manager, taking the same flags."
)
HELP_SECTION = "Global flags"

# pflag type names shown after each flag in --help; booleans show none.
_METAVAR = {
    "duration": "duration",
    "float": "float",
    "float32": "float32",
    "int32": "int32",
    "string": "string",
    "strings": "strings",
    "level": "Level",
    "gates": "mapStringBool",
}


class _RunParser(argparse.ArgumentParser):
    """argparse that reports errors as ConfigError instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(_argparse_message(message))


def _argparse_message(message: str) -> str:
    # argparse says "argument -v/--v: expected one argument"; keep the first flag
    # name and use pflag's wording.
    if message.startswith("argument "):
        where, _, problem = message[len("argument ") :].partition(": ")
        where = where.split("/")[0]
        if problem == "expected one argument":
            problem = "flag needs an argument"
        return f"{where}: {problem}"
    return message


class _GoHelpFormatter(argparse.HelpFormatter):
    """pflag-like help: ``-v, --v Level``, bare boolean flags, kept line breaks."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=40, width=100)

    def _format_action_invocation(self, action: argparse.Action) -> str:
        names = ", ".join(action.option_strings)
        if action.nargs in (0, "?") or action.metavar is None:
            return names
        return f"{names} {action.metavar}"

    def _split_lines(self, text: str, width: int) -> list[str]:
        lines: list[str] = []
        for paragraph in text.splitlines():
            lines.extend(super()._split_lines(paragraph, width) or [""])
        return lines


def _help_text(setting: Setting) -> str:
    text = setting.help
    default = format_default(setting)
    if default is not None:
        text = f"{text} (default {default})"
    return text.replace("%", "%%")  # argparse %-formats help strings


def build_run_parser() -> argparse.ArgumentParser:
    """The full ``run`` parser, its flags grouped like kube-controller-manager's help.

    Every option stores its raw text under the setting key and only when given
    (default SUPPRESS), so the config file can be overridden flag by flag.
    """
    parser = _RunParser(
        prog=PROG,
        usage=USAGE,
        description=DESCRIPTION,
        add_help=False,
        allow_abbrev=False,
        formatter_class=_GoHelpFormatter,
    )
    groups = {title: parser.add_argument_group(title) for title in SECTIONS}
    for setting in SETTINGS:
        group = groups[setting.section]
        common: dict[str, Any] = {
            "dest": setting.key,
            "default": argparse.SUPPRESS,
            # pflag hides deprecated flags from help but still accepts them.
            "help": argparse.SUPPRESS if setting.deprecated else _help_text(setting),
        }
        if setting.kind == "bool":
            group.add_argument(*setting.flags, nargs="?", const="true", metavar=None, **common)
        elif setting.kind == "gates":
            group.add_argument(
                *setting.flags, action="append", metavar=_METAVAR[setting.kind], **common
            )
        else:
            group.add_argument(*setting.flags, metavar=_METAVAR[setting.kind], **common)
    globals_ = parser.add_argument_group(HELP_SECTION)
    globals_.add_argument(
        "-h", "--help", action="store_true", default=argparse.SUPPRESS, help="help for run"
    )
    globals_.add_argument(
        "--version",
        action="store_true",
        default=argparse.SUPPRESS,
        help="Print version information and quit",
    )
    return parser


def first_global(argv: Iterable[str]) -> str | None:
    """``--help`` or ``--version`` if given (before ``--``): they win over other flags."""
    for arg in argv:
        if arg == "--":
            return None
        if arg in ("-h", "--help", "--version"):
            return arg
    return None


_TAKES_VALUE = frozenset(f for s in SETTINGS if s.kind != "bool" for f in s.flags)


def _attach_values(argv: Sequence[str]) -> list[str]:
    """Turn ``--flag value`` into ``--flag=value`` for flags that take a value.

    pflag takes the next argument as the value even when it starts with ``-``
    (``--leader-elect-lease-duration -5s``); argparse would not.
    """
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg in _TAKES_VALUE and i + 1 < len(argv):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def parse_run_config(argv: Sequence[str], env: Mapping[str, str]) -> ControllerConfig:
    """Parse and validate ``hpactl run`` arguments (without the ``run`` word).

    ``env`` supplies the OTEL_* variables. Raises ConfigError with the one-line
    message the command prints.
    """
    parser = build_run_parser()
    namespace, extras = parser.parse_known_args(_attach_values(argv))
    if extras:
        first = extras[0]
        if first.startswith("-") and first != "--":
            raise ConfigError(f"{first.split('=', 1)[0]}: unknown flag")
        rest = extras[1:] if first == "--" else extras
        if rest:
            raise ConfigError(f'unexpected argument "{rest[0]}": run takes only flags')
    given: dict[str, Any] = dict(vars(namespace))
    given.pop("help", None)
    given.pop("version", None)
    gates: list[str] = given.pop("feature_gates", [])
    return build_config(given, gates, env)
