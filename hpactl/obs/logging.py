"""Logs as kube-controller-manager writes them (component-base's ``text`` and ``json``).

``text`` is klog's header format, one line per entry::

    I1124 17:00:00.123456   12345 horizontal.py:778] "hpa.synced" hpa="default/web" current=2

(severity I/W/E, month and day, UTC time, process id, the Python file and line of the
call, then the message and key/value pairs). ``json`` is component-base's zap
encoding: ``ts`` (float milliseconds since the epoch), ``caller``, ``msg``, ``v`` for
info entries or ``err`` for errors, then the key/values.

The message is hpactl's event name (``hpa.synced``); ``-v`` / ``--vmodule`` decide
which entries are written: :data:`EVENT_VERBOSITY` gives each event's level, so that
per-HPA detail (a sync that changed nothing) is V(4), as upstream's HPA controller
logs "Decided not to scale", and a default run writes only what an operator acts on.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import sys
import time
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO

import structlog
from opentelemetry import trace

LogFormat = Literal["text", "json"]

#: Verbosity of hpactl's info and debug events. Errors and warnings are always written.
#: Events not listed: info at V(0), debug at V(4).
EVENT_VERBOSITY: Mapping[str, int] = {
    # Per HPA, per sync: what 10,000 HPAs would write 40,000 times a minute.
    "hpa.synced": 4,  # V(0) when it rescaled or failed: see verbosity_of
    "hpa.skipped": 4,
    "hpa.topology_skew": 2,
    "hpa.shadow_writer_decision": 4,
    "hpa.shadow_scale_event": 4,
    # Watch and list traffic: a relist on every expired watch is routine.
    "cache.relist": 2,
    "cache.relist_requested": 2,
    "cache.observed_rv_reset": 2,
    "cache.listed": 4,
    "cache.watch_inactive": 5,
    "hpactl.history_written": 4,
}

#: Verbosity of a debug event not in EVENT_VERBOSITY.
DEBUG_VERBOSITY = 4
#: Verbosity of the standard library's DEBUG records (aiohttp, asyncio, ...).
LIBRARY_DEBUG_VERBOSITY = 5

_ERROR_METHODS = frozenset({"error", "exception", "critical", "fatal"})


def verbosity_of(event: Mapping[str, Any]) -> int | None:
    """The V level of an event dict, None for warnings and errors (always written).

    A sync that rescaled or met an error is an operator's business: V(0)."""
    method = str(event.get("level", "info"))
    if method in _ERROR_METHODS or method in ("warning", "warn"):
        return None
    name = str(event.get("event", ""))
    if name == "hpa.synced" and (event.get("rescaled") or event.get("error")):
        return 0
    if name in EVENT_VERBOSITY:
        return EVENT_VERBOSITY[name]
    return DEBUG_VERBOSITY if method == "debug" else 0


@dataclass(frozen=True, slots=True)
class Verbosity:
    """``-v`` and ``--vmodule``: the highest V level written, per logger name.

    A ``--vmodule`` pattern matches a logger name as a glob (``hpactl.c*``) or as a
    dotted prefix (``hpactl.cache`` matches ``hpactl.cache.reflector``); the first
    matching pattern wins over ``-v``, as in klog."""

    v: int = 0
    vmodule: tuple[tuple[str, int], ...] = ()

    def level_for(self, logger: str) -> int:
        for pattern, level in self.vmodule:
            if fnmatch.fnmatchcase(logger, pattern) or logger.startswith(pattern + "."):
                return level
        return self.v

    def enabled(self, v: int | None, logger: str) -> bool:
        return v is None or v <= self.level_for(logger)

    @property
    def highest(self) -> int:
        return max([self.v, *(level for _, level in self.vmodule)])


# What configure_logging installed last: its processor list, that list's renderer
# (structlog.testing.capture_logs swaps the list's content in place) and its verbosity.
_installed: tuple[list[Any], Any, Verbosity] | None = None


def v_enabled(v: int, logger: str) -> bool:
    """Whether an info entry at V(``v``) from ``logger`` would be written.

    Lets a hot path skip building an entry the verbosity filter would drop (a steady
    sync's ``hpa.synced`` is V(4)). True whenever structlog is not configured by
    :func:`configure_logging` (tests capturing logs, a bare library use): then every
    entry is built as before."""
    installed = _installed
    if installed is None:
        return True
    ours, renderer, verbosity = installed
    procs = structlog.get_config()["processors"]
    if procs is not ours or not procs or procs[-1] is not renderer:
        return True
    return verbosity.enabled(v, logger)


