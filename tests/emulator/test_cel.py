"""The emulator's CEL subset: values, operators and their error absorption, macros,
functions, runtime errors and cel-go's compile error text."""

from __future__ import annotations

from typing import Any

import pytest

from hpactl.emulator import cel

SELF: dict[str, Any] = {
    "name": "web",
    "min": 1,
    "max": 10,
    "ratio": 0.5,
    "tags": ["a", "b"],
    "labels": {"app": "web"},
    "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
    "target": "500m",
}


def run(rule: str, self: Any = SELF, old: Any = None) -> Any:
    variables = {"self": self} if old is None else {"self": self, "oldSelf": old}
    return cel.compile_rule(rule).evaluate(variables)


@pytest.mark.parametrize(
    "rule",
    [
        "true",
        "!false",
        "1 + 2 * 3 == 7",
        "(1 + 2) * 3 == 9",
        "7 / 2 == 3 && -7 / 2 == -3 && -7 % 2 == -1 && 7 % -2 == 1",
        "0x10 == 16 && 3u == 3",
        "1.5 + 1.5 == 3.0 && 1 == 1.0 && 2 > 1.5",
        "'a' + \"b\" == 'ab' && r'\\n' == '\\\\n' && '''x''' == 'x' && '\\x41\\u0042' == 'AB'",
        "[1, 2] + [3] == [1, 2, 3] && {'a': 1}['a'] == 1 && {'a': [1]} == {'a': [1]}",
        "null == null && self.name != null",
        "self.min < self.max && self.max >= 10 && self.min <= 1 && self.name > 'a'",
        "self.min > 5 ? false : true",
        "has(self.name) && !has(self.missing) && has(self.labels.app)",
        "size(self.tags) == 2 && self.tags.size() == 2 && size('héllo') == 5 && size(self.labels) == 1",
        "'a' in self.tags && !('z' in self.tags) && 'app' in self.labels",
        "self.tags.all(t, t.size() == 1) && self.tags.exists(t, t == 'b')",
        "self.tags.exists_one(t, t == 'a') && !['a', 'a'].exists_one(t, t == 'a')",
        "self.ports.map(p, p.port) == [80, 443] && self.ports.filter(p, p.port > 100).size() == 1",
        "self.ports.map(p, p.port > 100, p.name) == ['https']",
        "self.labels.all(k, k == 'app')",
        "self.name.startsWith('w') && self.name.endsWith('b') && self.name.contains('e')",
        "self.name.matches('^[a-z]+$') && !self.name.matches('^[0-9]+$')",
        "'AbC'.lowerAscii() == 'abc' && 'abc'.upperAscii() == 'ABC' && ' x '.trim() == 'x'",
        "'a,b'.split(',') == ['a', 'b'] && ['a', 'b'].join('-') == 'a-b'",
        "int('42') == 42 && string(42) == '42' && double(1) == 1.0 && int(2.7) == 2",
        "[3, 1, 2].sum() == 6 && [3, 1, 2].min() == 1 && [3, 1, 2].max() == 3",
        "[1, 2, 3].isSorted() && ![2, 1].isSorted() && [1, 2].indexOf(2) == 1",
        "quantity(self.target).isLessThan(quantity('1')) && quantity('2Gi').isGreaterThan(quantity('2G'))",
        "quantity('1500m').compareTo(quantity('1.5')) == 0 && quantity('-1').sign() == -1",
        "isQuantity('10Mi') && !isQuantity('ten') && quantity('3').asInteger() == 3",
        "self.ratio * 2.0 == 1.0",
    ],
)
def test_true_rules(rule: str) -> None:
    assert run(rule) is True


def test_logic_absorbs_errors_as_cel_does() -> None:
    # `||`/`&&` are commutative: an error on one side is absorbed by a deciding other side
    assert run("self.missing == 1 || true") is True
    assert run("true || self.missing == 1") is True
    assert run("self.missing == 1 && false") is False
    with pytest.raises(cel.CelEvalError, match="no such key: missing"):
        run("self.missing == 1 || false")
    # exists absorbs an error when another element decides
    assert run("[{'a': 1}, {}].exists(x, x.a == 1)") is True


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ("self.missing > 0", "no such key: missing"),
        ("self.tags[5] == 'a'", "index out of bounds: 5"),
        ("self.max / 0 == 1", "division by zero"),
        ("self.max % 0 == 1", "modulus by zero"),
        ("9223372036854775807 + 1 > 0", "integer overflow"),
        ("self.name > 1", "no such overload"),
        ("self.name + 1 == 'x'", "no such overload"),
        ("!self.name", "no such overload"),
        ("quantity('ten').sign() == 1", "quantities must match the regular expression"),
    ],
)
def test_runtime_errors(rule: str, error: str) -> None:
    with pytest.raises(cel.CelEvalError, match=error):
        run(rule)


def test_old_self_and_transition_rules() -> None:
    program = cel.compile_rule("self == oldSelf")
    assert program.uses_old_self
    assert program.evaluate({"self": 1, "oldSelf": 1}) is True
    assert program.evaluate({"self": 2, "oldSelf": 1}) is False
    assert not cel.compile_rule("self > 0").uses_old_self


def test_syntax_error_text_is_cel_gos() -> None:
    with pytest.raises(cel.CelCompileError) as err:
        cel.compile_rule("self.x ==")
    assert str(err.value) == (
        "ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>' expecting <expression>\n"
        " | self.x ==\n"
        " | .........^"
    )


