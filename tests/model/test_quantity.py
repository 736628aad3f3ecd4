"""Quantity facts taken from k8s.io/apimachinery's tests (quantity_golden_test.go, the
v1.37.0 decode corpus testdata/quantity_decode_corpus.json, quantity_test.go)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpactl.model.quantity import (
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    Quantity,
    format_milli,
    parse_quantity,
)


def _val(text: str) -> Quantity:
    """A corpus value '<mantissa>e<exponent>'."""
    m, _, e = text.partition("e")
    return Quantity(int(m), int(e))


# (input, value as the corpus writes it, format) — rows of quantity_decode_corpus.json.
CORPUS = [
    ("n", "0e0", "DecimalSI"),
    ("Ki", "0e0", "BinarySI"),
    ("Ti", "0e0", "BinarySI"),
    ("E3", "0e0", "DecimalExponent"),
    ("e-9", "0e0", "DecimalExponent"),
    (".", "0e0", "DecimalSI"),
    (".Ki", "0e0", "BinarySI"),
    ("0Pi", "0e0", "BinarySI"),
    ("0e-1000", "0e0", "DecimalExponent"),
    ("0.0Ei", "0e0", "BinarySI"),
    ("01", "1e0", "DecimalSI"),
    ("01n", "1e-9", "DecimalSI"),
    ("01E", "1e18", "DecimalSI"),
    ("01Ei", "1152921504606846976e0", "BinarySI"),
    ("1E3", "1e3", "DecimalExponent"),
    ("1e+21", "1e21", "DecimalExponent"),
    ("1e03", "1e3", "DecimalExponent"),
    ("1e-4294967297", "1e-1", "DecimalExponent"),
    ("1e-4294967296", "1e0", "DecimalExponent"),
    ("1e-2147483649", "1e2147483647", "DecimalExponent"),
    ("1e-1000", "1e-9", "DecimalExponent"),
    ("1e-19", "1e-9", "DecimalExponent"),
    ("1e-10", "1e-9", "DecimalExponent"),
    ("1e4294967295", "1e-1", "DecimalExponent"),
    ("1e8589934592", "1e0", "DecimalExponent"),
    ("1e2147483647", "1e2147483647", "DecimalExponent"),
    ("5Ki", "512e1", "BinarySI"),
    ("5Ei", "576460752303423488e1", "BinarySI"),
    ("5e-10", "1e-9", "DecimalExponent"),
    ("7Ei", "8070450532247928832e0", "BinarySI"),
    ("+8Ei", "9223372036854775807e0", "BinarySI"),
    ("+12Ei", "9223372036854775807e0", "BinarySI"),
    ("+12e-10", "2e-9", "DecimalExponent"),
    ("+123e-10", "13e-9", "DecimalExponent"),
    ("+123Pi", "138485688541642752e0", "BinarySI"),
    ("+123e-1", "123e-1", "DecimalExponent"),
]

CORPUS_ERRORS = [
    "",
    "Pi",
    "Ei",
    ".Pi",
    "e-2147483648",
    "e-10",
    "e2147483648",
    ".e-1000",
]


@pytest.mark.parametrize(("text", "value", "fmt"), CORPUS)
def test_decode_corpus(text: str, value: str, fmt: str) -> None:
    q = parse_quantity(text)
    assert q == _val(value)
    assert q.format == fmt


@pytest.mark.parametrize("text", CORPUS_ERRORS)
def test_decode_corpus_errors(text: str) -> None:
    with pytest.raises(ValueError, match=f"cannot parse '{text}'"):
        parse_quantity(text)


# (input, String(), canonical form without the remembered string) — quantity_golden_test.go.
GOLDEN = [
    ("1", "1", "1"),
    ("-1", "-1", "-1"),
    ("1Ki", "1Ki", "1Ki"),
    ("1024Mi", "1Gi", "1Gi"),
    ("1000M", "1G", "1G"),
    ("1e3", "1e3", "1e3"),
    ("0.1", "100m", "100m"),
    ("0.000000000000001", "1n", "1n"),
    ("1.441", "1.441", "1441m"),
    ("1.000001", "1.000001", "1000001u"),
    ("1.000000001", "1.000000001", "1000000001n"),
    ("1.5", "1500m", "1500m"),
    ("9223372036854775807", "9223372036854775807", "9223372036854775807"),
    ("9223372036854775808", "9223372036854775808", "9223372036854775808"),
    ("18446744073709551616", "18446744073709551616", "18446744073709551616"),
    ("1E", "1E", "1E"),
    ("100E", "100E", "100E"),
    ("1000E", "1e21", "1e21"),
    ("1e100", "10e99", "10e99"),
    ("8Ei", "9223372036854775807", "9223372036854775807"),
    ("-20Ei", "-9223372036854775807", "-9223372036854775807"),
    ("-9.5Gi", "-9728Mi", "-9728Mi"),
    ("-9.5000000001Gi", "-10200547328107374183n", "-10200547328107374183n"),
]


@pytest.mark.parametrize(("text", "string", "canonical"), GOLDEN)
def test_golden_serialization(text: str, string: str, canonical: str) -> None:
    q = parse_quantity(text)
    assert str(q) == string
    assert q.to_json() == string
    assert q.canonical() == canonical
    # Re-decoding what we print gives the same value and the same bytes (apiserver RMW).
    again = parse_quantity(str(q))
    assert again == q
    assert str(again) == string


def test_golden_constructed() -> None:
    assert str(Quantity.from_milli(1441)) == "1441m"
    assert str(Quantity.from_int(-(2**63))) == "-9223372036854775808"
    assert str(Quantity.from_scaled(2**63 - 1, 1)) == "92233720368547758070"
    assert str(Quantity.from_scaled(1, 21)) == "1e21"
    assert str(Quantity.from_int(0)) == "0"


# Canonical forms from quantity_test.go's TestQuantityString / TestQuantityParseEmit tables.
@pytest.mark.parametrize(
    ("q", "expect"),
    [
        (Quantity.from_int(1024 * 1024 * 1024, "BinarySI"), "1Gi"),
        (Quantity.from_int(300 * 1024 * 1024, "BinarySI"), "300Mi"),
        (Quantity.from_int(6 * 1024, "BinarySI"), "6Ki"),
        (Quantity.from_int(1001 * 1024 * 1024 * 1024, "BinarySI"), "1001Gi"),
        (Quantity.from_int(1024 * 1024 * 1024 * 1024, "BinarySI"), "1Ti"),
        (Quantity.from_int(5, "BinarySI"), "5"),
        (Quantity.from_milli(500, "BinarySI"), "500m"),
        (Quantity.from_int(1000, "BinarySI"), "1k"),
        (Quantity.from_int(1023, "BinarySI"), "1023"),
        (Quantity.from_int(1025, "BinarySI"), "1025"),
        (Quantity.from_int(1536, "BinarySI"), "1536"),
        (Quantity.from_milli(1500, "BinarySI"), "1500m"),
        (Quantity.from_int(1000 * 1000 * 1000, "DecimalSI"), "1G"),
        (Quantity.from_int(300 * 1000 * 1000, "DecimalSI"), "300M"),
        (Quantity.from_int(6 * 1000, "DecimalSI"), "6k"),
        (Quantity.from_int(1001 * 1000 * 1000 * 1000, "DecimalSI"), "1001G"),
        (Quantity.from_int(1000 * 1000 * 1000 * 1000, "DecimalSI"), "1T"),
        (Quantity.from_milli(1, "DecimalSI"), "1m"),
        (Quantity.from_int(80, "DecimalSI"), "80"),
        (Quantity.from_int(1080, "DecimalSI"), "1080"),
        (Quantity.from_int(108, "DecimalSI"), "108"),
        (Quantity.from_int(10800, "DecimalSI"), "10800"),
        (Quantity.from_milli(1, "DecimalSI"), "1m"),
        (Quantity.from_milli(80, "DecimalSI"), "80m"),
        (Quantity.from_milli(1080, "DecimalSI"), "1080m"),
        (Quantity.from_milli(108, "DecimalSI"), "108m"),
        (Quantity.from_milli(10800, "DecimalSI"), "10800m"),
        (Quantity.from_int(1000 * 1000 * 1000, "DecimalExponent"), "1e9"),
        (Quantity.from_int(300 * 1000 * 1000, "DecimalExponent"), "300e6"),
        (Quantity.from_int(6 * 1000, "DecimalExponent"), "6e3"),
        (Quantity.from_int(1001 * 1000 * 1000 * 1000, "DecimalExponent"), "1001e9"),
        (Quantity.from_int(1000 * 1000 * 1000 * 1000, "DecimalExponent"), "1e12"),
        (Quantity.from_milli(1, "DecimalExponent"), "1e-3"),
        (Quantity.from_int(80, "DecimalExponent"), "80"),
        (Quantity.from_milli(10800, "DecimalExponent"), "10800e-3"),
        (Quantity.from_int(-1, "DecimalSI"), "-1"),
        (Quantity.from_milli(-1500, "DecimalSI"), "-1500m"),
        (Quantity.from_int(-1024 * 1024, "BinarySI"), "-1Mi"),
        (Quantity.from_int(-1000, "DecimalExponent"), "-1e3"),
    ],
)
def test_canonical_string(q: Quantity, expect: str) -> None:
    assert str(q) == expect


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1000m", "1"),
        ("2000m", "2"),
        ("1500m", "1500m"),
        ("500m", "500m"),
        ("100u", "100u"),
        ("5n", "5n"),
        ("12e6", "12e6"),
        ("1E3", "1E3"),  # remembered verbatim: canonical shape, other spelling
        ("+1", "+1"),
        ("1e3", "1e3"),
        ("1.1e3", "1100"),
        ("1.1e-3", "1100e-6"),
        ("1.01e3", "1010"),
        ("100Mi", "100Mi"),
        ("1000Ki", "1000Ki"),
        ("1024Ki", "1Mi"),
        ("0.1m", "100u"),
        ("0.0001m", "100n"),
        ("0.00000001m", "1n"),
        ("1.5n", "2n"),
        ("-1.5n", "-2n"),
        ("1.", "1."),  # canonical shape, remembered verbatim
        ("  2  ", "2"),
    ],
)
def test_parse_emit(text: str, expect: str) -> None:
    assert str(parse_quantity(text)) == expect


@pytest.mark.parametrize(
    ("text", "err"),
    [
        ("1.1.M", ERR_FORMAT_WRONG),
        ("1+1.0M", ERR_FORMAT_WRONG),
        ("0.1mi", ERR_SUFFIX),
        ("0.1am", ERR_FORMAT_WRONG),
        ("aoeu", ERR_FORMAT_WRONG),
        (".5i", ERR_SUFFIX),
        ("1i", ERR_SUFFIX),
        ("-3.01i", ERR_SUFFIX),
        ("-3.01e-", ERR_SUFFIX),
        ("1e", ERR_SUFFIX),
        ("1K", ERR_SUFFIX),
        ("1KiB", ERR_FORMAT_WRONG),
        ("1 k", ERR_FORMAT_WRONG),
        ("1e1.0", ERR_FORMAT_WRONG),
        ("1e+1e", ERR_FORMAT_WRONG),
        ("1Kii", ERR_SUFFIX),
        ("", ERR_FORMAT_WRONG),
        ("Pi", ERR_NUMERIC),
        ("e-10", ERR_NUMERIC),
    ],
)
def test_parse_errors(text: str, err: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_quantity(text)
    assert str(info.value) == f"cannot parse '{text}': {err}"


def test_rejects_non_scalars() -> None:
    for bad in (True, float("nan"), float("inf"), None, [1]):
        with pytest.raises(ValueError):
            parse_quantity(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "expect"),
    [(1, "1"), (1500, "1500"), (2000, "2k"), (1.5, "1500m"), (0.25, "250m"), (-3, "-3")],
)
def test_json_numbers(raw: int | float, expect: str) -> None:
    assert str(parse_quantity(raw)) == expect


@pytest.mark.parametrize(
    ("text", "milli", "value"),
    [
        ("1", 1000, 1),
        ("500m", 500, 1),
        ("1.5", 1500, 2),
        ("0.1m", 1, 1),  # 100u: MilliValue rounds up
        ("1n", 1, 1),
        ("1001u", 2, 1),
        ("2Ki", 2048000, 2048),
        ("1e3", 1000000, 1000),
        ("0", 0, 0),
        ("-1.5", -1500, -2),  # int64Amount{-15, -1}: rounds away from zero
        ("-500m", -500, -1),  # int64 form: away from zero
        ("-1", -1000, -1),
        ("12e6", 12000000000, 12000000),
    ],
)
def test_milli_value_and_value(text: str, milli: int, value: int) -> None:
    q = parse_quantity(text)
    assert q.milli_value() == milli
    assert q.value() == value


def test_scaled_value_examples() -> None:
    # From ScaledValue's doc and amount_test.go.
    assert Quantity.from_int(1).scaled_value(-3) == 1000
    assert Quantity.from_scaled(1, -6).scaled_value(0) == 1
    assert Quantity.from_scaled(11, 4).scaled_value(5) == 2
    assert Quantity.from_scaled(10**18, 2).scaled_value(0) == 2**63 - 1  # saturates


def test_as_float() -> None:
    assert parse_quantity("1.5").as_float() == 1.5
    assert parse_quantity("100m").as_float() == 100 * 1e-3
    assert parse_quantity("1Ki").as_float() == 1024.0
    assert parse_quantity("1e400").as_float() == float("inf")
    assert Quantity.from_milli(250).as_float() == 0.25


def test_format_milli() -> None:
    assert format_milli(1500) == "1500m"
    assert format_milli(2000) == "2"
    assert format_milli(0) == "0"
    assert format_milli(2048000, "BinarySI") == "2Ki"


def test_equality_ordering_hash() -> None:
    assert parse_quantity("1") == parse_quantity("1000m") == parse_quantity("1e0")
    assert hash(parse_quantity("1")) == hash(parse_quantity("1000m"))
    assert parse_quantity("1Ki") == Quantity.from_int(1024)
    assert parse_quantity("999m") < parse_quantity("1")
    assert parse_quantity("1e1000") > parse_quantity("1e999")
    assert parse_quantity("-1e1000") < parse_quantity("1n")
    assert sorted([parse_quantity(x) for x in ("2", "1Ki", "500m")]) == [
        parse_quantity("500m"),
        parse_quantity("2"),
        parse_quantity("1Ki"),
    ]
    assert parse_quantity("1") != "1"
    assert len({parse_quantity("1"), parse_quantity("1000m"), parse_quantity("2")}) == 2


def test_arithmetic_follows_go_add() -> None:
    total = parse_quantity("1.441") + Quantity.from_int(0)
    assert str(total) == "1441m"  # Add drops the remembered string
    assert str(Quantity.from_int(0, "BinarySI") + parse_quantity("1k")) == "1k"
    assert (parse_quantity("1") - parse_quantity("250m")).milli_value() == 750


def test_immutable() -> None:
    q = parse_quantity("1")
    with pytest.raises(AttributeError):
        q.format = "BinarySI"


@given(st.integers(min_value=-(10**15), max_value=10**15), st.sampled_from([-9, -6, -3, 0, 3]))
def test_roundtrip_property(m: int, e: int) -> None:
    q = Quantity(m, e)
    printed = str(q)
    back = parse_quantity(printed)
    assert back == q
    assert str(back) == printed
    assert back.as_fraction() == Fraction(m) * Fraction(10) ** e


@given(st.integers(min_value=0, max_value=10**12))
def test_milli_value_is_ceiling(n: int) -> None:
    q = Quantity(n, -9)
    assert q.milli_value() == -((-n) // 10**6)


@given(st.text(alphabet="0123456789.+-eEinumkKMGTP ", max_size=12))
def test_any_text_parses_or_raises_value_error(text: str) -> None:
    try:
        q = parse_quantity(text)
    except ValueError as err:
        assert str(err).startswith(f"cannot parse '{text}': ")
        return
    printed = str(q)
    again = parse_quantity(printed)
    assert again == q
    assert str(again) == printed
    assert parse_quantity(q.canonical()) == q


# quantity_test.go TestQuantityParse: (input, mantissa, exponent, format).
PARSE_TABLE = [
    ("0", 0, 0, "DecimalSI"),
    ("0n", 0, 0, "DecimalSI"),
    ("0u", 0, 0, "DecimalSI"),
    ("0m", 0, 0, "DecimalSI"),
    ("0Ki", 0, 0, "BinarySI"),
    ("0k", 0, 0, "DecimalSI"),
    ("0Mi", 0, 0, "BinarySI"),
    ("0M", 0, 0, "DecimalSI"),
    ("0Gi", 0, 0, "BinarySI"),
    ("0G", 0, 0, "DecimalSI"),
    ("0Ti", 0, 0, "BinarySI"),
    ("0T", 0, 0, "DecimalSI"),
    ("1", 1, 0, "DecimalSI"),
    ("1Ki", 1024, 0, "BinarySI"),
    ("8Ki", 8 * 1024, 0, "BinarySI"),
    ("7Mi", 7 * 1024**2, 0, "BinarySI"),
    ("6Gi", 6 * 1024**3, 0, "BinarySI"),
    ("5Ti", 5 * 1024**4, 0, "BinarySI"),
    ("4Pi", 4 * 1024**5, 0, "BinarySI"),
    ("3Ei", 3 * 1024**6, 0, "BinarySI"),
    ("10Ti", 10 * 1024**4, 0, "BinarySI"),
    ("100Ti", 100 * 1024**4, 0, "BinarySI"),
    ("5n", 5, -9, "DecimalSI"),
    ("4u", 4, -6, "DecimalSI"),
    ("3m", 3, -3, "DecimalSI"),
    ("9", 9, 0, "DecimalSI"),
    ("8k", 8, 3, "DecimalSI"),
    ("50k", 5, 4, "DecimalSI"),
    ("7M", 7, 6, "DecimalSI"),
    ("6G", 6, 9, "DecimalSI"),
    ("5T", 5, 12, "DecimalSI"),
    ("40T", 4, 13, "DecimalSI"),
    ("300T", 3, 14, "DecimalSI"),
    ("2P", 2, 15, "DecimalSI"),
    ("1E", 1, 18, "DecimalSI"),
    ("1E-3", 1, -3, "DecimalExponent"),
    ("1e3", 1, 3, "DecimalExponent"),
    ("1E6", 1, 6, "DecimalExponent"),
    ("1e9", 1, 9, "DecimalExponent"),
    ("1E12", 1, 12, "DecimalExponent"),
    ("1e15", 1, 15, "DecimalExponent"),
    ("1E18", 1, 18, "DecimalExponent"),
    ("1e14", 1, 14, "DecimalExponent"),
    ("1e13", 1, 13, "DecimalExponent"),
    ("100.035k", 100035, 0, "DecimalSI"),
    ("0.001", 1, -3, "DecimalSI"),
    ("0.0005k", 5, -1, "DecimalSI"),
    ("0.005", 5, -3, "DecimalSI"),
    ("0.05", 5, -2, "DecimalSI"),
    ("0.5", 5, -1, "DecimalSI"),
    ("0.00050k", 5, -1, "DecimalSI"),
    ("0.00500", 5, -3, "DecimalSI"),
    ("0.05000", 5, -2, "DecimalSI"),
    ("0.50000", 5, -1, "DecimalSI"),
    ("0.5e0", 5, -1, "DecimalExponent"),
    ("0.5e-1", 5, -2, "DecimalExponent"),
    ("0.5e-2", 5, -3, "DecimalExponent"),
    ("10.035M", 10035, 3, "DecimalSI"),
    ("1.2e3", 12, 2, "DecimalExponent"),
    ("1.3E+6", 13, 5, "DecimalExponent"),
    ("1.40e9", 14, 8, "DecimalExponent"),
    ("1.53E12", 153, 10, "DecimalExponent"),
    ("1.6e15", 16, 14, "DecimalExponent"),
    ("1.7E18", 17, 17, "DecimalExponent"),
    ("9.01", 901, -2, "DecimalSI"),
    ("8.1k", 81, 2, "DecimalSI"),
    ("7.123456M", 7123456, 0, "DecimalSI"),
    ("6.987654321G", 6987654321, 0, "DecimalSI"),
    ("5.444T", 5444, 9, "DecimalSI"),
    ("40.1T", 401, 11, "DecimalSI"),
    ("300.2T", 3002, 11, "DecimalSI"),
    ("2.5P", 25, 14, "DecimalSI"),
    ("1.01E", 101, 16, "DecimalSI"),
    ("3.001n", 4, -9, "DecimalSI"),
    ("1.1E-9", 2, -9, "DecimalExponent"),
    ("0.0000000001", 1, -9, "DecimalSI"),
    ("0.0000000005", 1, -9, "DecimalSI"),
    ("0.00000000050", 1, -9, "DecimalSI"),
    ("0.5e-9", 1, -9, "DecimalExponent"),
    ("0.9n", 1, -9, "DecimalSI"),
    ("0.00000012345", 124, -9, "DecimalSI"),
    ("0.00000012354", 124, -9, "DecimalSI"),
    ("9Ei", 2**63 - 1, 0, "BinarySI"),
    ("9223372036854775807Ki", 2**63 - 1, 0, "BinarySI"),
    ("12E", 12, 18, "DecimalSI"),
    ("100.035Ki", 10243584, -2, "BinarySI"),
    ("0.5Mi", 512 * 1024, 0, "BinarySI"),
    ("0.05Gi", 536870912, -1, "BinarySI"),
    ("0.025Ti", 274877906944, -1, "BinarySI"),
    ("0.000000000001Ki", 2, -9, "DecimalSI"),
    (".001", 1, -3, "DecimalSI"),
    (".0001k", 100, -3, "DecimalSI"),
    ("1.", 1, 0, "DecimalSI"),
    ("1.G", 1, 9, "DecimalSI"),
]


@pytest.mark.parametrize(("text", "mantissa", "exp", "fmt"), PARSE_TABLE)
def test_upstream_parse_table(text: str, mantissa: int, exp: int, fmt: str) -> None:
    want = Quantity(mantissa, exp)
    for sign, signed in (("", want), ("+", want), ("-", -want)):
        got = parse_quantity(sign + text)
        assert got == signed, sign + text
        assert got.format == fmt, sign + text


@pytest.mark.parametrize("text", [" 1", "1 "])
def test_bare_parse_rejects_whitespace(text: str) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text, trim_space=False)
    assert parse_quantity(text) == Quantity.from_int(1)  # UnmarshalJSON trims


# quantity_test.go TestQuantityRoundUp (ScaledValue rounds the same way).
@pytest.mark.parametrize(
    ("text", "scale", "expect"),
    [
        ("9.01", -3, 9010),
        ("9.01", -2, 901),
        ("9.01", -1, 91),
        ("9.01", 0, 10),
        ("9.01", 1, 1),
        ("-9.01", -1, -91),
        ("-9.01", 0, -10),
    ],
)
def test_scaled_value_rounding(text: str, scale: int, expect: int) -> None:
    assert parse_quantity(text).scaled_value(scale) == expect


def test_upstream_cmp_table() -> None:
    assert parse_quantity("0").cmp(parse_quantity("0")) == 0
    assert parse_quantity("100m").cmp(parse_quantity("50m")) == 1
    assert parse_quantity("50m").cmp(parse_quantity("100m")) == -1
    assert parse_quantity("10000T").cmp(parse_quantity("100Gi")) == 1
