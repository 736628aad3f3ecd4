"""The progress line of ``hpactl simulate`` on a terminal.

One line on stderr, rewritten in place: the virtual time reached against the
scenario's total, the steps done, and the pace (steps per second of real time) with
the time left at that pace. It is drawn only when stderr is a terminal, so nothing of
it ever reaches a file or a pipe; before anything else is written to the same
terminal (the streamed timeline on stdout) the line is erased, then drawn again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import TextIO

from hpactl.model.times import format_go_duration

__all__ = ["StepProgress", "is_terminal"]

_ERASE = "\r\x1b[K"


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def _clock(seconds: float) -> str:
    s = max(0, round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{sec:02d}"


class StepProgress:
    """Progress of a run of `total_steps` steps over `total_seconds` of virtual time."""

    def __init__(
        self,
        stream: TextIO,
        *,
        total_steps: int,
        total_seconds: float,
        prog: str,
        enabled: bool = True,
        interval: float = 0.1,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.total_steps = total_steps
        self.total_seconds = total_seconds
        self.prog = prog
        self.enabled = enabled
        self.interval = interval
        self._monotonic = monotonic
        self._t0 = monotonic()
        self._last_draw = -1.0e9
        self._shown = False
        self._done = 0
        self._virtual = 0.0

    def line(self) -> str:
        elapsed = self._monotonic() - self._t0
        rate = self._done / elapsed if elapsed > 0 else 0.0
        pct = 100 * self._done // max(1, self.total_steps)
        text = (
            f"{self.prog}: {_clock(self._virtual)} / {_clock(self.total_seconds)} virtual"
            f"  step {self._done}/{self.total_steps} ({pct}%)  {rate:.0f} steps/s"
        )
        if rate > 0 and self._done < self.total_steps:
            left = (self.total_steps - self._done) / rate
            text += f"  {format_go_duration(timedelta(seconds=round(left)))} left"
        return text

    def update(self, steps_done: int, virtual_seconds: float) -> None:
        """After a step: redraw, at most every `interval` seconds (at once if erased)."""
        self._done = steps_done
        self._virtual = virtual_seconds
        if not self.enabled:
            return
        now = self._monotonic()
        if self._shown and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        self.stream.write(_ERASE + self.line())
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erase the line (something else is about to be written to the terminal)."""
        if self._shown:
            self.stream.write(_ERASE)
            self.stream.flush()
            self._shown = False

    def finish(self) -> None:
        """Replace the line by what the run took."""
        if not self.enabled:
            return
        elapsed = self._monotonic() - self._t0
        rate = self._done / elapsed if elapsed > 0 else 0.0
        self.stream.write(
            f"{_ERASE}{self.prog}: {self._done} steps, "
            f"{format_go_duration(timedelta(seconds=round(self._virtual)))} of virtual time "
            f"in {elapsed:.1f}s ({rate:.0f} steps/s)\n"
        )
        self.stream.flush()
        self._shown = False
