"""What ``hpactl run`` checks before it starts anything, so a mistake is one line.

A kubeconfig that is missing, unreadable or not a kubeconfig, and a metrics or health
port that another process holds, would otherwise surface late: the first after
``hpactl.stopped`` as the client library's "Invalid kube-config file. Expected key
current-context", the second after the informers had started retrying. Each check
returns the line to print and the exit code (2: the configuration is wrong, as for a
bad flag; 1: the environment refuses it), or None.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from hpactl.config import ControllerConfig, parse_bind_address, select_client_source

__all__ = ["Problem", "check_kubeconfig", "check_ports", "preflight"]


@dataclass(frozen=True, slots=True)
class Problem:
    message: str
    exit_code: int


def _kubeconfig_paths(config: ControllerConfig, env: Mapping[str, str]) -> tuple[str, list[str]]:
    """(how the file was chosen, candidate paths); no paths when none is read."""
    source = select_client_source(config.client, env)
    if source.kind == "in-cluster":
        return "", []
    if source.kind == "explicit":
        if not config.client.kubeconfig:
            return "", []  # --master alone
        return "--kubeconfig", [config.client.kubeconfig]
    if env.get("KUBECONFIG"):
        return "$KUBECONFIG", [p for p in env["KUBECONFIG"].split(os.pathsep) if p]
    home = os.path.expanduser("~/.kube/config")
    return "default kubeconfig", [home]


def _read_problem(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return "no such file"
    except IsADirectoryError:
        return "is a directory"
    except PermissionError:
        return "permission denied"
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot be read: {exc}"
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        return f"not valid YAML{where}: {problem}"
    if not isinstance(doc, dict) or not any(k in doc for k in ("clusters", "contexts")):
        return "not a kubeconfig (no clusters or contexts)"
    return None


def check_kubeconfig(config: ControllerConfig, env: Mapping[str, str]) -> Problem | None:
    """The kubeconfig hpactl would load exists, can be read and is a kubeconfig with a
    current context (the client library needs one: hpactl has no --context)."""
    how, paths = _kubeconfig_paths(config, env)
    if not paths:
        return None
    readable = [p for p in paths if os.path.exists(p)]
    if not readable:
        where = paths[0] if len(paths) == 1 else os.pathsep.join(paths)
        hint = "" if how == "--kubeconfig" else " (give --kubeconfig or --master)"
        return Problem(f"{how} {where}: no such file{hint}", 2)
    if len(paths) == 1:
        problem = _read_problem(paths[0])
        if problem is not None:
            return Problem(f"{how} {paths[0]}: {problem}", 2)
        with open(paths[0], encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        if not doc.get("current-context"):
            return Problem(f"{how} {paths[0]}: no current-context set", 2)
    return None


def _bind_problem(host: str, port: int) -> str | None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # As aiohttp's server binds: a port in TIME_WAIT is free, a listening one is not.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host or ("::" if family == socket.AF_INET6 else "0.0.0.0"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return "address already in use"
            if exc.errno == errno.EACCES:
                return "permission denied"
            return None  # anything else (no such address): the server reports it
    return None


def check_ports(config: ControllerConfig) -> Problem | None:
    """The metrics and health ports can be bound (port 0, any free port, always can)."""
    for flag, text in (
        ("--metrics-bind-address", config.metrics_bind_address),
        ("--health-probe-bind-address", config.health_probe_bind_address),
    ):
        listen = parse_bind_address(text)
        if listen is None or listen[1] == 0:
            continue
        problem = _bind_problem(*listen)
        if problem is not None:
            return Problem(f"{flag}={text}: {problem}", 1)
    return None


def preflight(config: ControllerConfig, env: Mapping[str, str]) -> Problem | None:
    return check_kubeconfig(config, env) or check_ports(config)
