"""How long `hpactl simulate` takes on a week of recorded traffic at a 15 s period.

    .venv/bin/python bench/bench_recorded.py [--days 7] [--profile] [--keep DIR]

Writes a week-long recording with examples/recorded-day/generate.py (60 s samples:
10,080 rows, weekdays and a quieter weekend), a scenario that is
examples/recorded-day/stabilized.yaml reading it for 7 x 5,760 = 40,320 steps, and
times `hpactl simulate SCENARIO --output jsonl > /dev/null` as a child process
(wall time, as `time` would show it). Also times loading the scenario (reading and
checking the CSV) on its own. `--profile` runs the same in-process under cProfile
and prints where the time goes. Run by hand; results go to docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import structlog
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "recorded-day"


def write_week(directory: Path, days: int) -> Path:
    csv = directory / "week.csv"
    subprocess.run(
        [sys.executable, str(EXAMPLE / "generate.py"), "--days", str(days), "--out", str(csv)],
        check=True,
    )
    doc = yaml.safe_load((EXAMPLE / "stabilized.yaml").read_text(encoding="utf-8"))
    doc["name"] = f"bench-recorded-{days}d"
    doc["workload"][0]["demand"]["cpu"]["file"] = csv.name
    doc["steps"] = [{}, {"repeat": days * 5760 - 1}]
    scenario = directory / "week.yaml"
    scenario.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return scenario


def profile(path: Path) -> None:
    from hpactl.simulate.runner import Simulation
    from hpactl.simulate.scenario import load_scenario

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    scenario = load_scenario(path)

    async def go() -> None:
        async with Simulation(scenario) as sim:
            prof = cProfile.Profile()
            prof.enable()
            await sim.run()
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(40)

    asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hpactl-bench-") as tmp:
        directory = Path(args.keep) if args.keep else Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        path = write_week(directory, args.days)
        from hpactl.simulate.scenario import load_scenario

        t0 = time.perf_counter()
        scenario = load_scenario(path)
        load = time.perf_counter() - t0
        rows = len(scenario.workload[0].demand["cpu"])
        steps = len(scenario.timeline())
        if args.profile:
            profile(path)
            return
        cmd = [sys.executable, "-m", "hpactl", "simulate", str(path), "--output", "jsonl"]
        t0 = time.perf_counter()
        with open(directory / "out.jsonl", "w", encoding="utf-8") as out:
            subprocess.run(cmd, check=True, stdout=out)
        wall = time.perf_counter() - t0
        with open(directory / "out.jsonl", encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        print(
            f"days={args.days} samples={rows} steps={steps} (jsonl lines {lines}) "
            f"load={load * 1000:.0f}ms wall={wall:.1f}s ({wall / steps * 1000:.2f} ms/step, "
            f"{steps * 15 / wall:.0f}x real time)"
        )


if __name__ == "__main__":
    main()
