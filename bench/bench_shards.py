"""Benchmark: N ``hpactl run --shards`` replicas sharing one cluster of 10,000 HPAs.

Run by hand (not a test)::

    .venv/bin/python bench/bench_shards.py                         # 3 replicas, 12 shards
    .venv/bin/python bench/bench_shards.py --hpas 1000 --replicas 2 --shards 4
    .venv/bin/python bench/bench_shards.py -- --kube-api-qps 50    # more `hpactl run` flags

Processes: the emulator (a child process, with its write audit on), loaded as
bench_scale.py loads it (N HPAs over the namespaces, each with its Deployment of 3
Ready pods and their PodMetrics); a warm-up controller (bench_scale.warm_up: one
unthrottled sync so every HPA has a status); then ``--replicas`` ``hpactl run``
processes with default flags except ``--shards``, ``--feature-gates=HPAHistoryPersistence=true``
and loopback ports for metrics and probes. Each replica's JSON log is read as it is
written (``hpa.synced`` lines: the time every HPA was last synced, by whom).

Phases, each printed as it ends:

1. start: until every shard is held and each replica holds its share, and every HPA
   was synced once;
2. steady (``--window`` periods): per replica CPU (``/proc/<pid>/stat`` utime+stime
   delta, % of one core), RSS (``VmRSS`` sampled each second, and ``VmHWM``), its
   reconciliations (``..._reconciliations_total`` delta) and schedule lag p99 (the
   bucket of ``hpactl_sync_schedule_lag_seconds`` holding it); the sum of
   reconciliations per period against the HPA count; the longest gap between two
   syncs of one HPA;
3. rescale burst (``--change`` of the workloads' metrics double) for ``--change-periods``,
   then ``--settle-periods`` more (the backlog of writes draining);
4. SIGKILL of one replica: time until every shard is held by a live replica, and
   until every HPA of the dead replica's shards was synced again (and the longest
   time one of them went unsynced: its last sync before the kill to its first after);
5. a new replica joins: time until it holds its share (and until its process had
   synced its caches), and until every HPA of the shards that moved was synced;
6. SIGTERM to all (graceful hand-off), then the audit: ``check_shard_writes`` over every
   mutating request the emulator answered since the warm-up; and the persisted
   history (ConfigMaps ``<name>-history-<shard>``: count, bytes).

``--duration`` bounds the whole run; every child process is killed on any exit.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TextIO

from bench_scale import _recv, pod_metrics, warm_up, workload

from hpactl.core.sharding import shard_of

LEASE_NS = "kube-system"
CLK_TCK = os.sysconf("SC_CLK_TCK")
_HPA = re.compile(r'"hpa":\s*"([^"]+)"')


# -- the emulator (child process) -------------------------------------------------------


def serve(conn: Connection, n: int, per_ns: int, pods: int, lease_name: str, shards: int) -> None:
    """Child process: the loaded emulator with its audit on, answering over a pipe."""
    import asyncio

    from hpactl.emulator import Emulator

    async def run() -> None:
        namespaces = [f"ns{k}" for k in range((n + per_ns - 1) // per_ns)]
        t0 = time.perf_counter()
        emu = Emulator(
            bookmark_interval=1.0,
            namespaces=["default", LEASE_NS, *namespaces],
            audit=1_000_000,
        )
        emu.store.bulk_create(o for i in range(n) for o in workload(i, per_ns, pods))
        emu.metrics.set_pod_metrics(pod_metrics(n, per_ns, pods, set()))
        await emu.start()
        conn.send((emu.url, time.perf_counter() - t0))
        loop = asyncio.get_running_loop()
        assert emu.audit is not None
        while True:
            cmd, arg = await loop.run_in_executor(None, conn.recv)
            if cmd == "cpu":
                conn.send(time.process_time())
            elif cmd == "metrics":  # arg: the workloads whose usage doubles
                emu.metrics.set_pod_metrics(pod_metrics(n, per_ns, pods, set(arg)))
                conn.send("ok")
            elif cmd == "holders":
                out = {}
                for i in range(shards):
                    lease = emu.store.get(
                        "coordination.k8s.io", "leases", LEASE_NS, f"{lease_name}-shard-{i}"
                    )
                    out[i] = str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")
                conn.send(out)
            elif cmd == "history":
                sizes = [
                    (e.obj["metadata"]["name"], len(e.raw))
                    for e in emu.store.iter_entries(("", "configmaps"), LEASE_NS)
                    if e.obj["metadata"]["name"].startswith(f"{lease_name}-history-")
                ]
                conn.send(sorted(sizes))
            elif cmd == "audit":
                conn.send(
                    (emu.audit.records(arg), emu.audit.dropped, emu.audit.as_json(10**18)["last"])
                )
            elif cmd == "audit_last":
                conn.send(emu.audit.as_json(10**18)["last"])
            else:
                await emu.stop()
                conn.send("stopped")
                return

    asyncio.run(run())


class Emu:
    def __init__(self, conn: Connection, proc: multiprocessing.Process) -> None:
        self.conn, self.proc = conn, proc
        self.lock = threading.Lock()

    def call(self, cmd: str, arg: Any = None) -> Any:
        with self.lock:
            self.conn.send((cmd, arg))
            return _recv(self.conn, self.proc, "emulator")


# -- replicas ---------------------------------------------------------------------------


def proc_cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def proc_status_mib(pid: int, key: str) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class Synced:
    """When each HPA was synced (monotonic, as its log line was read), by whom."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = collections.defaultdict(list)

    def add(self, key: str, t: float) -> None:
        with self.lock:
            self.times[key].append(t)

    def first_after(self, keys: list[str], t0: float) -> float | None:
        """When the last of ``keys`` had its first sync after t0 (None: not all yet)."""
        worst = t0
        with self.lock:
            for k in keys:
                ts = self.times.get(k)
                if not ts or ts[-1] <= t0:
                    return None
                worst = max(worst, next(t for t in ts if t > t0))
        return worst

    def gap_across(self, keys: list[str], t: float) -> float:
        """The longest time one of ``keys`` went unsynced across ``t``: from its last
        sync before t to its first after (inf if it has none after)."""
        worst = 0.0
        with self.lock:
            for k in keys:
                ts = self.times.get(k, [])
                before = max((x for x in ts if x <= t), default=t)
                after = min((x for x in ts if x > t), default=float("inf"))
                worst = max(worst, after - before)
        return worst

    def longest_gap(self, keys: list[str], t0: float, t1: float) -> float:
        """The longest time one of ``keys`` went without a sync within [t0, t1]."""
        worst = 0.0
        with self.lock:
            for k in keys:
                ts = [t for t in self.times.get(k, []) if t0 <= t <= t1]
                pts = [t0, *ts, t1]
                worst = max(worst, max(b - a for a, b in itertools.pairwise(pts)))
        return worst


