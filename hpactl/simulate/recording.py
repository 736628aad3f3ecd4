"""Recorded series for scenarios: `{file, column?, series?, scale?}` in place of points.

The scenario format (docs/scenario-format.md) lets a workload's `demand` series and
the `value` of a `custom` or `external` metric item come from a file beside the
scenario (a relative path is taken from the scenario file's directory):

* a CSV file with a header row; the first column is the time (seconds, or RFC 3339
  timestamps); `column` names the value column (default: the second);
* a Prometheus range-query response saved as JSON: the pairs
  `data.result[series].values` (`[unix_seconds, "value"]`, `series` default 0).

Times become offsets from the file's first sample (which falls on the scenario's
`start`); `scale` multiplies every value. Between samples the value is interpolated
linearly and after the last sample the last value holds, exactly as for points typed
into the scenario.

Every problem is one `RecordingError` naming the file and the line (CSV) or the JSON
path of the bad element; the scenario parser adds the scenario key in front.
"""

from __future__ import annotations

import bisect
import csv
import io
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpactl.emulator.workload import DemandPoint
from hpactl.model.quantity import parse_quantity
from hpactl.model.times import parse_time

__all__ = ["RECORDING_KEYS", "Recording", "RecordingError", "load_recording"]

RECORDING_KEYS = ("file", "column", "series", "scale")


