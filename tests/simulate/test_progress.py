"""`hpactl simulate` on a terminal: the progress line, and output streamed per step."""

from __future__ import annotations

import asyncio
import io
import json
import os
import pty
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hpactl.cli.progress import StepProgress
from hpactl.cli.simulate_cmd import simulate
from hpactl.simulate.output import write_timeline
from hpactl.simulate.scenario import parse_scenario
from tests.simulate.scenarios import cpu_metric, deployment, hpa, pod

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]


def scenario_doc(repeat: int) -> dict[str, Any]:
    """web: 2 warm pods, demand that rises then holds (rescales, then quiet steps)."""
    return {
        "name": "progress",
        "objects": [
            deployment("web", 2),
            pod("web-warm-0"),
            pod("web-warm-1"),
            hpa("web", [cpu_metric(50)], max_replicas=6),
        ],
        "workload": [
            {
                "target": {"kind": "Deployment", "name": "web"},
                "demand": {"cpu": [{"at": "0s", "value": "500m"}, {"at": "2m", "value": "2"}]},
            }
        ],
        "steps": [{}, {"repeat": repeat}],
    }


# ------------------------------------------------------------------ the line itself


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_progress_line_shows_virtual_time_steps_and_pace() -> None:
    out = io.StringIO()
    clock = FakeClock()
    p = StepProgress(
        out, total_steps=121, total_seconds=1800, prog="hpactl simulate", monotonic=clock
    )
    clock.t += 2.0
    p.update(40, 585.0)
    first = out.getvalue()
    assert first == (
        "\r\x1b[Khpactl simulate: 00:09:45 / 00:30:00 virtual  step 40/121 (33%)  20 steps/s"
        "  4s left"
    )
    # Redrawn at most every 0.1 s of real time...
    clock.t += 0.05
    p.update(41, 600.0)
    assert out.getvalue() == first
    # ...but at once after it was erased for other output.
    p.clear()
    assert out.getvalue() == first + "\r\x1b[K"
    p.update(42, 615.0)
    assert out.getvalue().endswith("step 42/121 (34%)  20 steps/s  4s left")
    clock.t += 3.95
    p.update(121, 1800.0)
    p.finish()
    assert out.getvalue().endswith(
        "\r\x1b[Khpactl simulate: 121 steps, 30m0s of virtual time in 6.0s (20 steps/s)\n"
    )


def test_disabled_progress_writes_nothing() -> None:
    out = io.StringIO()
    p = StepProgress(out, total_steps=3, total_seconds=30, prog="x", enabled=False)
    p.update(1, 15)
    p.clear()
    p.finish()
    assert out.getvalue() == ""


# ------------------------------------------------------------------ streaming, in process


class Recorder(io.StringIO):
    """Stdout that notes how many steps had completed when each write came."""

    def __init__(self, progress: CountingProgress) -> None:
        super().__init__()
        self.progress = progress
        self.writes: list[tuple[int, str]] = []

    def write(self, s: str) -> int:
        self.writes.append((self.progress.done, s))
        return super().write(s)


class CountingProgress(StepProgress):
    def __init__(self) -> None:
        super().__init__(io.StringIO(), total_steps=0, total_seconds=0, prog="t", enabled=False)
        self.done = 0

    def update(self, steps_done: int, virtual_seconds: float) -> None:
        self.done = steps_done


@pytest.mark.parametrize("output", ["timeline", "jsonl"])
def test_each_step_is_written_before_the_next_runs(output: str) -> None:
    scenario = parse_scenario(scenario_doc(12))
    progress = CountingProgress()
    out = Recorder(progress)
    results = asyncio.run(simulate(scenario, output=output, out=out, progress=progress))
    assert len(results) == 13
    if output == "jsonl":
        # Line n is written while step n is the last one completed (n steps done before).
        steps = [(done, json.loads(text)["step"]) for done, text in out.writes]
        assert steps == [(n, n) for n in range(13)]
        return
    # The header before any step; each step's line while that step is the newest
    # (a step like the one before is folded: the last one, if so, comes at the end).
    assert out.writes[0][0] == 0 and out.writes[0][1].startswith("Scenario progress")
    written = []
    for done, text in out.writes[1:]:
        for line in text.splitlines():
            if line[:2] == "00":  # a step's line: "00:01:15     5  default/web ..."
                n = int(line.split()[1])
                assert done == n or (n == 12 and done == 13), line
                written.append(n)
    assert written[0] == 0 and written[-1] == 12 and len(written) < 13
    # Streaming changes nothing: the text is what the whole-run writer gives.
    whole = io.StringIO()
    write_timeline(results, whole, start=scenario.start, header="Scenario progress")
    assert out.getvalue() == whole.getvalue()
    assert "more step(s) unchanged" in whole.getvalue()  # the quiet end was folded


# ------------------------------------------------------------------ real processes


def spawn(args: list[str], *, stderr_tty: bool, cwd: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`python -m hpactl ...` with stdout a pipe and stderr a terminal or a pipe; the
    fd to read stderr from."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm"}
    if stderr_tty:
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "hpactl", *args],
            stdout=subprocess.PIPE,
            stderr=slave,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        os.close(slave)
        return proc, master
    proc = subprocess.Popen(
        [sys.executable, "-m", "hpactl", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    assert proc.stderr is not None
    return proc, proc.stderr.fileno()


def read_all(*fds: int, timeout: float = 90) -> list[bytes]:
    """Everything written to these fds until each is closed (read together, so that
    neither writer blocks on a full pipe)."""
    data = {fd: b"" for fd in fds}
    open_fds = set(fds)
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], timeout)
        assert ready, "no output and no exit within the timeout"
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the terminal's other side closed
                chunk = b""
            if chunk:
                data[fd] += chunk
            else:
                open_fds.discard(fd)
    return [data[fd] for fd in fds]


