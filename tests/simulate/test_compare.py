"""`hpactl simulate A.yaml --compare B.yaml`: the comparison's numbers, its jsonl
form, the combined plot and the errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml

from hpactl.cli import main
from hpactl.simulate.compare import demand_differences
from hpactl.simulate.scenario import parse_scenario
from tests.simulate.scenarios import deployment, external_metric, hpa

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


STEPS = 240  # one hour of 15 s syncs


def variant(tmp_path: Path, name: str, *, start: int, size: int) -> Path:
    """A worker Deployment of `start` replicas, an HPA fixed at `size` (min = max)
    on a queue whose length comes from the shared recording: 30 messages, against
    an AverageValue target of 10 per replica."""
    (tmp_path / "queue.csv").write_text("time,queue\n0,30\n3600,30\n", encoding="utf-8")
    doc = {
        "name": name,
        "objects": [
            deployment("worker", start),
            hpa("worker", [external_metric("queue", "10")], min_replicas=size, max_replicas=size),
        ],
        "workload": [{"target": {"kind": "Deployment", "name": "worker"}}],
        "metrics": {
            "external": [
                {"namespace": "default", "metricName": "queue", "value": {"file": "queue.csv"}}
            ]
        },
        "steps": [{}, {"repeat": STEPS - 1}],
    }
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return p


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    # A: 2 replicas all along (30/2 = 15 per replica: above the target of 10 the whole
    # hour). B: starts at 1, scaled to 5 at the first sync (6 per replica: below).
    return variant(tmp_path, "two", start=2, size=2), variant(tmp_path, "five", start=1, size=5)


def test_compare_prints_the_derivable_numbers(
    pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = pair
    assert main(["simulate", str(a), "--compare", str(b)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "Comparing two scenarios on the same load"
    assert lines[1] == f"  A: {a} (two), 240 steps covering 1h0m0s of virtual time"
    assert lines[2] == f"  B: {b} (five), 240 steps covering 1h0m0s of virtual time"
    assert "note:" not in out  # the same demand (none) on both sides

    def row(name: str) -> list[str]:
        line = next(x for x in lines if x.strip().startswith(name))
        return line[len(f"  {name}") :].split()

    # Each step holds 15 s: 240 steps x 2 (5) replicas = 2 (5) pod-hours.
    assert row("pod-hours") == ["2.00", "5.00", "(+150%)"]
    assert row("max replicas") == ["2", "5"]
    assert row("scale events (up/down)") == ["0", "(0/0)", "1", "(1/0)"]
    assert row("above target: external:queue") == ["1h0m0s", "0s"]
    table = lines[lines.index("Replicas of Deployment/default/worker at each change") + 1 :]
    assert table == ["  time          A      B", "  00:00:00      2      5"]


def test_compare_jsonl(pair: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = pair
    assert main(["simulate", str(a), "--compare", str(b), "--output", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == STEPS + 1
    assert rows[0] == {
        "time": "2026-01-01T00:00:00Z",
        "replicas": {"Deployment/default/worker": {"a": 2, "b": 5}},
    }
    assert rows[STEPS - 1]["time"] == "2026-01-01T00:59:45Z"
    summary = rows[-1]["summary"]
    assert summary["a"] == {
        "file": str(a),
        "hpas": {
            "default/worker": {
                "target": "Deployment/default/worker",
                "podHours": 2.0,
                "maxReplicas": 2,
                "scaleUps": 0,
                "scaleDowns": 0,
                "aboveTargetSeconds": {"external:queue": 3600.0},
            }
        },
    }
    assert summary["b"]["hpas"]["default/worker"]["podHours"] == 5.0
    assert summary["b"]["hpas"]["default/worker"]["scaleUps"] == 1
    assert summary["b"]["hpas"]["default/worker"]["aboveTargetSeconds"] == {"external:queue": 0.0}


@pytest.mark.parametrize("suffix", [".svg", ".html"])
def test_compare_plot(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    a, b = pair
    plot = tmp_path / f"cmp{suffix}"
    assert main(["simulate", str(a), "--compare", str(b), "--plot", str(plot)]) == 0
    assert capsys.readouterr().err == f"plot written to {plot}\n"
    text = plot.read_text(encoding="utf-8")
    assert "Deployment/default/worker: replicas" in text
    assert "A: two" in text and "B: five" in text
    assert "default/worker: external:queue" in text
    if suffix == ".html":
        assert "above target: external:queue" in text  # the comparison below the plot
    else:
        assert text.startswith("<svg")


def test_compare_png_is_refused_before_running(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = pair
    assert main(["simulate", str(a), "--compare", str(b), "--plot", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hpactl simulate: error: --plot ")
    assert err.count("\n") == 1


def test_an_error_in_either_file_names_it(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = pair
    bad = tmp_path / "bad.yaml"
    doc = yaml.safe_load(a.read_text(encoding="utf-8"))
    doc["metrics"]["external"][0]["value"]["file"] = "nope.csv"
    bad.write_text(yaml.safe_dump(doc), encoding="utf-8")
    assert main(["simulate", str(a), "--compare", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"hpactl simulate: error: {bad}: metrics.external[0].value.file: "
        f"nope.csv: no such file ({tmp_path / 'nope.csv'})\n"
    )
    assert main(["simulate", str(tmp_path / "missing.yaml"), "--compare", str(a)]) == 2
    assert capsys.readouterr().err.startswith(
        f"hpactl simulate: error: {tmp_path / 'missing.yaml'}: "
    )


def test_demand_differences_are_named() -> None:
    def doc(value: str) -> dict[str, Any]:
        return {
            "objects": [deployment("web", 1)],
            "workload": [
                {
                    "target": {"kind": "Deployment", "name": "web"},
                    "demand": {"cpu": [{"at": "0s", "value": value}]},
                }
            ],
            "steps": [],
        }

    same = demand_differences(parse_scenario(doc("1")), parse_scenario(doc("1")))
    assert same == []
    other = demand_differences(parse_scenario(doc("1")), parse_scenario(doc("2")))
    assert other == ["Deployment/default/web cpu"]
