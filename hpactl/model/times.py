"""Kubernetes/Go time formats: metav1.Time, metav1.MicroTime and Go ``time.Duration``.

* ``metav1.Time`` marshals as RFC 3339 in UTC with whole seconds (``2026-01-01T00:00:00Z``);
  it unmarshals with Go's ``time.Parse(time.RFC3339, s)``, which also accepts a fractional
  second and any ``±hh:mm`` offset.
* ``metav1.MicroTime`` uses ``2006-01-02T15:04:05.000000Z07:00`` both ways (exactly six
  fractional digits).
* Durations follow Go's ``time.ParseDuration`` and ``Duration.String()`` byte for byte,
  error texts included (``time: invalid duration "x"``, ``time: missing unit in duration
  "1"``, ``time: unknown unit "d" in duration "1d"``).

Python datetimes and timedeltas hold microseconds; the ``*_ns`` variants keep Go's
nanoseconds where that matters.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Final

__all__ = [
    "RFC3339",
    "RFC3339_MICRO",
    "format_go_duration",
    "format_go_duration_ns",
    "format_micro_time",
    "format_time",
    "parse_go_duration",
    "parse_go_duration_ns",
    "parse_micro_time",
    "parse_time",
]

RFC3339: Final = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO: Final = "2006-01-02T15:04:05.000000Z07:00"

_RFC3339_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:\d{2})"
)
_RFC3339_MICRO_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})(Z|[+-]\d{2}:\d{2})"
)

_NS: Final = 1
_US: Final = 1000 * _NS
_MS: Final = 1000 * _US
_S: Final = 1000 * _MS
_UNITS: Final[dict[str, int]] = {
    "ns": _NS,
    "us": _US,
    "\u00b5s": _US,  # micro sign
    "\u03bcs": _US,  # Greek small letter mu
    "ms": _MS,
    "s": _S,
    "m": 60 * _S,
    "h": 3600 * _S,
}
_MAX_DURATION: Final = (1 << 63) - 1


# ---- metav1.Time / MicroTime -------------------------------------------------------------
def _parse_rfc3339(s: str, pattern: re.Pattern[str], layout: str) -> datetime:
    m = pattern.fullmatch(s)
    if m is None:
        raise ValueError(f'parsing time "{s}" as "{layout}": cannot parse "{s}" as "{layout}"')
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    frac = m.group(7) or ""
    micro = int((frac + "000000")[:6])
    zone = m.group(8)
    if zone == "Z":
        tz: timezone = UTC
    else:
        oh, om = int(zone[1:3]), int(zone[4:6])
        if oh > 24 or om > 59:
            raise ValueError(f'parsing time "{s}": time zone offset out of range')
        delta = timedelta(hours=oh, minutes=om)
        tz = timezone(-delta if zone[0] == "-" else delta)
    try:
        dt = datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)
    except ValueError as err:
        raise ValueError(f'parsing time "{s}": {err}') from None
    return dt.astimezone(UTC)


def parse_time(s: str) -> datetime:
    """metav1.Time from its JSON string (aware, UTC). Sub-microsecond digits are dropped."""
    return _parse_rfc3339(s, _RFC3339_RE, RFC3339)


def _utc(dt: datetime) -> datetime:
    # A naive datetime is taken to be UTC already: the pure layers only deal in UTC.
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def format_time(dt: datetime) -> str:
    """metav1.Time as the API writes it: UTC, whole seconds (the fraction is truncated)."""
    return _utc(dt).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_micro_time(s: str) -> datetime:
    """metav1.MicroTime from its JSON string (exactly six fractional digits)."""
    return _parse_rfc3339(s, _RFC3339_MICRO_RE, RFC3339_MICRO)


def format_micro_time(dt: datetime) -> str:
    """metav1.MicroTime as the API writes it: ``2026-01-01T00:00:00.000000Z``."""
    return _utc(dt).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---- Go time.Duration ----------------------------------------------------------------------
def _quote(s: str) -> str:
    """Go time.quote: double quotes, non-ASCII and control bytes as \\xNN."""
    out = ['"']
    for ch in s:
        if ord(ch) >= 0x80 or ord(ch) < 0x20:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        else:
            if ch in '"\\':
                out.append("\\")
            out.append(ch)
    out.append('"')
    return "".join(out)


def _leading_int(s: str) -> tuple[int, str]:
    x, i = 0, 0
    while i < len(s) and "0" <= s[i] <= "9":
        if x > (1 << 63) // 10:
            raise OverflowError
        x = x * 10 + ord(s[i]) - 48
        if x > 1 << 63:
            raise OverflowError
        i += 1
    return x, s[i:]


def _leading_fraction(s: str) -> tuple[int, float, str]:
    x, scale, i, overflow = 0, 1.0, 0, False
    while i < len(s) and "0" <= s[i] <= "9":
        if not overflow:
            if x > ((1 << 63) - 1) // 10:
                overflow = True
            else:
                y = x * 10 + ord(s[i]) - 48
                if y > 1 << 63:
                    overflow = True
                else:
                    x = y
                    scale *= 10
        i += 1
    return x, scale, s[i:]


def parse_go_duration_ns(text: str) -> int:
    """Go ``time.ParseDuration`` in nanoseconds, with Go's error texts."""
    invalid = f"time: invalid duration {_quote(text)}"
    s = text
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(invalid)
    d = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise ValueError(invalid)
        before = len(s)
        try:
            v, s = _leading_int(s)
        except OverflowError:
            raise ValueError(invalid) from None
        pre = before != len(s)
        post = False
        f, scale = 0, 1.0
        if s and s[0] == ".":
            s = s[1:]
            before = len(s)
            f, scale, s = _leading_fraction(s)
            post = before != len(s)
        if not pre and not post:
            raise ValueError(invalid)
        i = 0
        while i < len(s) and not (s[i] == "." or "0" <= s[i] <= "9"):
            i += 1
        if i == 0:
            raise ValueError(f"time: missing unit in duration {_quote(text)}")
        u, s = s[:i], s[i:]
        unit = _UNITS.get(u)
        if unit is None:
            raise ValueError(f"time: unknown unit {_quote(u)} in duration {_quote(text)}")
        if v > (1 << 63) // unit:
            raise ValueError(invalid)
        v *= unit
        if f > 0:
            # Go adds the fraction through float64, truncating to whole nanoseconds.
            v += int(float(f) * (float(unit) / scale))
            if v > 1 << 63:
                raise ValueError(invalid)
        d += v
        if d > 1 << 63:
            raise ValueError(invalid)
    if neg:
        return -d
    if d > _MAX_DURATION:
        raise ValueError(invalid)
    return d


