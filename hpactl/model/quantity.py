"""Kubernetes ``resource.Quantity``, as k8s.io/apimachinery parses, compares and prints it.

The value is kept exactly as an integer mantissa and a power-of-ten exponent, in the same
shape Go keeps it (``int64Amount`` or ``inf.Dec``), because a few observable results depend
on that shape: ``AsApproximateFloat64``, the rounding of negative values in
``ScaledValue`` and which parsed strings are remembered verbatim.

Facts mirrored from upstream (``quantity.go``, ``amount.go``, ``math.go``, ``scale_int.go``,
``suffix.go``):

* parsing rounds a non-zero value away from zero to nano precision; a BinarySI value is
  capped at 2^63-1 in magnitude and a BinarySI value strictly between 0 and 1 becomes
  DecimalSI;
* a parsed string already in canonical shape is remembered and printed verbatim by
  ``String()`` (so ``"1.441"`` prints as ``"1.441"`` but ``"1.5"`` prints as ``"1500m"``);
* ``String()`` otherwise picks the largest suffix that keeps an integer mantissa
  (DecimalSI ``n u m "" k M G T P E``, falling back to ``e<exp>`` above ``E``; BinarySI
  ``Ki Mi Gi Ti Pi Ei`` for integers of magnitude >= 1024, else the DecimalSI form);
* ``Value``/``MilliValue`` round up (away from zero on the int64 form).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache
from typing import Final, Literal

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "ERR_FORMAT_WRONG",
    "ERR_NUMERIC",
    "ERR_SUFFIX",
    "Quantity",
    "QuantityFormat",
    "format_milli",
    "parse_quantity",
]

QuantityFormat = Literal["DecimalSI", "BinarySI", "DecimalExponent"]
DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"

_SPLIT_RE_STRING: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
# The texts of Go's ErrFormatWrong, ErrNumeric and ErrSuffix.
ERR_FORMAT_WRONG: Final = f"quantities must match the regular expression '{_SPLIT_RE_STRING}'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"

_INT64_MAX: Final = (1 << 63) - 1
_INT64_MIN: Final = -(1 << 63)
_NANO: Final = -9
# Go's maxInt64Factors as used by the parser's fast path; longer numbers take the
# arbitrary-precision path (which gives the same value).
_MAX_INT64_FACTORS: Final = 18

_DEC_SUFFIXES: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_DEC_EXP_TO_SUFFIX: Final[dict[int, str]] = {v: k for k, v in _DEC_SUFFIXES.items()}
_BIN_SUFFIXES: Final[dict[str, int]] = {
    "Ki": 10,
    "Mi": 20,
    "Gi": 30,
    "Ti": 40,
    "Pi": 50,
    "Ei": 60,
}
_BIN_EXP_TO_SUFFIX: Final[dict[int, str]] = {0: "", **{v: k for k, v in _BIN_SUFFIXES.items()}}
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_DIGITS: Final = frozenset("0123456789")
# What inf.Dec.SetString accepts as a plain decimal.
_INF_DEC_RE: Final = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
_GO_INT_RE: Final = re.compile(r"[+-]?[0-9]+")
# Beyond this exponent we keep (mantissa, exponent) instead of expanding the mantissa
# the way inf.Dec would; only AsApproximateFloat64 could tell, and it is +-Inf there.
_MAX_EXPAND: Final = 400


class _ParseError(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _wrap32(v: int) -> int:
    return ((v + (1 << 31)) % (1 << 32)) - (1 << 31)


def _wrap64(v: int) -> int:
    return ((v + (1 << 63)) % (1 << 64)) - (1 << 63)


def _strip10(m: int) -> tuple[int, int]:
    """(m without trailing decimal zeros, number removed); 0 stays (0, 0)."""
    if m == 0:
        return 0, 0
    times = 0
    while m % 10 == 0:
        m //= 10
        times += 1
    return m, times


def _pow10_float(n: int) -> float:
    """Go math.Pow10: exact table values combined the way Go combines them."""
    if 0 <= n <= 308:
        return float(f"1e{(n // 32) * 32}") * float(f"1e{n % 32}")
    if -323 <= n <= 0:
        return float(f"1e-{(-n // 32) * 32}") / float(f"1e{-n % 32}")
    return math.inf if n > 0 else 0.0


def _ndigits(m: int) -> int:
    return len(str(abs(m))) if m else 0


class Quantity:
    """An immutable Kubernetes quantity. Equality, ordering and hash are by value."""

    __slots__ = ("_cached", "_dec", "_exp", "_unscaled", "format")

    _unscaled: int
    _exp: int
    _dec: bool
    _cached: str | None
    format: QuantityFormat

    def __init__(
        self,
        unscaled: int,
        exp: int = 0,
        fmt: QuantityFormat = "DecimalSI",
        *,
        dec: bool = False,
        cached: str | None = None,
    ) -> None:
        """Value ``unscaled * 10**exp``; ``dec`` says Go would hold it as an inf.Dec."""
        if fmt not in (DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT):
            raise ValueError(f"unknown quantity format {fmt!r}")
        object.__setattr__(self, "_unscaled", unscaled)
        object.__setattr__(self, "_exp", exp)
        object.__setattr__(self, "format", fmt)
        object.__setattr__(self, "_dec", dec)
        object.__setattr__(self, "_cached", cached)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Quantity is immutable")

    # ---- constructors -------------------------------------------------------------
    @classmethod
    def from_int(cls, value: int, fmt: QuantityFormat = "DecimalSI") -> Quantity:
        """Go ``NewQuantity(value, fmt)``."""
        return cls(value, 0, fmt)

    @classmethod
    def from_milli(cls, milli: int, fmt: QuantityFormat = "DecimalSI") -> Quantity:
        """Go ``NewMilliQuantity(milli, fmt)``."""
        return cls(milli, -3, fmt)

    @classmethod
    def from_scaled(cls, value: int, scale: int) -> Quantity:
        """Go ``NewScaledQuantity(value, scale)`` (DecimalSI)."""
        return cls(value, scale, DECIMAL_SI)

    @classmethod
    def parse(cls, value: str | int | float) -> Quantity:
        return parse_quantity(value)

    # ---- value access -------------------------------------------------------------
    def _norm(self) -> tuple[int, int]:
        m, t = _strip10(self._unscaled)
        return (m, self._exp + t) if m else (0, 0)

    def sign(self) -> int:
        return (self._unscaled > 0) - (self._unscaled < 0)

    def is_zero(self) -> bool:
        return self._unscaled == 0

    def as_fraction(self) -> Fraction:
        """The exact value (beware of astronomically large exponents)."""
        m, e = self._norm()
        return Fraction(m * 10**e) if e >= 0 else Fraction(m, 10**-e)

    def scaled_value(self, scale: int) -> int:
        """Go ``ScaledValue(scale)``: the value in units of 10**scale, rounded up.

        The int64 form rounds away from zero and saturates; the inf.Dec form rounds as
        ``scaledValue`` does (toward +inf, or truncation+1 on its fast path) and wraps.
        """
        u, x = self._unscaled, self._exp
        if u == 0:
            return 0
        if not self._dec:
            delta = x - scale
            if delta < 0:
                q, r = divmod(abs(u), 10**-delta) if -delta < 40 else (0, abs(u))
                if r:
                    q += 1
                res = q if u > 0 else -q
            else:
                if delta >= 19:
                    return _INT64_MIN if u < 0 else _INT64_MAX
                res = u * 10**delta
            return max(_INT64_MIN, min(_INT64_MAX, res))
        dif = scale - x  # Go: inf scale minus the new inf scale
        if dif == 0:
            return _wrap64(u)
        if dif < 0:
            return _wrap64(_wrap64(u) * int(_pow10_float(-dif)) if -dif <= 18 else 0)
        if abs(u) < _INT64_MAX and dif < 19:
            div = 10**dif
            q = abs(u) // div
            q = q if u >= 0 else -q  # Go integer division truncates
            return _wrap64(q + 1 if u % div else q)
        if _ndigits(u) < dif:
            return 1 if u > 0 else 0  # floor(u / 10**dif) is 0 or -1, plus one
        q, r = divmod(u, 10**dif)
        return _wrap64(q + 1 if r else q)

    def value(self) -> int:
        """Go ``Value()``."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """Go ``MilliValue()``: ceil(q * 1000)."""
        return self.scaled_value(-3)

    def as_float(self) -> float:
        """Go ``AsApproximateFloat64()``."""
        try:
            base = float(self._unscaled)
        except OverflowError:
            base = math.inf if self._unscaled > 0 else -math.inf
        if self._exp == 0:
            return base
        return base * _pow10_float(self._exp)

    # ---- formatting ---------------------------------------------------------------
    def _cmp_int(self, v: int) -> int:
        return _cmp_norm(self._norm(), _strip_pair(v, 0))

    def canonical(self) -> str:
        """Go ``CanonicalizeBytes``: the canonical form, ignoring any remembered string."""
        if self._unscaled == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI:
            if self._cmp_int(-1024) > 0 and self._cmp_int(1024) < 0:
                fmt = DECIMAL_SI
            else:
                m, e = self._norm()
                if e < 0:  # not an integer: keep the precision, print as DecimalSI
                    fmt = DECIMAL_SI
                else:
                    v = m * 10**e
                    a, times = abs(v), 0
                    while a >= 1024 and a % 1024 == 0:
                        a //= 1024
                        times += 1
                    num = str(a if v > 0 else -a)
                    return num + _BIN_EXP_TO_SUFFIX.get(times * 10, "")
        m, e = self._norm()
        e3 = e - (e % 3)  # lower the exponent to a multiple of three
        number = str(m * 10 ** (e - e3))
        if fmt == DECIMAL_SI and e3 in _DEC_EXP_TO_SUFFIX:
            return number + _DEC_EXP_TO_SUFFIX[e3]
        # DecimalExponent, and DecimalSI beyond the largest suffix.
        return number if e3 == 0 else f"{number}e{e3}"

    def __str__(self) -> str:
        """Go ``String()``: the remembered parsed string if any, else the canonical form."""
        return self._cached if self._cached is not None else self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, format={self.format!r})"

    def to_json(self) -> str:
        """What Go's MarshalJSON writes (without the quotes)."""
        return str(self)

    # ---- comparison and arithmetic ------------------------------------------------
    def cmp(self, other: Quantity) -> int:
        return _cmp_norm(self._norm(), other._norm())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self._norm() == other._norm()

    def __hash__(self) -> int:
        return hash(self._norm())

    def __lt__(self, other: Quantity) -> bool:
        return self.cmp(other) < 0

    def __le__(self, other: Quantity) -> bool:
        return self.cmp(other) <= 0

    def __gt__(self, other: Quantity) -> bool:
        return self.cmp(other) > 0

    def __ge__(self, other: Quantity) -> bool:
        return self.cmp(other) >= 0

    def __neg__(self) -> Quantity:
        return Quantity(-self._unscaled, self._exp, self.format, dec=self._dec)

    def __add__(self, other: Quantity) -> Quantity:
        """Go ``q.Add(y)`` on a copy: the format is q's unless q is zero."""
        fmt = other.format if self.is_zero() else self.format
        if self._unscaled == 0:
            return Quantity(other._unscaled, other._exp, fmt, dec=other._dec)
        if other._unscaled == 0:
            return Quantity(self._unscaled, self._exp, fmt, dec=self._dec)
        e = min(self._exp, other._exp)
        total = self._unscaled * 10 ** (self._exp - e) + other._unscaled * 10 ** (other._exp - e)
        dec = self._dec or other._dec or not (_INT64_MIN <= total <= _INT64_MAX)
        return Quantity(total, e, fmt, dec=dec)

    def __sub__(self, other: Quantity) -> Quantity:
        return self + (-other)


