"""``hpactl simulate FILE``: run a scenario against the real controller, in seconds.

Exit status: 0 after the last step; 2 when the scenario (or a command-line option)
is wrong, with one line ``hpactl simulate: error: <where>: <what>`` on stderr; 1 when
the run itself fails.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # the simulator loads lazily (the CLI starts fast)
    from hpactl.cli.progress import StepProgress
    from hpactl.simulate.runner import StepResult
    from hpactl.simulate.scenario import Scenario

PROG = "hpactl simulate"


def quiet_logging(verbose: bool = False) -> None:
    """Controller logs go to stderr, warnings only unless asked (stdout is the output)."""
    import structlog

    level = logging.INFO if verbose else logging.WARNING
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # sys.stderr looked up per logger, not captured once (it may be replaced).
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.getLogger("hpactl").setLevel(level)


def timeline_header(scenario: Scenario) -> str:
    import textwrap

    header = f"Scenario {scenario.name}"
    if scenario.description:
        header += f": {' '.join(scenario.description.split())}"
    return textwrap.fill(header, width=100, subsequent_indent="  ")


def render_outputs(
    sim_results: Sequence[StepResult],
    scenario: Scenario,
    *,
    output: str,
    plot: str | None,
    out: TextIO,
    summary: bool = True,
    streamed: bool = False,
) -> None:
    """Timeline (unless it was streamed) + summary to `out` when the output is the
    timeline (jsonl is always streamed); the plot if asked."""
    from hpactl.simulate.output import summarize, write_summary, write_timeline
    from hpactl.simulate.plot import write_plot

    summary_buf = io.StringIO()
    if sim_results:
        write_summary(
            summarize(sim_results, start=scenario.start, period=scenario.sync_period), summary_buf
        )
    if output == "timeline":
        if not streamed:
            write_timeline(sim_results, out, start=scenario.start, header=timeline_header(scenario))
        if summary:
            out.write(summary_buf.getvalue())
    if plot:
        title = f"hpactl simulate: {scenario.name}"
        write_plot(
            plot,
            sim_results,
            start=scenario.start,
            title=title,
            description=scenario.description,
            summary_text=summary_buf.getvalue(),
        )


async def simulate(
    scenario: Scenario,
    *,
    output: str,
    out: TextIO,
    progress: StepProgress | None = None,
) -> list[StepResult]:
    """Run the scenario, writing each step's output (jsonl line or timeline lines) to
    `out` as soon as the step completes; the summary is left to `render_outputs`."""
    from hpactl.cli.progress import is_terminal
    from hpactl.simulate.output import TimelineWriter, jsonl_line
    from hpactl.simulate.runner import Simulation

    timeline = None
    if output == "timeline":
        timeline = TimelineWriter(start=scenario.start, header=timeline_header(scenario))
    # The progress line and the output share the terminal: erase it before writing.
    shared = progress is not None and is_terminal(out)

    def emit(text: str) -> None:
        if text:
            if shared and progress is not None:
                progress.clear()
            out.write(text)
            out.flush()

    def on_step(r: StepResult) -> None:
        if timeline is not None:
            emit(timeline.feed(r))
        elif output == "jsonl":
            emit(jsonl_line(r) + "\n")
        if progress is not None:
            progress.update(r.step + 1, (r.time - scenario.start).total_seconds())

    if timeline is not None:
        emit(timeline.head())
    try:
        async with Simulation(scenario) as sim:
            results = await sim.run(on_step)
    except BaseException:
        if progress is not None:
            progress.clear()
        raise
    if timeline is not None:
        emit(timeline.close())
    return results


def error(message: str, prog: str = PROG) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def failed(exc: BaseException, verbose: bool, prog: str = PROG) -> int:
    """A failure of the run (not of the scenario): one line, or the traceback with -v."""
    if verbose:
        import traceback

        traceback.print_exception(exc)
    print(f"{prog}: the run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 1


def plot_path_error(plot: str | None, prog: str = PROG) -> int | None:
    """Exit status 2 (and the message) when the plot cannot be written there."""
    from hpactl.simulate.plot import PlotError, check_plot_path

    if plot:
        try:
            check_plot_path(plot)
        except PlotError as exc:
            return error(str(exc), prog)
    return None


def _broken_pipe() -> int:
    # The reader went away (`| head`): not an error, and no traceback at exit.
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 0


def _run_compare(args: argparse.Namespace) -> int:
    """`FILE --compare OTHER`: both scenarios run, then the comparison is printed."""
    from hpactl.simulate.compare import (
        Variant,
        check_compare_plot_path,
        run_variant,
        write_compare_plot,
        write_comparison,
        write_comparison_jsonl,
    )
    from hpactl.simulate.plot import PlotError
    from hpactl.simulate.scenario import ScenarioError, load_scenario

    if args.plot:
        try:
            check_compare_plot_path(args.plot)
        except PlotError as exc:
            return error(str(exc))
    if args.file == "-" and args.compare == "-":
        return error("--compare: only one of the two scenarios can be read from standard input")
    scenarios = []
    for path in (args.file, args.compare):
        try:
            scenarios.append(load_scenario(path))
        except ScenarioError as exc:
            return error(f"{path}: {exc}")
    quiet_logging(args.verbose)
    variants = []
    for label, path, scenario in zip(("A", "B"), (args.file, args.compare), scenarios, strict=True):
        try:
            results = asyncio.run(run_variant(scenario))
        except ScenarioError as exc:
            return error(f"{path}: {exc}")
        except KeyboardInterrupt:
            return 130
        except Exception as exc:  # the run itself failed: say so in one line, 1
            return failed(exc, args.verbose)
        variants.append(Variant(label, str(path), scenario, results))
    a, b = variants
    text = io.StringIO()
    write_comparison(a, b, text)
    try:
        if args.output == "jsonl":
            write_comparison_jsonl(a, b, sys.stdout)
        else:
            sys.stdout.write(text.getvalue())
        sys.stdout.flush()
    except BrokenPipeError:
        return _broken_pipe()
    if args.plot:
        try:
            write_compare_plot(args.plot, a, b, text=text.getvalue())
        except OSError as exc:
            return failed(exc, args.verbose)
        print(f"plot written to {Path(args.plot)}", file=sys.stderr)
    return 0


def _progress(args: argparse.Namespace, scenario: Scenario) -> StepProgress | None:
    """The progress line, when stderr is a terminal (and the logs are not shown there)."""
    from hpactl.cli.progress import StepProgress, is_terminal

    if args.no_progress or args.verbose or not is_terminal(sys.stderr):
        return None
    timeline = scenario.timeline()
    return StepProgress(
        sys.stderr,
        total_steps=len(timeline),
        total_seconds=timeline[-1][2] if timeline else 0.0,
        prog=PROG,
    )


def _run(args: argparse.Namespace) -> int:
    from hpactl.simulate.scenario import ScenarioError, load_scenario

    if getattr(args, "compare", None):
        return _run_compare(args)
    if (status := plot_path_error(args.plot)) is not None:
        return status
    try:
        scenario = load_scenario(args.file)
    except ScenarioError as exc:
        return error(str(exc))
    quiet_logging(args.verbose)
    out = sys.stdout
    results: list[StepResult] = []
    progress = _progress(args, scenario)
    try:
        results = asyncio.run(simulate(scenario, output=args.output, out=out, progress=progress))
    except ScenarioError as exc:
        return error(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _broken_pipe()
    except Exception as exc:  # the run itself failed: say so in one line, 1
        return failed(exc, args.verbose)
    if progress is not None:
        progress.clear()
    try:
        render_outputs(
            results, scenario, output=args.output, plot=args.plot, out=out, streamed=True
        )
    except BrokenPipeError:
        return _broken_pipe()
    except OSError as exc:  # the plot file could not be written
        return failed(exc, args.verbose)
    if progress is not None:
        progress.finish()
    if args.plot:
        print(f"plot written to {Path(args.plot)}", file=sys.stderr)
    return 0


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="run a scenario (cluster, metrics, timeline) against the real controller",
        description=(
            "Run the HPA controller against the built-in API emulator on a virtual "
            "clock, following a scenario file (see docs/scenario-format.md)."
        ),
    )
    parser.add_argument(
        "file", metavar="FILE", help="scenario file (YAML or JSON; - reads standard input)"
    )
    parser.add_argument(
        "--output",
        "-o",
        choices=("timeline", "jsonl"),
        default="timeline",
        help="timeline (readable, default) or jsonl (one JSON object per step)",
    )
    parser.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw replicas and metrics over time: .svg, .html, or .png (needs matplotlib)",
    )
    parser.add_argument(
        "--compare",
        metavar="OTHER",
        help=(
            "also run OTHER (a second scenario, e.g. the same recorded load with another "
            "HPA spec) and print a comparison: replicas over time, pod-hours, time above "
            "target, scale events; --plot draws both"
        ),
    )
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="show the controller's info logs on stderr (a switch here; hpactl run's -v "
        "takes a level)",
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress line (it is shown only when stderr is a terminal, and not with -v)",
    )
    parser.set_defaults(func=_run)
