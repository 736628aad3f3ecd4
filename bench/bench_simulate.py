"""How fast `hpactl simulate` runs: a day of virtual time for one HPA with a workload.

    .venv/bin/python bench/bench_simulate.py [--steps 5760] [--profile]

5,760 steps at the default 15 s sync period = 24 h. The scenario is the demo's
(a Deployment, a CPU HPA, a workload whose demand follows a daily curve). Prints
wall time, steps per second and the replica range seen. Run by hand; results go to
docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import pstats
import time

import structlog
import yaml

from hpactl.simulate.demo import DEMO_SCENARIO
from hpactl.simulate.runner import Simulation
from hpactl.simulate.scenario import parse_scenario


def day_scenario(steps: int) -> dict[str, object]:
    doc = yaml.safe_load(DEMO_SCENARIO)
    doc["name"] = "bench-day"
    # A daily curve: night, morning ramp, lunch peak, afternoon, evening spike, night.
    doc["workload"][0]["demand"]["cpu"] = [
        {"at": "0s", "value": "300m"},
        {"at": "6h", "value": "400m"},
        {"at": "9h", "value": "2"},
        {"at": "12h", "value": "3"},
        {"at": "13h", "value": "2"},
        {"at": "18h", "value": "2.5"},
        {"at": "20h", "value": "3.5"},
        {"at": "22h", "value": "800m"},
        {"at": "24h", "value": "300m"},
    ]
    doc["steps"] = [{}, {"repeat": steps - 1}]
    return doc


async def run(steps: int) -> tuple[float, float, int, int, int]:
    scenario = parse_scenario(day_scenario(steps))
    t0 = time.perf_counter()
    async with Simulation(scenario) as sim:
        t1 = time.perf_counter()
        results = await sim.run()
        t2 = time.perf_counter()
    reps = [r.targets["Deployment/default/web"]["replicas"] for r in results]
    rescales = sum(len(r.rescales) for r in results)
    return t1 - t0, t2 - t1, min(reps), max(reps), rescales


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5760)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
    setup, loop, lo, hi, rescales = asyncio.run(run(args.steps))
    if args.profile:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    print(
        f"steps={args.steps} virtual={args.steps * 15 / 3600:.1f}h setup={setup:.2f}s "
        f"run={loop:.2f}s ({args.steps / loop:.0f} steps/s, {loop / args.steps * 1000:.2f} ms/step) "
        f"replicas={lo}..{hi} rescales={rescales}"
    )


if __name__ == "__main__":
    main()