def _strip_pair(m: int, e: int) -> tuple[int, int]:
    m2, t = _strip10(m)
    return (m2, e + t) if m2 else (0, 0)


def _cmp_norm(a: tuple[int, int], b: tuple[int, int]) -> int:
    (am, ae), (bm, be) = a, b
    sa, sb = (am > 0) - (am < 0), (bm > 0) - (bm < 0)
    if sa != sb:
        return 1 if sa > sb else -1
    if sa == 0:
        return 0
    # Same sign: compare orders of magnitude first so huge exponents stay cheap.
    oa, ob = _ndigits(am) + ae, _ndigits(bm) + be
    if oa != ob:
        return sa if oa > ob else -sa
    e = min(ae, be)
    x: int = am * 10 ** (ae - e)
    y: int = bm * 10 ** (be - e)
    return (x > y) - (x < y)


def _scan(s: str) -> tuple[bool, str, str, str, str]:
    """Go parseQuantityString: (positive, value, num, denom, suffix)."""
    positive = True
    pos, end = 0, len(s)
    if pos < end and s[0] in "+-":
        positive = s[0] != "-"
        pos += 1
    while True:  # strip leading zeros
        if pos >= end:
            return positive, "0", "0", "", ""
        if s[pos] != "0":
            break
        pos += 1
    i = pos
    while i < end and s[i] in _DIGITS:
        i += 1
    if i >= end:
        return positive, s, s[pos:], "", ""
    num = s[pos:i] or "0"
    pos = i
    denom = ""
    if s[pos] == ".":
        pos += 1
        i = pos
        while i < end and s[i] in _DIGITS:
            i += 1
        denom = s[pos:i]
        if i >= end:
            return positive, s, num, denom, ""
        pos = i
    value = s[:pos]
    suffix_start = pos
    i = pos
    while i < end and s[i] in _SUFFIX_CHARS:
        i += 1
    if i >= end:
        return positive, value, num, denom, s[suffix_start:]
    pos = i
    if s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    if pos >= end:
        return positive, value, num, denom, s[suffix_start:]
    raise _ParseError(ERR_FORMAT_WRONG)


