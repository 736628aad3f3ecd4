"""Recorded series (`{file, column?, series?, scale?}`): the CSV and Prometheus JSON
readers, and one clear error for every kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hpactl.emulator.workload import DemandPoint, demand_at
from hpactl.simulate.recording import Recording, RecordingError, load_recording


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return name


def prom(*series: list[list[Any]], labels: list[dict[str, str]] | None = None) -> str:
    result = [
        {"metric": (labels or [{}] * len(series))[i], "values": values}
        for i, values in enumerate(series)
    ]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


def error(tmp_path: Path, spec: Any, **kw: Any) -> RecordingError:
    with pytest.raises(RecordingError) as info:
        load_recording(spec, tmp_path, **kw)
    return info.value


# ------------------------------------------------------------------------ CSV


def test_csv_default_column_times_from_the_first_sample(tmp_path: Path) -> None:
    f = write(tmp_path, "t.csv", "time,cpu,mem\n100,1,9\n160,2,9\n280,0.5,9\n")
    rec = load_recording({"file": f}, tmp_path)
    assert rec.times == (0.0, 60.0, 180.0)
    assert rec.values == (1.0, 2.0, 0.5)
    assert rec.file == "t.csv"


def test_csv_column_scale_and_quantities(tmp_path: Path) -> None:
    f = write(tmp_path, "t.csv", "time,cpu,mem\n0,1,250m\n60,2,1.5k\n")
    rec = load_recording({"file": f, "column": "mem", "scale": 2}, tmp_path)
    assert rec.values == (0.5, 3000.0)


def test_csv_rfc3339_zone_offsets_are_honoured(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "t.csv",
        "ts,v\n2026-03-10T10:00:00Z,1\n2026-03-10T10:00:15Z,2\n2026-03-10T12:00:00+02:00,3\n",
    )
    # 12:00+02:00 is 10:00 UTC: before the sample above it.
    assert error(tmp_path, {"file": f}).message.startswith(
        "t.csv line 4: time 1773136800 goes back before the time of the sample before (line 3"
    )


def test_csv_rfc3339_offsets(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "t.csv",
        "ts,v\n2026-03-10T10:00:00Z,1\n2026-03-10T10:00:15.5Z,2\n2026-03-10T13:00:00+02:00,3\n",
    )
    rec = load_recording({"file": f}, tmp_path)
    assert rec.times == (0.0, 15.5, 3600.0)


def test_csv_bom_crlf_blank_lines_and_spaces(tmp_path: Path) -> None:
    f = write(tmp_path, "t.csv", b"\xef\xbb\xbftime, v\r\n0, 1\r\n\r\n60 ,2\r\n\r\n")
    rec = load_recording({"file": f, "column": "v"}, tmp_path)
    assert rec.times == (0.0, 60.0)
    assert rec.values == (1.0, 2.0)


def test_relative_to_the_base_directory_and_absolute(tmp_path: Path) -> None:
    sub = tmp_path / "data"
    sub.mkdir()
    (sub / "t.csv").write_text("t,v\n0,4\n", encoding="utf-8")
    assert load_recording({"file": "data/t.csv"}, tmp_path).values == (4.0,)
    assert load_recording({"file": str(sub / "t.csv")}, Path("/nonexistent")).values == (4.0,)


def test_format_by_content_when_the_suffix_says_nothing(tmp_path: Path) -> None:
    f = write(tmp_path, "export", prom([[10, "1"], [20, "3"]]))
    assert load_recording({"file": f}, tmp_path).values == (1.0, 3.0)
    g = write(tmp_path, "export2", "t,v\n0,5\n")
    assert load_recording({"file": g}, tmp_path).values == (5.0,)


# ------------------------------------------------------------------------ interpolation


def test_interpolation_matches_typed_in_points(tmp_path: Path) -> None:
    f = write(tmp_path, "t.csv", "t,v\n0,1\n60,2\n120,0.5\n")
    rec = load_recording({"file": f}, tmp_path)
    points = (DemandPoint(0, 1000), DemandPoint(60, 2000), DemandPoint(120, 500))
    assert rec.demand_points() == points
    for t in (0, 15, 30, 59.9, 60, 75, 119, 120, 121, 10_000):
        assert demand_at(points, t) == round(rec.value_at(t) * 1000)
    assert rec.value_at(30) == 1.5
    assert rec.value_at(90) == 1.25
    assert rec.value_at(500) == 0.5  # the last value holds
    assert rec.quantity_at(30) == "1.5"
    assert rec.quantity_at(45) == "1.75"


def test_demand_at_with_repeated_times_is_a_step() -> None:
    # Typed-in points may repeat a time (a jump): at the time itself the first value,
    # just after it the second; the bisect keeps what the linear scan did.
    points = (DemandPoint(0, 1000), DemandPoint(60, 1000), DemandPoint(60, 5000))
    assert demand_at(points, 60) == 1000
    assert demand_at(points, 60.5) == 5000
    assert demand_at(points, -1) == 1000
    assert demand_at((), 3) == 0


def test_quantity_text_small_and_negative_values() -> None:
    rec = Recording("x", (0.0,), (0.0003,))
    assert rec.quantity_at(0) == "0.0003"
    assert Recording("x", (0.0,), (-2.5,)).quantity_at(0) == "-2.5"
    assert Recording("x", (0.0,), (0.0,)).quantity_at(0) == "0"


# ------------------------------------------------------------------------ Prometheus


def test_prometheus_series_index_and_scale(tmp_path: Path) -> None:
    f = write(
        tmp_path,
        "p.json",
        prom(
            [[1700000000, "1"], [1700000015.5, "2"]],
            [[1700000000, "10"], [1700000060, "30"]],
            labels=[{"queue": "a"}, {"queue": "b"}],
        ),
    )
    first = load_recording({"file": f}, tmp_path)
    assert first.times == (0.0, 15.5)
    assert first.values == (1.0, 2.0)
    second = load_recording({"file": f, "series": 1, "scale": 0.5}, tmp_path)
    assert second.times == (0.0, 60.0)
    assert second.values == (5.0, 15.0)


def test_prometheus_numbers_as_values_are_accepted(tmp_path: Path) -> None:
    f = write(tmp_path, "p.json", prom([[0, 1], [1, 2.5]]))
    assert load_recording({"file": f}, tmp_path).values == (1.0, 2.5)


# ------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "t.csv: empty file (expected a header row and samples)"),
        ("time,v\n", "t.csv: no samples after the header (line 1)"),
        (
            "0,1\n60,2\n",
            "t.csv line 1: expected a header row (the column names, e.g. time,value), got data: 0,1",
        ),
        (
            "time\n0\n",
            "t.csv line 1: the header names 1 column; a recording needs two at least (time, value)",
        ),
        ("time,v\n0,1\n60,2,3\n", "t.csv line 3: 3 fields, the header (line 1) has 2"),
        ("time,v\n0,1\n60,abc\n", 't.csv line 3: value in column v "abc" is not a number'),
        ("time,v\n0,1\n60,\n", "t.csv line 3: value in column v empty"),
        ("time,v\n0,NaN\n", 't.csv line 2: value in column v "NaN" is not a number'),
        ("time,v\n0,inf\n", 't.csv line 2: value in column v "inf" is not a number'),
        (
            "time,v\nnoon,1\n",
            't.csv line 2: time "noon" is neither seconds nor an RFC 3339 timestamp',
        ),
        (
            "time,v\n0,1\n2026-01-01T00:00:00Z,2\n",
            't.csv line 3: time "2026-01-01T00:00:00Z" is in RFC 3339 form, the first sample\'s in seconds',
        ),
        (
            "time,v\n0,1\n60,2\n30,3\n",
            "t.csv line 4: time 30 goes back before the time of the sample before (line 3, 60); times must increase",
        ),
        (
            "time,v\n0,1\n60,2\n\n60,3\n",
            "t.csv line 5: time 60 repeats the time of the sample before (line 3, 60); times must increase",
        ),
        ('time,v\n0,"1\n', "t.csv line 2: invalid CSV: unexpected end of data"),
    ],
)
def test_csv_errors_name_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    f = write(tmp_path, "t.csv", text)
    exc = error(tmp_path, {"file": f})
    assert exc.message == message
    assert exc.key == ""


@pytest.mark.parametrize(
    ("spec", "key", "message"),
    [
        (
            {"file": "t.csv", "column": "nope"},
            "column",
            't.csv: no column "nope" in the header (line 1: time, v, v2, v2)',
        ),
        (
            {"file": "t.csv", "column": "v2"},
            "column",
            't.csv: column "v2" is ambiguous: the header (line 1) names it 2 times',
        ),
        (
            {"file": "t.csv", "column": "time"},
            "column",
            't.csv: column "time" is the time column (the first)',
        ),
        ({"file": "t.csv", "column": 2}, "column", "expected a column name, got 2"),
        (
            {"file": "t.csv", "series": 0},
            "series",
            "t.csv: `series` applies to a Prometheus JSON file only",
        ),
    ],
)
def test_csv_column_errors(tmp_path: Path, spec: dict[str, Any], key: str, message: str) -> None:
    write(tmp_path, "t.csv", "time,v,v2,v2\n0,1,2,3\n")
    exc = error(tmp_path, spec)
    assert (exc.key, exc.message) == (key, message)


def test_negative_demand_is_refused_with_its_line(tmp_path: Path) -> None:
    f = write(tmp_path, "t.csv", "time,v\n0,1\n60,-0.5\n")
    assert load_recording({"file": f}, tmp_path).values == (1.0, -0.5)  # a metric may be
    exc = error(tmp_path, {"file": f}, allow_negative=False)
    assert exc.message == "t.csv line 3: value -0.5 is negative (a demand cannot be)"


@pytest.mark.parametrize(
    ("spec", "key", "message"),
    [
        ([{"at": "0s"}], "", None),
        ("t.csv", "", "expected a list of points or a map {file, column, series, scale}"),
        ({"column": "v"}, "file", "required"),
        ({"file": ""}, "file", "expected a file name"),
        ({"file": 3}, "file", "expected a file name"),
        (
            {"file": "t.csv", "bogus": 1},
            "bogus",
            "unknown key (expected one of: file, column, series, scale)",
        ),
        ({"file": "t.csv", "scale": -1}, "scale", "expected a number >= 0, got -1"),
        ({"file": "t.csv", "scale": "2"}, "scale", "expected a number >= 0, got '2'"),
        ({"file": "t.csv", "scale": True}, "scale", "expected a number >= 0, got True"),
        ({"file": "t.csv", "scale": float("nan")}, "scale", "expected a number >= 0, got nan"),
    ],
)
def test_reference_errors(tmp_path: Path, spec: Any, key: str, message: str | None) -> None:
    write(tmp_path, "t.csv", "time,v\n0,1\n")
    exc = error(tmp_path, spec)
    assert exc.key == key
    if message is not None:
        assert exc.message == message


def test_missing_file_names_where_it_looked(tmp_path: Path) -> None:
    exc = error(tmp_path, {"file": "gone.csv"})
    assert exc.key == "file"
    assert exc.message == f"gone.csv: no such file ({tmp_path / 'gone.csv'})"
    (tmp_path / "dir.csv").mkdir()
    exc = error(tmp_path, {"file": "dir.csv"})
    assert exc.message == f"dir.csv: is a directory ({tmp_path / 'dir.csv'})"


def test_binary_file_is_not_text(tmp_path: Path) -> None:
    f = write(tmp_path, "t.csv", b"time,v\n0,\xff\n")
    assert error(tmp_path, {"file": f}).message.startswith("t.csv: not UTF-8 text")


@pytest.mark.parametrize(
    ("doc", "spec", "key", "message"),
    [
        (
            "{",
            {},
            "",
            "p.json line 1 column 2: invalid JSON: Expecting property name enclosed in double quotes",
        ),
        (
            "[]",
            {},
            "",
            'p.json: expected a Prometheus range-query response ({"status": "success", "data": {"resultType": "matrix", "result": [...]}}), got a JSON array',
        ),
        (
            {"status": "error", "errorType": "bad_data", "error": "parse error"},
            {},
            "",
            "p.json: the response is an error (status 'error'): bad_data: parse error",
        ),
        (
            {"status": "success"},
            {},
            "",
            'p.json: expected a Prometheus range-query response ({"status": "success", "data": {"resultType": "matrix", "result": [...]}}); `data` is missing or not an object',
        ),
        (
            {"data": {"resultType": "vector", "result": []}},
            {},
            "",
            "p.json: data.resultType is 'vector', not 'matrix': save the response of a range query (/api/v1/query_range)",
        ),
        (
            {"data": {"result": {}}},
            {},
            "",
            'p.json: expected a Prometheus range-query response ({"status": "success", "data": {"resultType": "matrix", "result": [...]}}); data.result is missing or not a list',
        ),
        (
            {"data": {"result": []}},
            {},
            "",
            "p.json: data.result is empty (the query returned no series)",
        ),
        (
            {"data": {"result": [{"values": [[0, "1"]]}]}},
            {"series": 1},
            "series",
            "p.json: no series 1: data.result has 1 (0 to 0)",
        ),
        (
            {"data": {"result": [{"values": [[0, "1"]]}]}},
            {"series": -1},
            "series",
            "expected a series index (0, 1, ...), got -1",
        ),
        (
            {"data": {"result": [{"values": [[0, "1"]]}]}},
            {"series": {"queue": "a"}},
            "series",
            "expected a series index (0, 1, ...), got {'queue': 'a'}",
        ),
        (
            {"data": {"result": [{"values": [[0, "1"]]}]}},
            {"column": "v"},
            "column",
            "p.json: `column` applies to a CSV file only",
        ),
        (
            {"data": {"result": [[0, "1"]]}},
            {},
            "",
            "p.json data.result[0]: expected an object, got a JSON array",
        ),
        (
            {"data": {"result": [{"value": [0, "1"]}]}},
            {},
            "",
            "p.json data.result[0].values: missing or not a list (an instant query's `value`?)",
        ),
        ({"data": {"result": [{"values": []}]}}, {}, "", "p.json: no samples"),
        (
            {"data": {"result": [{"values": [[0, "1", 2]]}]}},
            {},
            "",
            'p.json data.result[0].values[0]: expected a pair [unix_seconds, "value"]',
        ),
        (
            {"data": {"result": [{"values": [["0", "1"]]}]}},
            {},
            "",
            'p.json data.result[0].values[0]: time "0" is not a number',
        ),
        (
            {"data": {"result": [{"values": [[0, "1"], [15, "NaN"]]}]}},
            {},
            "",
            'p.json data.result[0].values[1]: value "NaN" is not a number',
        ),
        (
            {"data": {"result": [{"values": [[0, "1"], [15, "+Inf"]]}]}},
            {},
            "",
            'p.json data.result[0].values[1]: value "+Inf" is not a number',
        ),
        (
            {"data": {"result": [{"values": [[0, "1"], [15, None]]}]}},
            {},
            "",
            "p.json data.result[0].values[1]: value null is not a number",
        ),
        (
            {"data": {"result": [{"values": [[30, "1"], [15, "2"]]}]}},
            {},
            "",
            "p.json data.result[0].values[1]: time 15 goes back before the time of the sample before (data.result[0].values[0], 30); times must increase",
        ),
    ],
)
def test_prometheus_errors(
    tmp_path: Path, doc: Any, spec: dict[str, Any], key: str, message: str
) -> None:
    write(tmp_path, "p.json", doc if isinstance(doc, str) else json.dumps(doc))
    exc = error(tmp_path, {"file": "p.json", **spec})
    assert (exc.key, exc.message) == (key, message)
