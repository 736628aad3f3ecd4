"""Go duration facts from Go's time/time_test.go tables; metav1 time formats from
apimachinery's time.go / micro_time.go."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpactl.model.times import (
    format_go_duration,
    format_go_duration_ns,
    format_micro_time,
    format_time,
    parse_go_duration,
    parse_go_duration_ns,
    parse_micro_time,
    parse_time,
)

NS, US, MS, S, M, H = 1, 1000, 1_000_000, 1_000_000_000, 60_000_000_000, 3_600_000_000_000

PARSE = [
    ("0", 0),
    ("5s", 5 * S),
    ("30s", 30 * S),
    ("1478s", 1478 * S),
    ("-5s", -5 * S),
    ("+5s", 5 * S),
    ("-0", 0),
    ("+0", 0),
    ("5.0s", 5 * S),
    ("5.6s", 5 * S + 600 * MS),
    ("5.s", 5 * S),
    (".5s", 500 * MS),
    ("1.0s", S),
    ("1.00s", S),
    ("1.004s", S + 4 * MS),
    ("1.0040s", S + 4 * MS),
    ("100.00100s", 100 * S + MS),
    ("10ns", 10 * NS),
    ("11us", 11 * US),
    ("12\u00b5s", 12 * US),
    ("12\u03bcs", 12 * US),
    ("13ms", 13 * MS),
    ("14s", 14 * S),
    ("15m", 15 * M),
    ("16h", 16 * H),
    ("3h30m", 3 * H + 30 * M),
    ("10.5s4m", 4 * M + 10 * S + 500 * MS),
    ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
    ("1h2m3s4ms5us6ns", H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
    ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
    ("52763797000ns", 52763797000 * NS),
    ("0.3333333333333333333h", 20 * M),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1),
    ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036s854ms775us807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -(1 << 63)),
    ("-9223372036854775.808us", -(1 << 63)),
    ("-9223372036s854ms775us808ns", -(1 << 63)),
    ("-2562047h47m16.854775808s", -(1 << 63)),
    ("0.100000000000000000000h", 6 * M),
    ("0.830103483285477580700h", 49 * M + 48 * S + 372539827 * NS),
    ("5m0s", 5 * M),
    ("1h30m", 90 * M),
    ("300ms", 300 * MS),
    ("15s", 15 * S),
]


@pytest.mark.parametrize(("text", "ns"), PARSE)
def test_parse_duration(text: str, ns: int) -> None:
    assert parse_go_duration_ns(text) == ns


ERRORS = [
    ("", 'time: invalid duration ""'),
    ("3", 'time: missing unit in duration "3"'),
    ("-", 'time: invalid duration "-"'),
    ("s", 'time: invalid duration "s"'),
    (".", 'time: invalid duration "."'),
    ("-.", 'time: invalid duration "-."'),
    (".s", 'time: invalid duration ".s"'),
    ("+.s", 'time: invalid duration "+.s"'),
    ("1d", 'time: unknown unit "d" in duration "1d"'),
    ("x", 'time: invalid duration "x"'),
    ("\ufffd", 'time: invalid duration "\\xef\\xbf\\xbd"'),
    ("9223372036854775810ns", 'time: invalid duration "9223372036854775810ns"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("-9223372036854775809ns", 'time: invalid duration "-9223372036854775809ns"'),
    ("9223372036854776us", 'time: invalid duration "9223372036854776us"'),
    ("3000000h", 'time: invalid duration "3000000h"'),
    ("9223372036854775.808us", 'time: invalid duration "9223372036854775.808us"'),
    ("9223372036854ms775us808ns", 'time: invalid duration "9223372036854ms775us808ns"'),
    ("1 s", 'time: unknown unit " s" in duration "1 s"'),
    ("1s ", 'time: unknown unit "s " in duration "1s "'),
    ('1"', 'time: unknown unit "\\"" in duration "1\\""'),
]


@pytest.mark.parametrize(("text", "message"), ERRORS)
def test_parse_duration_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_go_duration(text)
    assert str(info.value) == message


STRINGS = [
    ("0s", 0),
    ("1ns", 1 * NS),
    ("1.1\u00b5s", 1100 * NS),
    ("2.2ms", 2200 * US),
    ("3.3s", 3300 * MS),
    ("4m5s", 4 * M + 5 * S),
    ("4m5.001s", 4 * M + 5001 * MS),
    ("5h6m7.001s", 5 * H + 6 * M + 7001 * MS),
    ("8m0.000000001s", 8 * M + 1 * NS),
    ("2562047h47m16.854775807s", (1 << 63) - 1),
    ("-2562047h47m16.854775808s", -(1 << 63)),
    ("5m0s", 5 * M),
    ("1h30m0s", 90 * M),
    ("300ms", 300 * MS),
    ("1.5s", 1500 * MS),
    ("1h0m0s", H),
    ("-1.5s", -1500 * MS),
]


@pytest.mark.parametrize(("text", "ns"), STRINGS)
def test_duration_string(text: str, ns: int) -> None:
    assert format_go_duration_ns(ns) == text


def test_timedelta_wrappers() -> None:
    assert parse_go_duration("1h30m") == timedelta(hours=1, minutes=30)
    assert parse_go_duration("1500ns") == timedelta(microseconds=1)
    assert parse_go_duration("-1500ns") == timedelta(microseconds=-1)
    assert format_go_duration(timedelta(minutes=5)) == "5m0s"
    assert format_go_duration(timedelta(seconds=-15)) == "-15s"
    assert format_go_duration(timedelta(0)) == "0s"
    assert format_go_duration(timedelta(days=1)) == "24h0m0s"


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1))
def test_duration_string_roundtrip(ns: int) -> None:
    assert parse_go_duration_ns(format_go_duration_ns(ns)) == ns


def test_time_roundtrip() -> None:
    dt = parse_time("2026-01-01T00:00:00Z")
    assert dt == datetime(2026, 1, 1, tzinfo=UTC)
    assert dt.tzinfo is not None and dt.utcoffset() == timedelta(0)
    assert format_time(dt) == "2026-01-01T00:00:00Z"


def test_time_offsets_and_fractions() -> None:
    assert parse_time("2026-01-01T02:30:00+02:30") == datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    assert parse_time("2025-12-31T23:00:00-01:00") == datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_time("2026-01-01T00:00:00.123456789Z") == datetime(
        2026, 1, 1, 0, 0, 0, 123456, tzinfo=UTC
    )
    # Marshalling drops the fraction and converts to UTC.
    assert format_time(datetime(2026, 1, 1, 0, 0, 0, 999999, tzinfo=UTC)) == "2026-01-01T00:00:00Z"
    tz = timezone(timedelta(hours=5))
    assert format_time(datetime(2026, 1, 1, 5, 0, tzinfo=tz)) == "2026-01-01T00:00:00Z"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "2026-01-01",
        "2026-01-01 00:00:00Z",
        "2026-01-01T00:00:00",
        "2026-13-01T00:00:00Z",
        "2026-01-01T00:00:60Z",
        "2026-01-01t00:00:00Z",
        "2026-1-01T00:00:00Z",
    ],
)
def test_time_errors(bad: str) -> None:
    with pytest.raises(ValueError, match="parsing time"):
        parse_time(bad)


def test_micro_time() -> None:
    dt = datetime(2026, 1, 1, 0, 0, 0, 1500, tzinfo=UTC)
    assert format_micro_time(dt) == "2026-01-01T00:00:00.001500Z"
    assert format_micro_time(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00.000000Z"
    assert parse_micro_time("2026-01-01T00:00:00.001500Z") == dt
    with pytest.raises(ValueError):
        parse_micro_time("2026-01-01T00:00:00Z")
    with pytest.raises(ValueError):
        parse_micro_time("2026-01-01T00:00:00.0015Z")