class Replica:
    def __init__(self, name: str, argv: list[str], logdir: Path, synced: Synced) -> None:
        self.name = name
        self.identity = ""
        self.ports: dict[str, int] = {}
        self.started = time.monotonic()
        self.caches_synced_at: float | None = None
        self.log_path = logdir / f"{name}.log"
        self._log: TextIO = open(self.log_path, "w")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hpactl", "run", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        self.synced = synced
        self.syncs = 0
        self.rss_samples: list[float] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            now = time.monotonic()
            if '"hpa.synced"' in line:
                m = _HPA.search(line)
                if m:
                    self.synced.add(m.group(1), now)
                    self.syncs += 1
                continue
            self._log.write(line)
            if '"hpactl.serving"' in line or '"hpactl.sharding"' in line:
                rec = json.loads(line)
                if rec.get("event") == "hpactl.sharding":
                    self.identity = str(rec.get("identity", ""))
                    self.caches_synced_at = now
                else:
                    self.ports = {k[:-5]: int(v) for k, v in rec.items() if k.endswith("_port")}
        self._log.close()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def scrape(self) -> dict[str, float]:
        """The replica's /metrics as {sample name + labels: value}."""
        from prometheus_client.parser import text_string_to_metric_families

        url = f"http://127.0.0.1:{self.ports['metrics']}/metrics"
        with urllib.request.urlopen(url, timeout=10) as r:
            text = r.read().decode()
        out: dict[str, float] = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                out[f"{s.name}{{{labels}}}"] = s.value
        return out

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.alive():
            os.kill(self.proc.pid, sig)


def reconciliations(m: dict[str, float]) -> float:
    return sum(v for k, v in m.items() if k.split("{")[0].endswith("reconciliations_total"))


