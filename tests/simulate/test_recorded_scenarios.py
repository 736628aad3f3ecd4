"""Recorded series in scenarios: a workload's `demand` and the values of external and
custom metrics read from files beside the scenario drive the run; bad files stop
`hpactl simulate` with one line naming the scenario key and the file/line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml

from hpactl.cli import main
from hpactl.simulate.runner import Simulation, StepResult
from hpactl.simulate.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from tests.simulate.scenarios import cpu_metric, deployment, external_metric, hpa, pod

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def save(directory: Path, doc: dict[str, Any], name: str = "s.yaml") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    p = directory / name
    p.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return p


async def run(scenario: Scenario) -> list[StepResult]:
    async with Simulation(scenario) as sim:
        return await sim.run()


def replicas(results: list[StepResult], target: str = "Deployment/default/web") -> list[int]:
    return [r.targets[target]["replicas"] for r in results]


# A load that steps up from 0.4 to 2 cores at 2m and back at 10m, one sample a minute
# from 1m30s (times in the file are unix seconds: offsets from the first sample).
SAMPLES = [(0, 0.4), (90, 0.4), (120, 2.0), (600, 2.0), (660, 0.3)]


def cpu_scenario(demand: Any) -> dict[str, Any]:
    return {
        "objects": [
            deployment("web", 1),
            pod("web-warm", started="2025-12-31T00:00:00Z"),
            hpa("web", [cpu_metric(50)], max_replicas=10),
        ],
        "workload": [{"target": {"kind": "Deployment", "name": "web"}, "demand": {"cpu": demand}}],
        "steps": [{}, {"repeat": 49}],
    }


async def test_recorded_demand_drives_the_run_exactly_as_typed_in_points(
    tmp_path: Path,
) -> None:
    csv = "time,cpu\n" + "".join(f"{1700000000 + t},{v}\n" for t, v in SAMPLES)
    (tmp_path / "load.csv").write_text(csv, encoding="utf-8")
    recorded = load_scenario(save(tmp_path, cpu_scenario({"file": "load.csv"})))
    typed = parse_scenario(
        cpu_scenario([{"at": f"{t}s", "value": str(v)} for t, v in SAMPLES]), source="typed"
    )
    assert recorded.workload[0].demand == typed.workload[0].demand
    a, b = await run(recorded), await run(typed)
    assert [r.to_json() for r in a] == [r.to_json() for r in b]
    # And the load really moved the HPA: at 50% of 500m a pod takes 250m, so
    # 0.4 cores need 2 pods and 2 cores 8.
    series = replicas(a)
    assert series[0] == 2
    assert max(series) == 8


def test_prometheus_and_csv_of_the_same_samples_give_the_same_demand(tmp_path: Path) -> None:
    values = [[1700000000 + t, str(v)] for t, v in SAMPLES]
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [{"values": values}]}}
    (tmp_path / "load.json").write_text(json.dumps(doc), encoding="utf-8")
    (tmp_path / "load.csv").write_text(
        "t,x,cpu\n" + "".join(f"{t},0,{v}\n" for t, v in SAMPLES), encoding="utf-8"
    )
    from_json = load_scenario(save(tmp_path, cpu_scenario({"file": "load.json", "scale": 2})))
    from_csv = load_scenario(
        save(tmp_path, cpu_scenario({"file": "load.csv", "column": "cpu", "scale": 2}), "c.yaml")
    )
    assert from_json.workload[0].demand == from_csv.workload[0].demand
    assert [p.milli for p in from_json.workload[0].demand["cpu"]] == [
        round(v * 2000) for _, v in SAMPLES
    ]


def queue_scenario(value: Any, *, step_metrics: Any = None) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{}, {"repeat": 7}]
    if step_metrics is not None:
        steps = [{}, {}, {"metrics": step_metrics}, {"repeat": 5}]
    return {
        "objects": [
            deployment("worker", 1),
            hpa("worker", [external_metric("queue", "10")], max_replicas=10),
        ],
        "workload": [{"target": {"kind": "Deployment", "name": "worker"}}],
        "metrics": {"external": [{"namespace": "default", "metricName": "queue", "value": value}]},
        "steps": steps,
    }


def write_queue_json(directory: Path) -> None:
    # 10 messages at 0s, 40 at 30s (25 at 15s in between), 40 to the end.
    values = [[1700000000, "10"], [1700000030, "40"], [1700000600, "40"]]
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [{"values": values}]}}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "queue.json").write_text(json.dumps(doc), encoding="utf-8")


async def test_external_metric_follows_a_recorded_series(tmp_path: Path) -> None:
    write_queue_json(tmp_path)
    results = await run(load_scenario(save(tmp_path, queue_scenario({"file": "queue.json"}))))
    # AverageValue 10 per replica: ceil(value / 10). At 15s the value is interpolated
    # (25: 3 replicas; the sample before would give 1, the one after 4).
    assert replicas(results, "Deployment/default/worker") == [1, 3, 4, 4, 4, 4, 4, 4]
    current = [
        r.hpas["default/worker"]["currentMetrics"][0]["external"]["current"]["averageValue"]
        for r in results[:3]
    ]
    assert current == ["10", "25", "13334m"]  # 40 over 3 replicas, rounded up


async def test_a_recorded_value_set_at_a_later_step_is_anchored_at_start(
    tmp_path: Path,
) -> None:
    write_queue_json(tmp_path)
    doc = queue_scenario(
        "10",
        step_metrics={
            "external": [
                {"namespace": "default", "metricName": "queue", "value": {"file": "queue.json"}}
            ]
        },
    )
    results = await run(load_scenario(save(tmp_path, doc)))
    # Typed-in 10 for steps 0 and 1; from step 2 (30s) the series at 30s, 40.
    assert replicas(results, "Deployment/default/worker") == [1, 1, 4, 4, 4, 4, 4, 4]


async def test_custom_object_metric_follows_a_recorded_series(tmp_path: Path) -> None:
    (tmp_path / "rps.csv").write_text("time,rps\n0,100\n15,300\n", encoding="utf-8")
    metric = {
        "type": "Object",
        "object": {
            "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "front"},
            "metric": {"name": "requests_per_second"},
            "target": {"type": "AverageValue", "averageValue": "100"},
        },
    }
    doc = {
        "objects": [deployment("web", 1), hpa("web", [metric], max_replicas=10)],
        "workload": [{"target": {"kind": "Deployment", "name": "web"}}],
        "metrics": {
            "custom": [
                {
                    "describedObject": {"kind": "Service", "namespace": "default", "name": "front"},
                    "metric": {"name": "requests_per_second"},
                    "value": {"file": "rps.csv"},
                }
            ]
        },
        "steps": [{}, {"repeat": 3}],
    }
    results = await run(load_scenario(save(tmp_path, doc)))
    values = [
        r.hpas["default/web"]["currentMetrics"][0]["object"]["current"]["averageValue"]
        for r in results
    ]
    # 100 at 0s, 300 from 15s on, divided by the replicas the HPA saw.
    assert values == ["100", "300", "100", "100"]
    assert replicas(results) == [1, 3, 3, 3]


def test_a_relative_file_is_found_beside_the_scenario_not_in_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = tmp_path / "scenarios"
    write_queue_json(sub)
    path = save(sub, queue_scenario({"file": "queue.json"}))
    monkeypatch.chdir(tmp_path)
    sc = load_scenario(Path("scenarios") / path.name)
    assert sc.metrics is not None and sc.metrics.external is not None
    assert sc.metrics.external[0]["value"].values == (10.0, 40.0, 40.0)


@pytest.mark.parametrize(
    ("files", "demand", "external", "message"),
    [
        (
            {},
            {"file": "gone.csv"},
            None,
            "workload[0].demand.cpu.file: gone.csv: no such file ({dir}/gone.csv)",
        ),
        (
            {"load.csv": "time,cpu\n0,1\n15,lots\n"},
            {"file": "load.csv"},
            None,
            'workload[0].demand.cpu: load.csv line 3: value in column cpu "lots" is not a number',
        ),
        (
            {"load.csv": "time,cpu\n0,1\n15,-1\n"},
            {"file": "load.csv"},
            None,
            "workload[0].demand.cpu: load.csv line 3: value -1 is negative (a demand cannot be)",
        ),
        (
            {"load.csv": "time,cpu\n0,1\n"},
            {"file": "load.csv", "column": "mem"},
            None,
            'workload[0].demand.cpu.column: load.csv: no column "mem" in the header '
            "(line 1: time, cpu)",
        ),
        (
            {"q.json": '{"data": {"result": []}}'},
            None,
            {"file": "q.json"},
            "metrics.external[0].value: q.json: data.result is empty (the query returned no "
            "series)",
        ),
        (
            {"q.json": "{}"},
            None,
            {"file": "q.json", "sries": 1},
            "metrics.external[0].value.sries: unknown key (expected one of: file, column, "
            "series, scale)",
        ),
    ],
)
def test_bad_recordings_exit_2_with_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    demand: Any,
    external: Any,
    message: str,
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    doc = cpu_scenario(demand if demand is not None else [{"at": "0s", "value": "1"}])
    if external is not None:
        doc["metrics"] = {
            "external": [{"namespace": "default", "metricName": "q", "value": external}]
        }
    path = save(tmp_path, doc)
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"hpactl simulate: error: {message.format(dir=tmp_path)}\n"


def test_the_error_names_the_step_for_step_metrics(tmp_path: Path) -> None:
    doc = queue_scenario("10", step_metrics={"custom": [{"value": {"file": "x.csv"}}]})
    with pytest.raises(ScenarioError) as info:
        load_scenario(save(tmp_path, doc))
    assert info.value.where == "steps[2].metrics.custom[0].value.file"