def _interpret(suffix: str) -> tuple[int, int, QuantityFormat]:
    if suffix in _DEC_SUFFIXES:
        return 10, _DEC_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BIN_SUFFIXES:
        return 2, _BIN_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        if _GO_INT_RE.fullmatch(digits):
            parsed = int(digits)
            if _INT64_MIN <= parsed <= _INT64_MAX:
                return 10, _wrap32(parsed), DECIMAL_EXPONENT
    raise _ParseError(ERR_SUFFIX)


# Quantities are immutable, and the same few strings ("500m", "128Mi") recur across pods.
@lru_cache(maxsize=8192)
def _parse(s: str) -> Quantity:
    if not s:
        raise _ParseError(ERR_FORMAT_WRONG)
    if s == "0":
        return Quantity(0, 0, DECIMAL_SI, cached="0")
    positive, value, num, denom, suf = _scan(s)
    base, exponent, fmt = _interpret(suf)

    precision = 0
    scale = 0
    mantissa = 1
    if fmt == BINARY_SI:
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - (exponent * 3 // 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))

    if precision >= 0:
        scale = _wrap32(scale - len(denom))
        if scale >= _NANO:
            shifted = num + denom
            v = int(shifted)
            result = v * mantissa
            if v <= _INT64_MAX and result <= _INT64_MAX:
                if not positive:
                    result = -result
                if fmt == BINARY_SI:
                    canonical = exponent % 10 == 0 and (v & 0x07) != 0
                else:
                    canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return Quantity(result, scale, fmt, cached=s if canonical else None)

    # Arbitrary precision path (inf.Dec).
    if not _INF_DEC_RE.fullmatch(value):
        raise _ParseError(ERR_NUMERIC)
    body = value.lstrip("+-")
    neg = value.startswith("-")
    int_part, _, frac_part = body.partition(".")
    unscaled = int((int_part + frac_part) or "0")
    exp = -len(frac_part)
    if base == 10:
        exp += exponent
    else:
        unscaled <<= exponent
    if unscaled != 0:
        # Round the magnitude up (away from zero) to nano precision.
        if exp < _NANO:
            drop = _NANO - exp
            if _ndigits(unscaled) < drop:
                unscaled = 1
            else:
                q, r = divmod(unscaled, 10**drop)
                unscaled = q + (1 if r else 0)
            exp = _NANO
        elif exp - _NANO <= _MAX_EXPAND:
            unscaled *= 10 ** (exp - _NANO)
            exp = _NANO
    if fmt == BINARY_SI:
        if _cmp_norm(_strip_pair(unscaled, exp), (_INT64_MAX, 0)) > 0:
            unscaled, exp = _INT64_MAX, 0
        if unscaled != 0 and _cmp_norm(_strip_pair(unscaled, exp), (1, 0)) < 0:
            fmt = DECIMAL_SI
    if neg:
        unscaled = -unscaled
    return Quantity(unscaled, exp, fmt, dec=True)


def parse_quantity(value: str | int | float, *, trim_space: bool = True) -> Quantity:
    """Go ``ParseQuantity`` as ``Quantity.UnmarshalJSON`` applies it: JSON numbers are
    accepted and surrounding whitespace is trimmed (``trim_space=False`` gives bare
    ``ParseQuantity``, which rejects ``" 1"``).

    Raises ValueError ``cannot parse '<text>': <Go error>`` (MustParse's wording).
    A JSON float reaches us already decoded, so it is re-printed with ``repr``; Go would
    see the original digits (``1e3`` stays DecimalExponent there, becomes ``1000.0`` here).
    """
    if isinstance(value, bool):
        raise ValueError(f"cannot parse '{value}': {ERR_FORMAT_WRONG}")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot parse '{value}': {ERR_FORMAT_WRONG}")
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip() if trim_space else value
    else:
        raise ValueError(f"cannot parse '{value!r}': {ERR_FORMAT_WRONG}")
    try:
        return _parse(text)
    except _ParseError as err:
        raise ValueError(f"cannot parse '{value}': {err.text}") from None


def format_milli(milli: int, fmt: QuantityFormat = "DecimalSI") -> str:
    """``NewMilliQuantity(milli, fmt).String()``."""
    return str(Quantity.from_milli(milli, fmt))
