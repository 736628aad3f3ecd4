"""Write traffic.csv: one recorded-looking weekday of a web service, at 60 s resolution.

    python examples/recorded-day/generate.py [--days N] [--out FILE]

Deterministic (a fixed seed): running it again gives the same file byte for byte,
which tests/simulate/test_recorded_day.py checks. The shape, in CPU cores in use
across the whole Deployment:

* a night floor of about 0.6 cores;
* a morning business peak around 10:30 and a larger afternoon peak around 15:00
  (a weekday), a smaller evening one around 20:30;
* noise that wanders (an AR(1) process, about +-8%) plus per-sample jitter;
* a flash crowd at 17:40: 4 more cores within two minutes (above the day's peak),
  decaying over the next half hour.

`rps` (requests per second, about 180 per core) is there as a recording from a real
exporter would have more than one column; the scenarios read `cpu` (`column: cpu`).
`--days 7` writes a week (weekend days quieter), for the benchmark in
bench/bench_simulate.py.
"""

from __future__ import annotations

import argparse
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2026, 3, 10, tzinfo=UTC)  # a Tuesday
STEP = 60  # seconds between samples
SEED = 20260310


def _bump(h: float, center: float, width: float) -> float:
    return math.exp(-(((h - center) / width) ** 2))


def base_load(h: float, weekday: bool) -> float:
    """Cores in use at hour-of-day `h` (no noise)."""
    business = 3.2 * _bump(h, 10.5, 1.8) + 3.9 * _bump(h, 15.0, 2.1)
    evening = 1.4 * _bump(h, 20.5, 1.3)
    load = 0.6 + (business if weekday else 0.35 * business) + evening
    # Flash crowd: 4 more cores within two minutes from 17:40, then an exponential
    # decay (a 10-minute time constant).
    since = h - (17 + 40 / 60)
    if since >= 0 and weekday:
        rise = min(1.0, since * 30)
        load += 4.0 * rise * math.exp(-max(0.0, since - 1 / 30) * 6)
    return load


def rows(days: int) -> list[tuple[str, float, float]]:
    rng = random.Random(SEED)
    wander = 0.0
    out = []
    for i in range(days * 86400 // STEP):
        t = START + timedelta(seconds=i * STEP)
        h = (t - t.replace(hour=0, minute=0, second=0)).total_seconds() / 3600
        wander = 0.9 * wander + rng.gauss(0.0, 0.035)
        jitter = rng.gauss(0.0, 0.03)
        cpu = max(0.05, base_load(h, t.weekday() < 5) * (1 + wander + jitter))
        rps = cpu * 180 * (1 + rng.gauss(0.0, 0.02))
        out.append((t.strftime("%Y-%m-%dT%H:%M:%SZ"), round(rps, 1), round(cpu, 3)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=1)
    ap.add_argument("--out", default=str(Path(__file__).with_name("traffic.csv")))
    args = ap.parse_args()
    lines = ["time,rps,cpu"] + [f"{t},{rps:.1f},{cpu:.3f}" for t, rps, cpu in rows(args.days)]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