def add_trace_context(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Add ``trace_id``/``span_id`` of the active span, so a log line leads to its trace."""
    ctx = trace.get_current_span().get_span_context()
    if ctx.is_valid:
        event_dict["trace_id"] = format(ctx.trace_id, "032x")
        event_dict["span_id"] = format(ctx.span_id, "016x")
    return event_dict


class _NamedPrintLogger(structlog.PrintLogger):
    """A PrintLogger that knows the name it was asked for (``--vmodule`` reads it)."""

    def __init__(self, file: TextIO, name: str) -> None:
        super().__init__(file)
        self.name = name


class _LoggerFactory:
    def __init__(self, file: TextIO) -> None:
        self._file = file

    def __call__(self, *args: Any) -> _NamedPrintLogger:
        return _NamedPrintLogger(self._file, str(args[0]) if args else "hpactl")


def _drop_by_verbosity(verbosity: Verbosity) -> Any:
    def processor(
        logger: Any, _method: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        record = event_dict.get("_record")
        if record is not None:  # the handler's filter has decided already
            event_dict["_v"] = LIBRARY_DEBUG_VERBOSITY if record.levelno < logging.INFO else 0
            return event_dict
        v = verbosity_of(event_dict)
        if not verbosity.enabled(v, str(getattr(logger, "name", "hpactl"))):
            raise structlog.DropEvent
        event_dict["_v"] = v
        return event_dict

    return processor


class _StdlibVerbosityFilter(logging.Filter):
    """The same decision for the standard library's records (kube.leader, aiohttp)."""

    def __init__(self, verbosity: Verbosity) -> None:
        super().__init__()
        self.verbosity = verbosity

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        v = LIBRARY_DEBUG_VERBOSITY if record.levelno < logging.INFO else 0
        return self.verbosity.enabled(v, record.name)


# ------------------------------------------------------------------------- renderers

_HEADER_KEYS = ("event", "level", "_v", "logger", "filename", "lineno", "timestamp")


def _split(event_dict: MutableMapping[str, Any]) -> tuple[str, bool, int, str, Any, dict[str, Any]]:
    """(message, is_error, v, caller, err, other key/values) of an event dict."""
    method = str(event_dict.get("level", "info"))
    is_error = method in _ERROR_METHODS
    v = event_dict.get("_v")
    caller = f"{event_dict.get('filename', '?')}:{event_dict.get('lineno', 0)}"
    err = event_dict.pop("error", None)
    exception = event_dict.pop("exception", None)
    if exception:
        err = f"{err}\n{exception}" if err else exception
    rest = {k: val for k, val in event_dict.items() if k not in _HEADER_KEYS}
    rest.pop("_record", None)
    rest.pop("_from_structlog", None)
    return str(event_dict.get("event", "")), is_error, int(v or 0), caller, err, rest


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def render_json(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> str:
    """component-base's JSON: ts (ms), caller, msg, v (info) or err (error), key/values."""
    msg, is_error, v, caller, err, rest = _split(event_dict)
    out: dict[str, Any] = {"ts": event_dict.get("timestamp", time.time()) * 1000.0}
    out["caller"] = caller
    out["msg"] = msg
    if is_error:
        out["err"] = err
    else:
        out["v"] = v
        if err is not None:
            out["err"] = err
    for key, value in rest.items():
        out.setdefault(key, value)
    return json.dumps(out, separators=(",", ":"), default=_json_default, ensure_ascii=False)


def _text_value(value: Any) -> str:
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if "\n" in value:  # klog writes multi-line strings as an indented block
            body = "".join(f"\t{line}\n" for line in value.rstrip("\n").split("\n"))
            return f"<\n{body} >"
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), default=_json_default, ensure_ascii=False)


_SEVERITY = {"warning": "W", "warn": "W"}


def render_text(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> str:
    """klog's header then ``"msg" key=value ...``."""
    method = str(event_dict.get("level", "info"))
    severity = "E" if method in _ERROR_METHODS else _SEVERITY.get(method, "I")
    msg, _is_error, _v, caller, err, rest = _split(event_dict)
    ts = float(event_dict.get("timestamp", time.time()))
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(ts))
    micros = int((ts % 1) * 1_000_000)
    parts = [f"{severity}{stamp}.{micros:06d} {os.getpid():7d} {caller}] {_text_value(msg)}"]
    if err is not None:
        parts.append(f"err={_text_value(str(err))}")
    parts.extend(f"{key}={_text_value(value)}" for key, value in rest.items())
    return " ".join(parts)


def _add_timestamp(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    record = event_dict.get("_record")
    event_dict["timestamp"] = record.created if record is not None else time.time()
    return event_dict


_STDLIB_HANDLER_NAME = "hpactl"


def configure_logging(
    fmt: LogFormat | str = "text",
    verbosity: int = 0,
    stream: TextIO | None = None,
    vmodule: Sequence[tuple[str, int]] = (),
) -> None:
    """Configure structlog, and route the standard library's ``logging`` (used by
    aiohttp, kubernetes_asyncio and a few of our adapters) through the same
    processors and renderer, so every line has one format and one destination."""
    renderer: Any
    if fmt == "json":
        renderer = render_json
    elif fmt in ("text", "console"):
        renderer = render_text
    else:  # validated by the config layer; guard anyway
        raise ValueError(f"unknown log format {fmt!r}")
    out = stream or sys.stderr
    chosen = Verbosity(verbosity, tuple(vmodule))
    callsite = structlog.processors.CallsiteParameterAdder(
        [
            structlog.processors.CallsiteParameter.FILENAME,
            structlog.processors.CallsiteParameter.LINENO,
        ],
        additional_ignores=["hpactl.obs.logging"],
    )
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _drop_by_verbosity(chosen),
        callsite,
        _add_timestamp,
        add_trace_context,
    ]
    lowest = logging.DEBUG if chosen.highest >= DEBUG_VERBOSITY else logging.INFO
    processors: list[Any] = [*shared, structlog.processors.format_exc_info, renderer]
    global _installed
    _installed = (processors, renderer, chosen)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(lowest),
        logger_factory=_LoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out)
    handler.set_name(_STDLIB_HANDLER_NAME)
    handler.addFilter(_StdlibVerbosityFilter(chosen))
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    # Replace our handler on reconfiguration (tests, `demo --serve`), keep others'.
    for old in [h for h in root.handlers if h.get_name() == _STDLIB_HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    lib_lowest = logging.DEBUG if chosen.highest >= LIBRARY_DEBUG_VERBOSITY else logging.INFO
    root.setLevel(lib_lowest)
