"""structlog configuration.

One processor chain for the whole process: context variables (the HPA key a
sync is working on), level, UTC timestamp, the current OpenTelemetry trace and
span ids, then JSON (production) or console (a human at a terminal).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, Literal, TextIO

import structlog
from opentelemetry import trace

LogFormat = Literal["json", "console"]


def add_trace_context(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Add ``trace_id``/``span_id`` of the active span, so a log line leads to its trace."""
    ctx = trace.get_current_span().get_span_context()
    if ctx.is_valid:
        event_dict["trace_id"] = format(ctx.trace_id, "032x")
        event_dict["span_id"] = format(ctx.span_id, "016x")
    return event_dict


def level_for_verbosity(verbosity: int) -> int:
    """klog-style ``-v``: 0-1 info, 2 and above debug (per-sync detail)."""
    return logging.DEBUG if verbosity >= 2 else logging.INFO


_STDLIB_HANDLER_NAME = "hpactl"


def configure_logging(
    fmt: LogFormat = "json", verbosity: int = 0, stream: TextIO | None = None
) -> None:
    """Configure structlog, and route the standard library's ``logging`` (used by
    aiohttp, kubernetes_asyncio and a few of our adapters) through the same
    processors and renderer, so every line has one format and one destination."""
    renderer: Any
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(sort_keys=False)
    elif fmt == "console":
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    else:  # validated by the config layer; guard anyway
        raise ValueError(f"unknown log format {fmt!r}")
    out = stream or sys.stderr
    level = level_for_verbosity(verbosity)
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
        add_trace_context,
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out)
    handler.set_name(_STDLIB_HANDLER_NAME)
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
    root.setLevel(level)