def parse_go_duration(text: str) -> timedelta:
    """Go ``time.ParseDuration`` as a timedelta (nanoseconds truncated toward zero)."""
    ns = parse_go_duration_ns(text)
    micros = abs(ns) // 1000
    return timedelta(microseconds=-micros if ns < 0 else micros)


def _fmt_frac(v: int, prec: int) -> tuple[str, int]:
    digits = []
    printed = False
    for _ in range(prec):
        digit = v % 10
        printed = printed or digit != 0
        if printed:
            digits.append(str(digit))
        v //= 10
    frac = "." + "".join(reversed(digits)) if printed else ""
    return frac, v


def format_go_duration_ns(ns: int) -> str:
    """Go ``Duration.String()``: ``5m0s``, ``1h30m0s``, ``300ms``, ``1.5µs``, ``0s``."""
    neg = ns < 0
    u = -ns if neg else ns
    if u < _S:
        if u == 0:
            return "0s"
        if u < _US:
            prec, unit = 0, "ns"
        elif u < _MS:
            prec, unit = 3, "\u00b5s"
        else:
            prec, unit = 6, "ms"
        frac, u = _fmt_frac(u, prec)
        out = f"{u}{frac}{unit}"
    else:
        frac, u = _fmt_frac(u, 9)
        out = f"{u % 60}{frac}s"
        u //= 60
        if u > 0:
            out = f"{u % 60}m{out}"
            u //= 60
            if u > 0:
                out = f"{u}h{out}"
    return "-" + out if neg else out


def format_go_duration(td: timedelta) -> str:
    """Go ``Duration.String()`` of a timedelta."""
    micros = (td.days * 86400 + td.seconds) * 1_000_000 + td.microseconds
    return format_go_duration_ns(micros * 1000)