@pytest.fixture
def scenario_path(tmp_path: Path) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(scenario_doc(40)))
    return p


@pytest.mark.parametrize("output", ["timeline", "jsonl"])
def test_progress_on_a_terminal_never_on_stdout(scenario_path: Path, output: str) -> None:
    proc, fd = spawn(
        ["simulate", str(scenario_path), "-o", output], stderr_tty=True, cwd=scenario_path.parent
    )
    assert proc.stdout is not None
    try:
        raw_out, raw_err = read_all(proc.stdout.fileno(), fd)
        stdout, err = raw_out.decode(), raw_err.decode()
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(fd)
        if proc.poll() is None:
            proc.kill()
    assert "\r\x1b[Khpactl simulate: " in err
    assert " / 00:10:00 virtual  step " in err and "steps/s" in err
    assert "hpactl simulate: 41 steps, 10m0s of virtual time in " in err
    assert "\x1b" not in stdout and "\r" not in stdout and "steps/s" not in stdout
    if output == "jsonl":
        assert [json.loads(line)["step"] for line in stdout.splitlines()] == list(range(41))
    else:
        assert stdout.startswith("Scenario progress\n") and "Summary: 41 steps" in stdout


def test_no_progress_when_stderr_is_redirected(scenario_path: Path) -> None:
    proc, _ = spawn(["simulate", str(scenario_path)], stderr_tty=False, cwd=scenario_path.parent)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert err == b""
    assert b"Summary: 41 steps" in out


def test_no_progress_flag(scenario_path: Path) -> None:
    proc, fd = spawn(
        ["simulate", str(scenario_path), "--no-progress"], stderr_tty=True, cwd=scenario_path.parent
    )
    assert proc.stdout is not None
    try:
        _, err = read_all(proc.stdout.fileno(), fd)
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(fd)
    assert err == b""


def render_terminal(raw: str) -> list[str]:
    """What a terminal shows for text with \\r, \\n and erase-line (ESC [K)."""
    lines: list[str] = []
    cur: list[str] = []
    col = 0
    i = 0
    while i < len(raw):
        if raw.startswith("\x1b[K", i):
            del cur[col:]
            i += 3
            continue
        ch = raw[i]
        i += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append("".join(cur))
            cur, col = [], 0
        else:
            if col < len(cur):
                cur[col] = ch
            else:
                cur.append(ch)
            col += 1
    if cur:
        lines.append("".join(cur))
    return lines


def test_timeline_and_progress_on_one_terminal(scenario_path: Path) -> None:
    """The progress line is erased before each timeline line: none is left mixed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hpactl", "simulate", str(scenario_path)],
        stdout=slave,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm"},
        start_new_session=True,
    )
    os.close(slave)
    try:
        (raw_bytes,) = read_all(master)
        raw = raw_bytes.decode()
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(master)
    assert "steps/s" in raw  # it was drawn
    screen = render_terminal(raw)
    assert screen[0] == "Scenario progress"
    assert not [line for line in screen if "steps/s" in line and "virtual  step" in line]
    assert any(line.startswith("00:00:00      0  default/web") for line in screen)
    assert screen[-1].startswith("hpactl simulate: 41 steps, 10m0s of virtual time in ")


@pytest.fixture
def long_scenario(tmp_path: Path) -> Path:
    # 100,000 steps (over 17 virtual days): far longer than the test waits.
    p = tmp_path / "long.yaml"
    p.write_text(yaml.safe_dump(scenario_doc(100_000)))
    return p


def first_line_while_running(proc: subprocess.Popen[bytes], match: bytes) -> bytes:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, "no output within 60 s: the output is not streamed"
        chunk = os.read(fd, 65536)
        assert chunk, "the run ended before its first step was printed"
        buf += chunk
        for line in buf.splitlines():
            if line.startswith(match):
                return line


@pytest.mark.parametrize(("output", "match"), [("jsonl", b"{"), ("timeline", b"00:00:00")])
def test_first_step_arrives_while_the_run_goes_on(
    long_scenario: Path, output: str, match: bytes
) -> None:
    proc, _ = spawn(
        ["simulate", str(long_scenario), "-o", output], stderr_tty=False, cwd=long_scenario.parent
    )
    try:
        line = first_line_while_running(proc, match)
        assert proc.poll() is None  # still running: the line did not wait for the end
        if output == "jsonl":
            assert json.loads(line)["step"] == 0
        else:
            assert line.split()[1] == b"0"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_demo_progress_only_on_a_terminal_and_its_plot_outside_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hpactl demo` draws its progress with \\r only into a terminal, and by default
    writes its plot to the temporary directory, leaving the current one (a clone) clean."""
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    cwd = tmp_path / "clone"
    cwd.mkdir()
    monkeypatch.setenv("TMPDIR", str(env_tmp))  # inherited by spawn's child
    for tty in (True, False):
        proc, fd = spawn(["demo", "--until", "2m"], stderr_tty=tty, cwd=cwd)
        assert proc.stdout is not None
        try:
            raw_out, raw_err = read_all(proc.stdout.fileno(), fd)
            assert proc.wait(timeout=60) == 0
        finally:
            if tty:
                os.close(fd)
            if proc.poll() is None:
                proc.kill()
        assert (b"\r[" in raw_err) is tty, raw_err[:200]
        assert f"Plot: {env_tmp / 'hpactl-demo.html'}".encode() in raw_out
    assert list(cwd.iterdir()) == []
    assert (env_tmp / "hpactl-demo.html").read_text().startswith("<!doctype html>")
