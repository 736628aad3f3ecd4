"""Readiness checks that read the API client's state.

``api_server_check(session, *, monotonic=time.monotonic) -> Callable[[], (ok, reason)]``
    The ``api-server`` check of ``/readyz``: passing unless the latest request the
    session sent got no HTTP response at all (connection refused or reset, TLS
    failure, timeout) and nothing has answered since. Any HTTP status counts as an
    answer: a 403 or a 503 is the API server speaking. Before the first request the
    check passes (the ``informer-caches`` check covers start-up).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["api_server_check"]


class _Outcomes(Protocol):
    """What ``KubeSession`` records about its requests."""

    last_success: float | None
    last_failure: tuple[float, str] | None


def api_server_check(
    session: _Outcomes, *, monotonic: Callable[[], float] = time.monotonic
) -> Callable[[], tuple[bool, str]]:
    def check() -> tuple[bool, str]:
        failure = session.last_failure
        if failure is None:
            return True, ""
        failed_at, error = failure
        success = session.last_success
        if success is not None and success >= failed_at:
            return True, ""
        if success is None:
            return False, f"no answer from the API server yet: {error}"
        silent = max(0.0, monotonic() - success)
        return False, f"no answer from the API server for {silent:.0f}s: {error}"

    return check