def lag_p99(before: dict[str, float], after: dict[str, float]) -> str:
    name = "hpactl_sync_schedule_lag_seconds"
    count = after.get(f"{name}_count{{}}", 0.0) - before.get(f"{name}_count{{}}", 0.0)
    total = after.get(f"{name}_sum{{}}", 0.0) - before.get(f"{name}_sum{{}}", 0.0)
    if count <= 0:
        return "no syncs"
    buckets = sorted(
        (float(k.split("le=")[1].rstrip("}")), v - before.get(k, 0.0))
        for k, v in after.items()
        if k.startswith(f"{name}_bucket{{")
    )
    top = "?"
    for le, cum in buckets:
        if cum >= 0.99 * count:
            top = f"<= {le:g} s" if le != float("inf") else "> largest bucket"
            break
    return f"p99 {top} (mean {total / count * 1000:.0f} ms, {count:.0f} syncs)"


# -- the run ----------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace, emu: Emu, url: str, logdir: Path) -> None:
        self.args, self.emu, self.url, self.logdir = args, emu, url, logdir
        self.synced = Synced()
        self.replicas: list[Replica] = []
        self.deadline = time.monotonic() + args.duration
        per_ns = max(1, args.hpas // args.namespaces)
        self.keys = [f"ns{i // per_ns}/app{i}" for i in range(args.hpas)]
        self.keys_by_shard: dict[int, list[str]] = collections.defaultdict(list)
        for k in self.keys:
            self.keys_by_shard[shard_of(k.partition("/")[0], args.shards)].append(k)
        self.period = 15.0
        self.killed: set[str] = set()

    def argv(self) -> list[str]:
        return [
            f"--master={self.url}",
            f"--shards={self.args.shards}",
            "--leader-elect=true",
            f"--leader-elect-resource-name={self.args.lease_name}",
            f"--leader-elect-resource-namespace={LEASE_NS}",
            "--feature-gates=HPAHistoryPersistence=true",
            "--metrics-bind-address=127.0.0.1:0",
            "--health-probe-bind-address=127.0.0.1:0",
            *self.args.run_argv,
        ]

    def spawn(self) -> Replica:
        r = Replica(f"replica-{len(self.replicas) + 1}", self.argv(), self.logdir, self.synced)
        self.replicas.append(r)
        return r

    def live(self) -> list[Replica]:
        return [r for r in self.replicas if r.alive()]

    def wait(self, what: str, cond: Any, poll: float = 0.2) -> float:
        """Poll cond() until true; the time it took. The run's --duration bounds it."""
        t0 = time.monotonic()
        while not cond():
            if time.monotonic() > self.deadline:
                raise SystemExit(f"--duration reached while waiting for: {what}")
            for r in self.replicas:
                if r.name not in self.killed and r.proc.poll() is not None:
                    raise SystemExit(f"{r.name} exited with {r.proc.returncode} (log {r.log_path})")
            time.sleep(poll)
        return time.monotonic() - t0

    def holders(self) -> dict[int, str]:
        h: dict[int, str] = self.emu.call("holders")
        return h

    def balanced(self) -> bool:
        live = {r.identity for r in self.live() if r.identity}
        if len(live) < len(self.live()):
            return False
        h = self.holders()
        if any(v not in live for v in h.values()):
            return False
        counts = collections.Counter(h.values())
        share = self.args.shards // len(live)
        return all(share <= counts.get(i, 0) <= share + 1 for i in live)

    def window(self, label: str, periods: float) -> None:
        """Measure each live replica over ``periods`` sync periods."""
        live = self.live()
        t0 = time.monotonic()
        cpu0 = {r.name: proc_cpu_seconds(r.pid) for r in live}
        m0 = {r.name: r.scrape() for r in live}
        emu_cpu0 = self.emu.call("cpu")
        for r in live:
            r.rss_samples.clear()
        end = t0 + periods * self.period
        while time.monotonic() < end:
            for r in live:
                r.rss_samples.append(proc_status_mib(r.pid, "VmRSS"))
            time.sleep(1.0)
        t1 = time.monotonic()
        wall = t1 - t0
        m1 = {r.name: r.scrape() for r in live}
        emu_cpu = self.emu.call("cpu") - emu_cpu0
        holders = self.holders()
        total = 0.0
        print(f"{label}: {periods:g} periods of {self.period:g} s ({wall:.1f} s wall)")
        for r in live:
            cpu = proc_cpu_seconds(r.pid) - cpu0[r.name]
            rec = reconciliations(m1[r.name]) - reconciliations(m0[r.name])
            total += rec
            held = sorted(s for s, h in holders.items() if h == r.identity)
            rss = r.rss_samples or [float("nan")]
            print(
                f"  {r.name} (pid {r.pid}, shards {held}): CPU {cpu / wall * 100:.0f} % of a core, "
                f"RSS {sum(rss) / len(rss):.0f} MiB (peak {proc_status_mib(r.pid, 'VmHWM'):.0f} MiB), "
                f"{rec:.0f} reconciliations = {rec / wall * self.period:.0f}/period, "
                f"schedule lag {lag_p99(m0[r.name], m1[r.name])}"
            )
        per_period = total / wall * self.period
        gap = self.synced.longest_gap(self.keys, t0, t1)
        ok = (
            "every HPA synced every period"
            if gap <= self.period + 1.0
            else "NOT every HPA every period"
        )
        print(
            f"  total {per_period:.0f} reconciliations per period for {self.args.hpas} HPAs; "
            f"longest one HPA went unsynced in the window: {gap:.1f} s -> {ok}; "
            f"emulator CPU {emu_cpu / wall * 100:.0f} % of a core"
        )

    def run(self) -> None:
        args = self.args
        t0 = time.monotonic()
        for _ in range(args.replicas):
            self.spawn()
        self.wait("every replica's caches synced", lambda: all(r.identity for r in self.replicas))
        caches = [
            f"{r.name} {r.caches_synced_at - r.started:.1f} s"
            for r in self.replicas
            if r.caches_synced_at
        ]
        print(f"replicas started: caches synced after {', '.join(caches)}")
        took = self.wait("shards balanced", self.balanced)
        print(
            f"shards balanced {time.monotonic() - t0:.1f} s after start ({took:.1f} s after caches)"
        )
        self.wait(
            "every HPA synced once", lambda: self.synced.first_after(self.keys, t0) is not None
        )
        print(f"every HPA synced once {time.monotonic() - t0:.1f} s after start")
        self.window("steady", args.window)

        n_change = int(args.hpas * args.change)
        if n_change:
            step = args.hpas / n_change
            self.emu.call("metrics", [int(k * step) for k in range(n_change)])
            self.window(f"rescale burst ({n_change} workloads at 2x CPU)", args.change_periods)
            if args.settle_periods:
                self.window("after the burst", args.settle_periods)

        victim = self.live()[0]
        before = self.holders()
        lost = sorted(s for s, h in before.items() if h == victim.identity)
        lost_keys = [k for s in lost for k in self.keys_by_shard[s]]
        self.killed.add(victim.name)
        t_kill = time.monotonic()
        victim.kill(signal.SIGKILL)
        victim.proc.wait()
        held = self.wait("every shard held after the kill", self.balanced, poll=0.1)
        synced = self.wait(
            "the dead replica's HPAs synced again",
            lambda: self.synced.first_after(lost_keys, t_kill) is not None,
        )
        t_all = self.synced.first_after(lost_keys, t_kill)
        assert t_all is not None
        gap = self.synced.gap_across(lost_keys, t_kill)
        print(
            f"SIGKILL {victim.name} (shards {lost}, {len(lost_keys)} HPAs): every shard held by a "
            f"live replica after {held:.1f} s, every one of its HPAs synced again after "
            f"{t_all - t_kill:.1f} s (waited {synced:.1f} s more); longest an HPA of its "
            f"shards went unsynced: {gap:.1f} s"
        )

        t_join = time.monotonic()
        before = self.holders()
        joiner = self.spawn()
        took = self.wait("the new replica holds its share", self.balanced, poll=0.1)
        after = self.holders()
        moved = sorted(s for s in after if after[s] != before.get(s))
        moved_keys = [k for s in moved for k in self.keys_by_shard[s]]
        t_moved = time.monotonic()
        self.wait(
            "the moved shards' HPAs synced",
            lambda: self.synced.first_after(moved_keys, t_moved - 1e-9) is not None,
        )
        t_all = self.synced.first_after(moved_keys, t_moved - 1e-9)
        assert t_all is not None and joiner.caches_synced_at is not None
        gap = self.synced.longest_gap(moved_keys, t_join - self.period, t_all)
        print(
            f"join {joiner.name}: caches synced after {joiner.caches_synced_at - t_join:.1f} s, holds "
            f"its share ({sorted(s for s, h in after.items() if h == joiner.identity)}) after "
            f"{took:.1f} s from its start ({t_moved - joiner.caches_synced_at:.1f} s after its "
            f"caches); the {len(moved_keys)} HPAs of the moved shards {moved} synced "
            f"{t_all - t_join:.1f} s after its start; longest one of them went unsynced: "
            f"{gap:.1f} s"
        )
        self.window("after the join", args.after_periods)

    def stop_all(self) -> None:
        for r in self.live():
            r.kill(signal.SIGTERM)
        end = time.monotonic() + 30
        for r in self.replicas:
            try:
                r.proc.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                r.kill(signal.SIGKILL)
                r.proc.wait()

    def audit(self, since: int) -> None:
        from hpactl.emulator.audit import check_shard_writes

        records, dropped, last = self.emu.call("audit", since)
        result = check_shard_writes(
            records,
            lease_name=self.args.lease_name,
            lease_namespace=LEASE_NS,
            shard_for=lambda ns: shard_of(ns, self.args.shards),
            dropped=dropped,
        )
        kinds = collections.Counter(
            f"{r['method']} {_kind(r['path'])} {r['status']}" for r in records
        )
        print(
            f"audit ({last - since} mutating requests since the warm-up): {result.summary()} -> "
            f"{'PROVEN: no HPA written by two replicas in overlapping tenures' if result.proven else 'NOT proven'}"
        )
        print(f"  requests: {', '.join(f'{k}={v}' for k, v in sorted(kinds.items()))}")
        for v in result.violations[:10]:
            print(f"  violation: {v}")
        hist = self.emu.call("history")
        total = sum(b for _, b in hist)
        largest = max((b for _, b in hist), default=0)
        print(
            f"history: {len(hist)} ConfigMaps, {total / 1024:.0f} KiB in all (largest "
            f"{largest / 1024:.0f} KiB) for {self.args.hpas} HPAs"
        )


def _kind(path: str) -> str:
    parts = path.strip("/").split("/")
    if "namespaces" in parts:
        i = parts.index("namespaces")
        rest = parts[i + 2 :]
        return "/".join([rest[0], *rest[2:]]) if rest else "namespaces"
    return parts[-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--hpas", type=int, default=10_000)
    p.add_argument("--namespaces", type=int, default=100)
    p.add_argument("--pods", type=int, default=3, help="pods per Deployment")
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--shards", type=int, default=12)
    p.add_argument("--lease-name", default="hpactl")
    p.add_argument("--change", type=float, default=0.10, help="fraction of workloads to scale")
    p.add_argument("--window", type=float, default=4, help="steady window, in sync periods")
    p.add_argument("--change-periods", type=float, default=2)
    p.add_argument("--settle-periods", type=float, default=4, help="window after the burst")
    p.add_argument("--after-periods", type=float, default=2)
    p.add_argument("--duration", type=float, default=1500, help="bound on the whole run (s)")
    p.add_argument("--logs", metavar="DIR", help="keep the replicas' logs here")
    p.add_argument("run_argv", nargs="*", help="more hpactl run flags (after --)")
    args = p.parse_args()
    per_ns = max(1, args.hpas // args.namespaces)
    print(f"machine: {os.cpu_count()} CPUs; {args.replicas} replicas, {args.shards} shards")

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    parent, child = multiprocessing.Pipe()
    proc = multiprocessing.Process(
        target=serve,
        args=(child, args.hpas, per_ns, args.pods, args.lease_name, args.shards),
        daemon=True,
    )
    proc.start()
    logdir = Path(args.logs or tempfile.mkdtemp(prefix="bench-shards-"))
    logdir.mkdir(parents=True, exist_ok=True)
    bench: Bench | None = None
    try:
        url, load_s = _recv(parent, proc, "emulator")
        emu = Emu(parent, proc)
        print(
            f"emulator: child process pid {proc.pid}, {args.hpas} HPAs + Deployments, "
            f"{args.hpas * args.pods} pods in {(args.hpas + per_ns - 1) // per_ns} namespaces, "
            f"audit on; loaded in {load_s:.1f} s"
        )
        t0 = time.perf_counter()
        wp, wc = multiprocessing.Pipe()
        w = multiprocessing.Process(target=warm_up, args=(url, [], wc), daemon=True)
        w.start()
        n_synced, written = _recv(wp, w, "warm-up")
        w.join(60)
        since = emu.call("audit_last")
        print(
            f"warm-up: {n_synced} HPAs synced, {written} statuses written in "
            f"{time.perf_counter() - t0:.1f} s (its writes are left out of the audit)"
        )
        bench = Bench(args, emu, url, logdir)
        try:
            bench.run()
        finally:
            bench.stop_all()
        bench.audit(since)
        print(f"replica logs (without hpa.synced lines): {logdir}")
    finally:
        if bench is not None:
            for r in bench.replicas:
                r.kill(signal.SIGKILL)
        try:
            parent.send(("stop", None))
            if parent.poll(10):
                parent.recv()
        except (OSError, EOFError):
            pass
        proc.join(10)
        if proc.is_alive():
            proc.kill()


if __name__ == "__main__":
    main()