class RecordingError(Exception):
    """A bad recording reference or file. `key` is the scenario key at fault below the
    series' own place (`file`, `column`, `series`, `scale`), "" for the series itself."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.key = key


@dataclass(frozen=True, slots=True)
class Recording:
    """One series read from a file: sample times (seconds since the first sample,
    strictly increasing) and values (already scaled)."""

    file: str  # as the scenario names it
    times: tuple[float, ...]
    values: tuple[float, ...]

    def value_at(self, t: float) -> float:
        """The value at `t` seconds since start: linear between samples, the first
        value before the first sample, the last after the last."""
        times = self.times
        i = bisect.bisect_left(times, t)
        if i == 0:
            return self.values[0]
        if i == len(times):
            return self.values[-1]
        t0, t1 = times[i - 1], times[i]
        v0, v1 = self.values[i - 1], self.values[i]
        return v0 + (v1 - v0) * (t - t0) / (t1 - t0)

    def quantity_at(self, t: float) -> str:
        """`value_at(t)` as quantity text (to the nano-unit; a metric item's `value`)."""
        v = round(self.value_at(t), 9)
        text = f"{v:.9f}".rstrip("0").rstrip(".")
        return "0" if text in ("", "-0") else text

    def demand_points(self) -> tuple[DemandPoint, ...]:
        """The samples as demand points (milli-units), for the workload model."""
        return tuple(
            DemandPoint(t, round(v * 1000)) for t, v in zip(self.times, self.values, strict=True)
        )


# ------------------------------------------------------------------------ the reference


def load_recording(
    spec: Any, base_dir: Path, *, allow_negative: bool = True, what: str = "value"
) -> Recording:
    """Read the series a `{file, column?, series?, scale?}` map names.

    `allow_negative=False` refuses negative values (a demand cannot be negative).
    """
    if not isinstance(spec, Mapping):
        raise RecordingError(f"expected a list of points or a map {{{', '.join(RECORDING_KEYS)}}}")
    for k in spec:
        if k not in RECORDING_KEYS:
            raise RecordingError(
                f"unknown key (expected one of: {', '.join(RECORDING_KEYS)})", str(k)
            )
    if "file" not in spec:
        raise RecordingError("required", "file")
    name = spec["file"]
    if not isinstance(name, str) or not name.strip():
        raise RecordingError("expected a file name", "file")
    scale = spec.get("scale", 1)
    if (
        isinstance(scale, bool)
        or not isinstance(scale, (int, float))
        or not math.isfinite(scale)
        or scale < 0
    ):
        raise RecordingError(f"expected a number >= 0, got {scale!r}", "scale")
    path = Path(name)
    if not path.is_absolute():
        path = base_dir / path
    fmt = _format_of(path)
    if fmt == "csv" and "series" in spec:
        raise RecordingError(f"{name}: `series` applies to a Prometheus JSON file only", "series")
    if fmt == "json" and "column" in spec:
        raise RecordingError(f"{name}: `column` applies to a CSV file only", "column")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise RecordingError(f"{name}: no such file ({path})", "file") from None
    except IsADirectoryError:
        raise RecordingError(f"{name}: is a directory ({path})", "file") from None
    except OSError as exc:
        raise RecordingError(f"{name}: {exc.strerror or exc} ({path})", "file") from None
    except UnicodeDecodeError as exc:
        raise RecordingError(f"{name}: not UTF-8 text ({exc.reason})", "file") from None
    if fmt == "csv" or (fmt == "" and not text.lstrip().startswith(("{", "["))):
        column = spec.get("column")
        if column is not None and (not isinstance(column, str) or not column):
            raise RecordingError(f"expected a column name, got {column!r}", "column")
        samples = _read_csv(text, name, column)
    else:
        series = spec.get("series", 0)
        if isinstance(series, bool) or not isinstance(series, int) or series < 0:
            raise RecordingError(f"expected a series index (0, 1, ...), got {series!r}", "series")
        samples = _read_prometheus(text, name, series)
    return _recording(name, samples, float(scale), allow_negative=allow_negative, what=what)


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix == ".json":
        return "json"
    return ""  # decided by the content


@dataclass(frozen=True, slots=True)
class _Sample:
    time: float  # seconds (absolute: unix seconds or whatever the file counts from)
    value: float
    place: str  # "line 12" or "data.result[0].values[11]"


def _recording(
    name: str, samples: Sequence[_Sample], scale: float, *, allow_negative: bool, what: str
) -> Recording:
    if not samples:
        raise RecordingError(f"{name}: no samples")
    for prev, cur in itertools.pairwise(samples):
        if cur.time <= prev.time:
            word = "repeats" if cur.time == prev.time else "goes back before"
            raise RecordingError(
                f"{name} {cur.place}: time {_fmt(cur.time)} {word} the time of the sample "
                f"before ({prev.place}, {_fmt(prev.time)}); times must increase"
            )
    if not allow_negative:
        for s in samples:
            if s.value < 0:
                raise RecordingError(
                    f"{name} {s.place}: {what} {_fmt(s.value)} is negative (a demand cannot be)"
                )
    t0 = samples[0].time
    return Recording(
        file=name,
        times=tuple(s.time - t0 for s in samples),
        values=tuple(s.value * scale for s in samples),
    )


def _fmt(v: float) -> str:
    return str(int(v)) if v == int(v) else repr(v)


def _number(text: str) -> float | None:
    """A finite number from `text`: plain decimal/scientific, or a Kubernetes
    quantity (`250m`, `1.5k`); None when it is neither."""
    t = text.strip()
    if not t:
        return None
    try:
        v = float(t)
    except ValueError:
        try:
            v = parse_quantity(t).as_float()
        except (ValueError, TypeError):
            return None
    return v if math.isfinite(v) else None


# ------------------------------------------------------------------------ CSV


def _csv_time(text: str) -> tuple[float, str] | None:
    """(seconds, form) of a time cell: plain seconds or an RFC 3339 timestamp."""
    t = text.strip()
    try:
        v = float(t)
    except ValueError:
        pass
    else:
        return (v, "seconds") if math.isfinite(v) else None
    try:
        return parse_time(t).timestamp(), "RFC 3339"
    except ValueError:
        return None


def _read_csv(text: str, name: str, column: str | None) -> list[_Sample]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    header_line = 0
    index = 1
    form = ""
    out: list[_Sample] = []
    try:
        for row in reader:
            line = reader.line_num
            if not row or all(not c.strip() for c in row):
                continue  # blank lines
            cells = [c.strip() for c in row]
            if header is None:
                header, header_line = cells, line
                if _csv_time(cells[0]) is not None and all(
                    _number(c) is not None for c in cells[1:]
                ):
                    raise RecordingError(
                        f"{name} line {line}: expected a header row (the column names, "
                        f"e.g. time,value), got data: {','.join(cells)}"
                    )
                if len(cells) < 2:
                    raise RecordingError(
                        f"{name} line {line}: the header names {len(cells)} column; "
                        "a recording needs two at least (time, value)"
                    )
                index = _column_index(header, column, name, line)
                continue
            where = f"line {line}"
            if len(cells) != len(header):
                raise RecordingError(
                    f"{name} {where}: {len(cells)} fields, the header (line {header_line}) "
                    f"has {len(header)}"
                )
            parsed = _csv_time(cells[0])
            if parsed is None:
                raise RecordingError(
                    f'{name} {where}: time "{cells[0]}" is neither seconds nor an RFC 3339 '
                    "timestamp"
                )
            seconds, this_form = parsed
            if form and this_form != form:
                raise RecordingError(
                    f'{name} {where}: time "{cells[0]}" is in {this_form} form, the first '
                    f"sample's in {form}"
                )
            form = this_form
            raw = cells[index]
            value = _number(raw)
            if value is None:
                what = "empty" if not raw else f'"{raw}" is not a number'
                raise RecordingError(f"{name} {where}: value in column {header[index]} {what}")
            out.append(_Sample(seconds, value, where))
    except csv.Error as exc:
        raise RecordingError(f"{name} line {reader.line_num}: invalid CSV: {exc}") from None
    if header is None:
        raise RecordingError(f"{name}: empty file (expected a header row and samples)")
    if not out:
        raise RecordingError(f"{name}: no samples after the header (line {header_line})")
    return out


def _column_index(header: list[str], column: str | None, name: str, line: int) -> int:
    if column is None:
        return 1
    found = [i for i, h in enumerate(header) if h == column]
    if not found:
        raise RecordingError(
            f"{name}: no column {json.dumps(column)} in the header (line {line}: "
            f"{', '.join(header)})",
            "column",
        )
    if len(found) > 1:
        raise RecordingError(
            f"{name}: column {json.dumps(column)} is ambiguous: the header (line {line}) "
            f"names it {len(found)} times",
            "column",
        )
    if found[0] == 0:
        raise RecordingError(
            f"{name}: column {json.dumps(column)} is the time column (the first)", "column"
        )
    return found[0]


# ------------------------------------------------------------------------ Prometheus


def _read_prometheus(text: str, name: str, series: int) -> list[_Sample]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordingError(
            f"{name} line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    shape = (
        "expected a Prometheus range-query response "
        '({"status": "success", "data": {"resultType": "matrix", "result": [...]}})'
    )
    if not isinstance(doc, dict):
        raise RecordingError(f"{name}: {shape}, got a JSON {_json_type(doc)}")
    status = doc.get("status")
    if status is not None and status != "success":
        detail = ": ".join(str(doc[k]) for k in ("errorType", "error") if doc.get(k))
        raise RecordingError(
            f"{name}: the response is an error (status {status!r}){': ' + detail if detail else ''}"
        )
    data = doc.get("data")
    if not isinstance(data, dict):
        raise RecordingError(f"{name}: {shape}; `data` is missing or not an object")
    rtype = data.get("resultType")
    if rtype is not None and rtype != "matrix":
        raise RecordingError(
            f"{name}: data.resultType is {rtype!r}, not 'matrix': save the response of a "
            "range query (/api/v1/query_range)"
        )
    result = data.get("result")
    if not isinstance(result, list):
        raise RecordingError(f"{name}: {shape}; data.result is missing or not a list")
    if not result:
        raise RecordingError(f"{name}: data.result is empty (the query returned no series)")
    if series >= len(result):
        raise RecordingError(
            f"{name}: no series {series}: data.result has {len(result)} (0 to {len(result) - 1})",
            "series",
        )
    entry = result[series]
    base = f"data.result[{series}]"
    if not isinstance(entry, dict):
        raise RecordingError(f"{name} {base}: expected an object, got a JSON {_json_type(entry)}")
    values = entry.get("values")
    if not isinstance(values, list):
        hint = " (an instant query's `value`?)" if "value" in entry else ""
        raise RecordingError(f"{name} {base}.values: missing or not a list{hint}")
    out: list[_Sample] = []
    for i, pair in enumerate(values):
        where = f"{base}.values[{i}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise RecordingError(f'{name} {where}: expected a pair [unix_seconds, "value"]')
        ts, raw = pair
        if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
            raise RecordingError(f"{name} {where}: time {json.dumps(ts)} is not a number")
        value = _number(raw) if isinstance(raw, str) else None
        if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw):
            value = float(raw)
        if value is None:
            raise RecordingError(f"{name} {where}: value {json.dumps(raw)} is not a number")
        out.append(_Sample(float(ts), value, where))
    return out


def _json_type(v: Any) -> str:
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "boolean"
    if v is None:
        return "null"
    return "number"
