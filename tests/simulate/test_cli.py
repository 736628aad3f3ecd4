"""`hpactl simulate` and `hpactl demo` from the command line."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml

from hpactl.cli import main
from hpactl.simulate.scenario import loads_scenario
from tests.simulate.scenarios import cpu_metric, deployment, hpa

pytestmark = pytest.mark.timeout(90)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    # The commands configure logging for the process; leave it as it was.
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def scenario_file(tmp_path: Path, doc: dict[str, Any], name: str = "s.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def small_scenario() -> dict[str, Any]:
    return {
        "name": "small",
        "description": "one deployment, cpu demand doubles",
        "objects": [deployment("web", 1), hpa("web", [cpu_metric(50)], max_replicas=4)],
        "workload": [
            {
                "target": {"kind": "Deployment", "name": "web"},
                "demand": {"cpu": [{"at": "0s", "value": "400m"}]},
            }
        ],
        "steps": [{}, {"repeat": 3}],
    }


def test_jsonl_is_exactly_the_documented_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = scenario_file(tmp_path, small_scenario())
    assert main(["simulate", str(f), "--output", "jsonl"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 4
    rows = [json.loads(line) for line in lines]
    for i, row in enumerate(rows):
        # The contract's fields first, as they were; then the optional `decisions`.
        assert list(row) == ["step", "time", "targets", "hpas", "events", "decisions"]
        assert row["decisions"].keys() == {"default/web"}
        assert row["step"] == i
        assert row["time"] == f"2026-01-01T00:00:{15 * i:02d}Z"
        assert row["targets"].keys() == {"Deployment/default/web"}
        assert list(row["targets"]["Deployment/default/web"]) == ["replicas"]
        assert row["hpas"].keys() == {"default/web"}
        status = row["hpas"]["default/web"]
        assert {"currentReplicas", "desiredReplicas", "conditions"} <= status.keys()
        assert set(status) <= {
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
            "currentMetrics",
            "conditions",
        }
        for ev in row["events"]:
            assert list(ev) == ["object", "type", "reason", "message"]
            assert ev["object"] == "HorizontalPodAutoscaler/default/web"
    # Pods start at 0s and are Ready at once, but their first CPU samples are
    # inside the readiness window: the first syncs cannot use them.
    scaled = next(r for r in rows if r["targets"]["Deployment/default/web"]["replicas"] == 2)
    status = scaled["hpas"]["default/web"]
    assert status["lastScaleTime"] == scaled["time"]
    assert status["currentMetrics"][0]["resource"]["current"]["averageUtilization"] == 80
    assert scaled["events"] == [
        {
            "object": "HorizontalPodAutoscaler/default/web",
            "type": "Normal",
            "reason": "SuccessfulRescale",
            "message": "New size: 2; reason: cpu resource utilization (percentage of request) "
            "above target",
        }
    ]


def test_timeline_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = scenario_file(tmp_path, small_scenario())
    assert main(["simulate", str(f)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Scenario small: one deployment, cpu demand doubles\n")
    assert "replicas 1→2" in out
    assert "Normal SuccessfulRescale (default/web): New size: 2;" in out
    assert "Summary: 4 steps over 45s of virtual time" in out
    assert "default/web: peak 2 replicas" in out
    assert "1 scale event (1 up, 0 down)" in out


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"steps": [{}, {}, {}, {"after": "5x"}]}, 'steps[3].after: invalid duration "5x"'),
        ({"steps": [], "nope": 1}, "nope: unknown key"),
        (
            {
                "objects": [deployment("web", 1)],
                "steps": [{}, {"apply": [hpa("web", max_replicas=0)]}],
            },
            'steps[1].apply[0]: HorizontalPodAutoscaler.autoscaling "web" is invalid: ',
        ),
    ],
)
def test_errors_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any], message: str
) -> None:
    f = scenario_file(tmp_path, doc)
    assert main(["simulate", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hpactl simulate: error: {message}")
    assert err.count("\n") == 1


def test_plot_svg_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = scenario_file(tmp_path, small_scenario())
    svg = tmp_path / "p.svg"
    html = tmp_path / "p.html"
    assert main(["simulate", str(f), "--plot", str(svg)]) == 0
    capsys.readouterr()
    assert main(["simulate", str(f), "-o", "jsonl", "--plot", str(html)]) == 0
    text = svg.read_text()
    assert text.startswith("<svg ") and text.rstrip().endswith("</svg>")
    assert "default/web: replicas" in text and "default/web: cpu (% of request)" in text
    assert text.count("<polyline") >= 4  # replicas, desired, current, target (+ bounds)
    page = html.read_text()
    assert page.startswith("<!doctype html>") and "<svg " in page
    assert "Summary: 4 steps" in page
    # jsonl stays pure on stdout even with a plot.
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(json.loads(line)["step"] >= 0 for line in lines)


def test_plot_png_needs_matplotlib(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = scenario_file(tmp_path, small_scenario())
    png = tmp_path / "p.png"
    rc = main(["simulate", str(f), "--plot", str(png)])
    if importlib.util.find_spec("matplotlib") is None:
        assert rc == 2
        err = capsys.readouterr().err
        assert "writing PNG needs matplotlib, which is not installed" in err
        assert not png.exists()
    else:
        assert rc == 0
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_unknown_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = scenario_file(tmp_path, small_scenario())
    assert main(["simulate", str(f), "--plot", str(tmp_path / "p.pdf")]) == 2
    assert "unsupported file type '.pdf'" in capsys.readouterr().err


def test_demo_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plot = tmp_path / "demo.html"
    assert main(["demo", "--until", "3m", "--plot", str(plot)]) == 0
    cap = capsys.readouterr()
    assert "Scenario demo:" in cap.out
    assert "Summary: 13 steps over 3m0s of virtual time" in cap.out
    assert "default/web: peak " in cap.out and "scale event" in cap.out
    assert "above target for" in cap.out
    assert f"Plot: {plot}" in cap.out
    # stderr is not a terminal here: no progress line drawn with \r into it.
    assert "\r" not in cap.err and "step 13/13" not in cap.err
    assert plot.read_text().startswith("<!doctype html>")


def test_demo_builtin_scenario_is_printable_and_valid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--print-scenario"]) == 0
    sc = loads_scenario(capsys.readouterr().out)
    assert sc.name == "demo"
    # 30 virtual minutes at the 15 s sync period.
    assert sc.timeline()[-1][2] == 30 * 60


def test_demo_other_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plot = tmp_path / "q.svg"
    args = ["demo", "--scenario", str(ROOT / "examples/external-queue.yaml")]
    assert main([*args, "--until", "1m", "--plot", str(plot), "--no-progress"]) == 0
    cap = capsys.readouterr()
    assert "Scenario external-queue:" in cap.out
    assert "default/worker" in cap.out
    assert cap.err == ""
    assert plot.exists()


def test_demo_bad_until(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--until", "soon"]) == 2
    assert capsys.readouterr().err == 'hpactl demo: error: --until: invalid duration "soon"\n'


def test_demo_serve_then_ctrl_c(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # A child inherits an ignored SIGINT (pytest started with `&` in a script, nohup,
    # some CI runners) and then, as POSIX wants, ignores Ctrl-C for good. A handler is
    # reset to the default at exec: the demo gets Ctrl-C as from a terminal.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = _spawn_demo(tmp_path, env)
    finally:
        signal.signal(signal.SIGINT, inherited)
    try:
        kubeconfig = None
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip().startswith("kubeconfig:"):
                kubeconfig = line.split(":", 1)[1].strip()
            if line.startswith("Press Ctrl-C"):
                break
        assert kubeconfig is not None
        server = yaml.safe_load(Path(kubeconfig).read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith("http://127.0.0.1:")
        url = f"{server}/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web"
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.load(resp)
        assert body["status"]["currentReplicas"] >= 2
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert not Path(kubeconfig).exists()  # cleaned up on exit
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _spawn_demo(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hpactl",
            "demo",
            "--serve",
            "--until",
            "30s",
            "--no-progress",
            "--plot",
            str(tmp_path / "d.svg"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )


def test_scenario_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(small_scenario())))
    assert main(["simulate", "-", "-o", "jsonl"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4


def test_plot_directory_must_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = scenario_file(tmp_path, small_scenario())
    assert main(["simulate", str(f), "--plot", str(tmp_path / "no" / "p.svg")]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""  # stopped before running
    assert "does not exist" in cap.err
