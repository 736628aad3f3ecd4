"""``hpactl demo``: the quick start — a Deployment, a CPU HPA and a load curve.

With no arguments it runs the built-in scenario (30 virtual minutes, a few seconds
of real time), shows progress on stderr, then prints the timeline and a summary and
writes a plot (``hpactl-demo.html`` in the temporary directory, not in the current
one: a clone stays clean). ``--scenario FILE`` runs another scenario;
``--serve`` keeps the emulator and the controller running afterwards, at real-time
pace, and prints a kubeconfig for ``kubectl``; Ctrl-C ends it (exit 0).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from hpactl.cli.simulate_cmd import (
    error,
    failed,
    plot_path_error,
    quiet_logging,
    render_outputs,
)

if TYPE_CHECKING:  # the simulator loads lazily (the CLI starts fast)
    from hpactl.simulate.runner import StepResult
    from hpactl.simulate.scenario import Scenario

PROG = "hpactl demo"
DEFAULT_PLOT = os.path.join(tempfile.gettempdir(), "hpactl-demo.html")


class Progress:
    """One stderr line, rewritten in place (at most ~10 times a second); drawn only on
    a terminal, so no ``\r`` reaches a redirected stderr."""

    def __init__(
        self, total: int, start: datetime, stream: TextIO, *, enabled: bool = True
    ) -> None:
        self.total = total
        self.start = start
        self.stream = stream
        self.enabled = enabled
        self._last = 0.0
        self._width = 0

    def __call__(self, result: StepResult) -> None:
        from hpactl.simulate.output import format_offset

        if not self.enabled:
            return
        now = time.monotonic()
        done = result.step + 1
        if done < self.total and now - self._last < 0.1:
            return
        self._last = now
        bar_w = 24
        filled = bar_w * done // max(1, self.total)
        reps = ", ".join(
            f"{k.split('/', 2)[-1]}={v.get('replicas')}" for k, v in result.targets.items()
        )
        line = (
            f"[{'#' * filled}{'.' * (bar_w - filled)}] step {done}/{self.total}  "
            f"{format_offset((result.time - self.start).total_seconds())}  {reps}"
        )
        pad = max(0, self._width - len(line))
        self._width = len(line)
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()

    def finish(self, seconds: float) -> None:
        if self.enabled and self._width:
            self.stream.write(f"\n{PROG}: ran in {seconds:.1f}s of real time\n")
            self.stream.flush()


async def _demo(args: argparse.Namespace, scenario: Scenario, until: float | None) -> int:
    from hpactl.simulate.runner import Simulation

    timeline = [t for t in scenario.timeline() if until is None or t[2] <= until]
    from hpactl.cli.progress import is_terminal

    shown = not args.no_progress and is_terminal(sys.stderr)
    progress = Progress(len(timeline), scenario.start, sys.stderr, enabled=shown)
    out = sys.stdout
    t0 = time.monotonic()
    async with Simulation(scenario) as sim:
        results = await sim.run(progress, until=until)
        progress.finish(time.monotonic() - t0)
        render_outputs(results, scenario, output="timeline", plot=args.plot, out=out)
        if args.plot:
            out.write(f"\nPlot: {Path(args.plot).resolve()}\n")
        if not args.serve:
            return 0
        out.write(
            "\nServing: the emulator and the controller keep running (real-time pace from now).\n"
            f"  kubeconfig: {sim.kubeconfig}\n"
            f"  try:        kubectl --kubeconfig {sim.kubeconfig} get hpa,deploy,pods\n"
            "Press Ctrl-C to stop.\n"
        )
        out.flush()
        with contextlib.suppress(asyncio.CancelledError):
            await sim.serve()
    return 0


def _run(args: argparse.Namespace) -> int:
    from hpactl.model.times import parse_go_duration
    from hpactl.simulate.demo import DEMO_SCENARIO
    from hpactl.simulate.scenario import ScenarioError, load_scenario, loads_scenario

    if args.print_scenario:
        sys.stdout.write(DEMO_SCENARIO)
        return 0
    until: float | None = None
    if args.until is not None:
        try:
            until = parse_go_duration(args.until).total_seconds()
        except ValueError:
            return error(f'--until: invalid duration "{args.until}"', PROG)
    if (status := plot_path_error(args.plot, PROG)) is not None:
        return status
    try:
        if args.scenario:
            scenario = load_scenario(args.scenario)
        else:
            scenario = loads_scenario(DEMO_SCENARIO, source="demo")
    except ScenarioError as exc:
        return error(str(exc), PROG)
    quiet_logging(args.verbose)
    try:
        return asyncio.run(_demo(args, scenario, until))
    except ScenarioError as exc:
        sys.stderr.write("\n")
        return error(str(exc), PROG)
    except KeyboardInterrupt:
        return 0
    except Exception as exc:
        sys.stderr.write("\n")
        return failed(exc, args.verbose, PROG)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="see the controller at work: a Deployment, a CPU HPA and a load curve, in seconds",
        description=(
            "Run a built-in scenario (or --scenario FILE) against the real controller on a "
            "virtual clock; print the timeline and a summary and write a plot."
        ),
    )
    parser.add_argument("--scenario", metavar="FILE", help="run this scenario instead")
    parser.add_argument(
        "--plot",
        metavar="FILE",
        default=DEFAULT_PLOT,
        help=f"where to draw the plot: .html, .svg or .png (default {DEFAULT_PLOT})",
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="afterwards keep the emulator and controller running for kubectl (Ctrl-C stops)",
    )
    parser.add_argument(
        "--until",
        metavar="DURATION",
        help="stop after this much virtual time (e.g. 5m)",
    )
    parser.add_argument(
        "--print-scenario",
        action="store_true",
        help="print the built-in scenario (a starting point for your own) and exit",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="show the controller's info logs on stderr (a switch here; hpactl run's -v "
        "takes a level)",
    )
    parser.set_defaults(func=_run)