def test_undeclared_references_sorted_by_position() -> None:
    with pytest.raises(cel.CelCompileError) as err:
        cel.compile_rule("ip(self).family() == 6")
    assert str(err.value) == (
        "ERROR: <input>:1:3: undeclared reference to 'ip' (in container '')\n"
        " | ip(self).family() == 6\n"
        " | ..^\n"
        "ERROR: <input>:1:16: undeclared reference to 'family' (in container '')\n"
        " | ip(self).family() == 6\n"
        " | ...............^"
    )
    with pytest.raises(cel.CelCompileError, match="undeclared reference to 'other'"):
        cel.compile_rule("other > 1")


def test_fields_are_checked_against_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "l": {"type": "array", "items": {"type": "object", "properties": {"x": {}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }

    def lookup(parent: Any, name: str) -> Any:
        if not isinstance(parent, dict):
            return ...
        if name == "[]":
            return parent.get("items") or parent.get("additionalProperties") or ...
        props = parent.get("properties") or {}
        if name in props:
            return props[name]
        if "additionalProperties" in parent:
            return parent["additionalProperties"]
        if parent.get("x-kubernetes-preserve-unknown-fields") or not props:
            return ...
        return None

    ok = "self.a > 0 && self.m.anything == 'x' && self.l.all(i, i.x == 1) && self.free.y == 1"
    cel.compile_rule(ok, ("self",), schema, lookup)
    with pytest.raises(cel.CelCompileError) as err:
        cel.compile_rule("self.l.all(i, i.y == 1)", ("self",), schema, lookup)
    assert "ERROR: <input>:1:16: undefined field 'y'" in str(err.value)


TYPED = {
    "type": "object",
    "properties": {
        "n": {"type": "string"},
        "i": {"type": "integer"},
        "d": {"type": "number"},
        "l": {"type": "array", "items": {"type": "string"}},
        "m": {"type": "object", "additionalProperties": {"type": "integer"}},
        "q": {
            "x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
        },
        "t": {"type": "string", "format": "date-time"},
    },
}


def typed(rule: str, result: str = "bool") -> None:
    def lookup(parent: Any, name: str) -> Any:
        if name == "[]":
            return parent.get("items") or parent.get("additionalProperties") or ...
        return (parent.get("properties") or {}).get(name, parent.get("additionalProperties"))

    cel.compile_rule(rule, ("self", "oldSelf"), TYPED, lookup, result)


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ("self.n == 1", "1:8: found no matching overload for '_==_' applied to '(string, int)'"),
        (
            "self.i + self.d > 0",
            "1:8: found no matching overload for '_+_' applied to '(int, double)'",
        ),
        ("size(self.i) > 0", "1:5: found no matching overload for 'size' applied to '(int)'"),
        ("!self.i", "1:1: found no matching overload for '!_' applied to '(int)'"),
        (
            "self.i in self.n",
            "1:8: found no matching overload for '@in' applied to '(int, string)'",
        ),
        (
            "self.l.exists(x, x == 1)",
            "1:20: found no matching overload for '_==_' applied to '(string, int)'",
        ),
        ("self.n.x == 1", "1:7: type 'string' does not support field selection"),
        (
            "self.i > 0 && self.n",
            "1:12: found no matching overload for '_&&_' applied to '(bool, string)'",
        ),
    ],
)
def test_type_errors_where_both_types_are_known(rule: str, error: str) -> None:
    with pytest.raises(cel.CelCompileError) as err:
        typed(rule)
    assert str(err.value).startswith(f"ERROR: <input>:{error}\n | {rule}\n")


@pytest.mark.parametrize(
    "rule",
    [
        "self.i < self.d && self.i == 1.0",  # numbers compare across int and double
        "self.q > 0 || self.q == 'x'",  # int-or-string is dyn
        "self.t == 'x'",  # timestamps are not modelled: dyn, never flagged
        "self.m.all(k, self.m[k] > 0) && self.l.all(x, x.startsWith('a'))",
        "self.i == null || self.n + 'a' == 'b'",
    ],
)
def test_well_typed_rules_compile(rule: str) -> None:
    typed(rule)


def test_result_type() -> None:
    with pytest.raises(cel.CelResultTypeError, match=r"^cel expression must evaluate to a bool$"):
        typed("self.i")
    with pytest.raises(cel.CelResultTypeError, match="messageExpression must evaluate to a string"):
        typed("self.i", "string")
    typed("'n is ' + self.n", "string")


@pytest.mark.parametrize(
    "rule",
    [
        "__import__('os').system('true')",
        "open('/etc/passwd')",
        "b'bytes' == b'bytes'",
        "self.x = 1",
        "if true",
        "[1, 2",
        "'unterminated",
    ],
)
def test_anything_outside_the_subset_does_not_compile(rule: str) -> None:
    with pytest.raises(cel.CelCompileError, match=r"^ERROR: <input>:\d+:\d+: "):
        cel.compile_rule(rule)


def test_python_attributes_are_just_missing_keys() -> None:
    with pytest.raises(cel.CelEvalError, match="no such key: __class__"):
        run("self.__class__ == 1")


def test_deep_nesting_is_refused_not_crashing() -> None:
    with pytest.raises(cel.CelCompileError, match="recursion limit"):
        cel.compile_rule("(" * 400 + "1" + ")" * 400)
    with pytest.raises(cel.CelCompileError, match="recursion limit"):
        cel.compile_rule(" + ".join(["1"] * 5000) + " > 0")
    assert run("(((1))) + 2 == 3")
