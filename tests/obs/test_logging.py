"""Log lines as kube-controller-manager writes them: klog's text header and
component-base's JSON fields, and the -v / --vmodule levels that decide what is written."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import time

import pytest
import structlog

from hpactl.obs.logging import EVENT_VERBOSITY, configure_logging, verbosity_of

# klog: severity, MMDD hh:mm:ss.uuuuuu, the pid right-aligned in 7, file:line] "msg" k=v
KLOG = re.compile(r'([IWE])(\d{4}) (\d\d:\d\d:\d\d\.\d{6}) +(\d+) ([\w.]+\.py:\d+)\] ("[^"]*")(.*)')


def _lines(
    fmt: str, v: int = 0, vmodule: tuple[tuple[str, int], ...] = ()
) -> tuple[io.StringIO, structlog.typing.FilteringBoundLogger]:
    out = io.StringIO()
    configure_logging(fmt, v, stream=out, vmodule=vmodule)
    return out, structlog.get_logger("hpactl.controller")


def test_text_lines_have_klogs_header_and_quoted_values() -> None:
    out, log = _lines("text")
    before = time.time()
    log.info("hpa.synced", hpa="default/web", current=2, desired=3, rescaled=True, ratio=1.5)
    log.warning("hpa.invalid", hpa="default/bad", error="spec.maxReplicas: Invalid value")
    line, warning = out.getvalue().splitlines()
    m = KLOG.fullmatch(line)
    assert m is not None, line
    severity, day, _clock, pid, caller, msg, rest = m.groups()
    assert (severity, int(pid), msg) == ("I", os.getpid(), '"hpa.synced"')
    assert day == time.strftime("%m%d", time.gmtime(before))
    assert caller.startswith("test_logging.py:")
    assert rest == ' hpa="default/web" current=2 desired=3 rescaled=true ratio=1.5'
    assert warning.startswith("W") and warning.endswith(
        '] "hpa.invalid" err="spec.maxReplicas: Invalid value" hpa="default/bad"'
    )


def test_text_errors_carry_the_traceback_as_a_klog_block() -> None:
    out, log = _lines("text")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("hpa.sync_failed", hpa="default/web")
    text = out.getvalue()
    assert text.startswith("E") and '] "hpa.sync_failed" err=<\n\tTraceback' in text
    assert "\tRuntimeError: boom\n >" in text and text.rstrip().endswith('hpa="default/web"')


def test_json_fields_are_component_bases() -> None:
    out, log = _lines("json")
    before = time.time() * 1000
    log.info("hpa.synced", hpa="default/web", current=2, desired=3, rescaled=True)
    log.error("hpactl.failed", error="FileNotFoundError: nope")
    info, error = (json.loads(line) for line in out.getvalue().splitlines())
    assert list(info)[:4] == ["ts", "caller", "msg", "v"]
    assert before <= info["ts"] <= time.time() * 1000  # float milliseconds since the epoch
    assert info["caller"].startswith("test_logging.py:") and info["msg"] == "hpa.synced"
    assert (info["v"], info["hpa"], info["rescaled"]) == (0, "default/web", True)
    assert "level" not in info and "event" not in info
    assert list(error)[:4] == ["ts", "caller", "msg", "err"] and "v" not in error
    assert error["err"] == "FileNotFoundError: nope"


def test_a_sync_that_changed_nothing_needs_v4_one_that_rescaled_is_v0() -> None:
    quiet = {"event": "hpa.synced", "level": "info", "rescaled": False, "error": None}
    assert verbosity_of(quiet) == 4
    assert verbosity_of({**quiet, "rescaled": True}) == 0
    assert verbosity_of({**quiet, "error": "failed to get cpu utilization"}) == 0
    assert verbosity_of({"event": "hpa.invalid", "level": "warning"}) is None  # always
    assert verbosity_of({"event": "hpactl.leading", "level": "info"}) == 0
    assert EVENT_VERBOSITY["cache.relist"] == 2
    for v, shown in ((0, 1), (3, 1), (4, 2)):
        out, log = _lines("json", v)
        log.info("hpa.synced", hpa="a/b", rescaled=False, error=None)
        log.info("hpa.synced", hpa="a/c", rescaled=True, error=None)
        assert len(out.getvalue().splitlines()) == shown, v


@pytest.mark.parametrize(
    ("vmodule", "cache_shown", "controller_shown"),
    [
        ((), False, False),
        ((("hpactl.cache", 4),), True, False),  # a dotted prefix
        ((("hpactl.c*", 4),), True, True),  # a glob
        ((("hpactl.controller", 4), ("hpactl.*", 0)), False, True),  # first match wins
    ],
)
def test_vmodule_raises_the_level_per_logger_name(
    vmodule: tuple[tuple[str, int], ...], cache_shown: bool, controller_shown: bool
) -> None:
    out = io.StringIO()
    configure_logging("text", 0, stream=out, vmodule=vmodule)
    structlog.get_logger("hpactl.cache.reflector").debug("cache.listed", informer="pods")
    structlog.get_logger("hpactl.controller").info("hpa.synced", hpa="a/b", rescaled=False)
    text = out.getvalue()
    assert ('"cache.listed"' in text, '"hpa.synced"' in text) == (cache_shown, controller_shown)


def test_library_debug_records_need_v5() -> None:
    for v, shown in ((4, False), (5, True)):
        out = io.StringIO()
        configure_logging("text", v, stream=out)
        logging.getLogger("aiohttp.client").debug("connection %s", "reused")
        assert ('"connection reused"' in out.getvalue()) is shown
