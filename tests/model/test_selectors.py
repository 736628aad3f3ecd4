"""Selector facts from k8s.io/apimachinery labels/selector_test.go, fields/selector_test.go
and metav1 LabelSelectorAsSelector."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hpactl.model.selectors import (
    Requirement,
    Selector,
    parse_field_selector,
    parse_selector,
    selector_from_label_selector,
    selector_from_set,
)

GOOD = ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"]


@pytest.mark.parametrize("text", GOOD)
def test_parse_restring(text: str) -> None:
    assert str(parse_selector(text)) == text.replace(" ", "")


@pytest.mark.parametrize(
    "text",
    [
        "x=a||y=b",
        "x==a==b",
        "!x=a",
        "x<a",
        ",x,y",
        "x nott in (y)",
        "a in (xyz),",
        "a in (xyz)b notin ()",
        "a in (xyz abc)",
        "a notin(",
        "a (",
        "(",
        "x=a,",
        "x in (a",
        "=x",
        "x y",
        "z<-1",
    ],
)
def test_parse_bad(text: str) -> None:
    with pytest.raises(ValueError):
        parse_selector(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "x=a||y",
            'unable to parse requirement: values[0][x]: Invalid value: "a||y": a valid '
            "label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
            "'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        (",x", "found ',', expected: !, identifier, or 'end of string'"),
        ("x=a,", "found '', expected: identifier after ','"),
        ("x y", "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
        ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("x=(", "unable to parse requirement: found '(', expected: identifier"),
        (
            "x<a",
            'unable to parse requirement: values[0]: Invalid value: "a": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "x~y=1",
            'unable to parse requirement: <nil>: Invalid value: "x~y": name part must consist '
            "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            "x=a@b",
            'unable to parse requirement: values[0][x]: Invalid value: "a@b": a valid label must '
            "be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
            "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        ("x=a=", "found '=', expected: ',' or 'end of string'"),
        (
            "x>",
            'unable to parse requirement: values[0]: Invalid value: "": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("x=>1", "unable to parse requirement: found '>', expected: identifier"),
        ("x=!", "unable to parse requirement: found '!', expected: identifier"),
    ],
)
def test_parse_error_messages(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_selector(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("text", "string"),
    [
        ("\rx", "x"),
        ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
        (
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
            "this-is-another-dns.domain.com/key-with-dash in (so,what)",
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
        ),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("x  notin\t\t\t(abc,def)", "x notin (abc,def)"),
        ("x in (def,abc)", "x in (abc,def)"),
        ("x in (abc,)", "x in (,abc)"),
        ("x in ()", "x in ()"),
        ("x notin (abc,def),bar,z in (),w", "bar,w,x notin (abc,def),z in ()"),
        ("x,y in (a)", "x,y in (a)"),
        ("x,y", "x,y"),
        ("x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)"),
        ("x notin ( )", "x notin ()"),
        ("x notin (, a)", "x notin (,a)"),
        ("x in (,,a)", "x in (,a)"),
        ("a ", "a"),
        ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
        ("x=a,a=x", "a=x,x=a"),
        ("a=x,x=a", "a=x,x=a"),
        ("notin=in", "notin=in"),
        ("x==a", "x==a"),
        ("x in (b,a,b)", "x in (a,b)"),
        ("z!=a,z", "z!=a,z"),
    ],
)
def test_parse_to_string(text: str, string: str) -> None:
    assert str(parse_selector(text)) == string


MATCHES = [
    ("", {"x": "y"}, True),
    ("x=y", {"x": "y"}, True),
    ("x=y,z=w", {"x": "y", "z": "w"}, True),
    ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
    ("notin=in", {"notin": "in"}, True),
    ("x", {"x": "z"}, True),
    ("!x", {"y": "z"}, True),
    ("x>1", {"x": "2"}, True),
    ("x<1", {"x": "0"}, True),
    ("x=z", {}, False),
    ("x=y", {"x": "z"}, False),
    ("x=y,z=w", {"x": "w", "z": "w"}, False),
    ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
    ("x", {"y": "z"}, False),
    ("!x", {"x": "z"}, False),
    ("x>1", {"x": "0"}, False),
    ("x<1", {"x": "2"}, False),
    ("foo=bar", {"foo": "bar", "baz": "blah"}, True),
    ("foo=bar,baz=blah", {"foo": "bar", "baz": "blah"}, True),
    ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}, False),
    ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
    ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
    ("x notin (),y", {"y": ""}, True),
    ("!x,y", {"y": ""}, True),
    ("x notin (),!y", {"y": ""}, False),
    ("x in ()", {"y": "baz"}, False),
    ("x in ()", {"x": ""}, True),
    ("z>1", {"z": "2"}, True),
    ("z>1", {"z": "v2"}, False),
    ("z<10", {"z": "-5"}, True),
    ("x=", {"x": ""}, True),
    ("x=", {}, False),
    ("x!=", {}, True),
]


@pytest.mark.parametrize(("text", "labels", "expect"), MATCHES)
def test_matches(text: str, labels: dict[str, str], expect: bool) -> None:
    assert parse_selector(text).matches(labels) is expect


def test_everything_nothing() -> None:
    assert Selector.everything().matches({"x": "y"})
    assert Selector.everything().empty()
    assert str(Selector.everything()) == ""
    assert not Selector.nothing().matches({})
    assert not Selector.nothing().empty()
    assert Selector.nothing().is_nothing
    assert str(Selector.nothing()) == ""
    assert parse_selector("").empty()


def test_from_set() -> None:
    labels = {"foo": "bar", "baz": "blah"}
    assert selector_from_set({}).matches(labels)
    assert selector_from_set(None).empty()
    assert selector_from_set({"foo": "bar"}).matches(labels)
    assert selector_from_set({"foo": "bar", "baz": "blah"}).matches(labels)
    assert not selector_from_set({"foo": "baz"}).matches(labels)
    assert str(selector_from_set({"b": "2", "a": "1"})) == "a=1,b=2"


def test_requirement_constructor() -> None:
    ok = [
        ("x", "in", ["foo"]),
        ("x", "notin", ["foo"]),
        ("x", "exists", []),
        ("x", "!", []),
        ("1foo", "in", ["bar"]),
        ("1234", "in", ["bar"]),
        ("y", "gt", ["1"]),
        ("z", "lt", ["6"]),
    ]
    for key, op, vals in ok:
        Requirement.new(key, op, vals)
    bad = [
        ("x", "in", []),
        ("x", "notin", []),
        ("foo", "gt", ["bar"]),
        ("barz", "lt", ["blah"]),
        ("a" * 254, "exists", []),
        ("x", "=", ["a", "b"]),
        ("x", "exists", ["a"]),
        ("x", "bogus", ["a"]),
    ]
    for key, op, vals in bad:
        with pytest.raises(ValueError):
            Requirement.new(key, op, vals)


def test_to_string_table() -> None:
    def sel(*reqs: tuple[str, str, list[str]]) -> str:
        return str(Selector(Requirement.new(k, o, v) for k, o, v in reqs))

    assert (
        sel(("x", "in", ["abc", "def"]), ("y", "notin", ["jkl"]), ("z", "exists", []))
        == "x in (abc,def),y notin (jkl),z"
    )
    assert (
        sel(("x", "notin", ["abc", "def"]), ("y", "!=", ["jkl"]), ("z", "!", []))
        == "x notin (abc,def),y!=jkl,!z"
    )
    assert (
        sel(("x", "notin", ["abc"]), ("y", "in", ["jkl", "mno"]), ("z", "notin", [""]))
        == "x notin (abc),y in (jkl,mno),z notin ()"
    )
    assert (
        sel(("x", "=", ["abc"]), ("y", "==", ["jkl"]), ("z", "!=", ["a"]), ("z", "exists", []))
        == "x=abc,y==jkl,z!=a,z"
    )
    assert sel(("x", "gt", ["2"]), ("y", "lt", ["8"]), ("z", "exists", [])) == "x>2,y<8,z"


def test_label_selector_as_selector() -> None:
    assert selector_from_label_selector(None).is_nothing
    assert selector_from_label_selector({}).empty()
    assert selector_from_label_selector({"matchLabels": {}, "matchExpressions": []}).empty()
    s = selector_from_label_selector(
        {
            "matchLabels": {"app": "web", "tier": "fe"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["b", "a"]},
                {"key": "owner", "operator": "Exists"},
            ],
        }
    )
    assert str(s) == "app=web,!canary,env in (dev,prod),owner,tier=fe,zone notin (a,b)"
    assert s.matches({"app": "web", "tier": "fe", "env": "prod", "owner": "x"})
    assert not s.matches({"app": "web", "tier": "fe", "env": "prod", "owner": "x", "zone": "a"})
    assert not s.matches({"app": "web", "tier": "fe", "env": "qa", "owner": "x"})
    assert s.requires_exact_match("app") == "web"
    assert s.requires_exact_match("env") is None


def test_label_selector_errors() -> None:
    with pytest.raises(ValueError) as info:
        selector_from_label_selector(
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}
        )
    assert str(info.value) == '"Equals" is not a valid label selector operator'
    with pytest.raises(ValueError) as info:
        selector_from_label_selector({"matchExpressions": [{"key": "a", "operator": "In"}]})
    assert str(info.value) == (
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
    )
    with pytest.raises(ValueError) as info:
        selector_from_label_selector({"matchLabels": {"a b": "x"}})
    assert str(info.value).startswith('key: Invalid value: "a b": name part must consist')


_ident = st.from_regex(r"[a-z]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)


@given(st.dictionaries(_ident, _ident, max_size=5), st.dictionaries(_ident, _ident, max_size=5))
def test_set_selector_roundtrip(want: dict[str, str], labels: dict[str, str]) -> None:
    sel = selector_from_set(want)
    again = parse_selector(str(sel))
    assert str(again) == str(sel)
    expect = all(labels.get(k) == v for k, v in want.items())
    assert sel.matches(labels) is expect
    assert again.matches(labels) is expect


# ---- field selectors -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "string"),
    [
        ("metadata.name=foo", "metadata.name=foo"),
        ("metadata.name==foo", "metadata.name=foo"),
        ("metadata.name!=foo", "metadata.name!=foo"),
        ("b=2,a=1", "a=1,b=2"),
        ("x=a\\,b", "x=a\\,b"),
        ("x=a\\=b", "x=a\\=b"),
        ("x=a\\\\b", "x=a\\\\b"),
        ("", ""),
        ("x=", "x="),
        (",x=1,", "x=1"),
    ],
)
def test_field_selector_string(text: str, string: str) -> None:
    assert str(parse_field_selector(text)) == string


def test_field_selector_matches() -> None:
    sel = parse_field_selector("metadata.name=foo,metadata.namespace!=kube-system")
    assert sel.matches({"metadata.name": "foo", "metadata.namespace": "default"})
    assert not sel.matches({"metadata.name": "foo", "metadata.namespace": "kube-system"})
    assert not sel.matches({"metadata.name": "bar", "metadata.namespace": "default"})
    assert sel.fields() == {"metadata.name", "metadata.namespace"}
    assert sel.requires_exact_match("metadata.name") == "foo"
    # A missing field reads as "".
    assert parse_field_selector("spec.nodeName=").matches({})
    assert parse_field_selector("x=a\\,b").matches({"x": "a,b"})
    assert parse_field_selector("").empty()
    assert parse_field_selector("").matches({"a": "b"})
    # No whitespace trimming: the field name keeps its space.
    assert parse_field_selector("a =b").fields() == {"a "}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("foo", "invalid selector: 'foo'; can't understand 'foo'"),
        ("a=1,bar", "invalid selector: 'a=1,bar'; can't understand 'bar'"),
        ("x=a=b", "invalid field selector: unescaped character in value: 61"),
        ("x=a\\b", "invalid field selector: invalid escape sequence: \\b"),
        ("x=a\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_field_selector_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_field_selector(text)
    assert str(info.value) == message


def test_from_set_aliases() -> None:
    from hpactl.model.selectors import from_set

    assert str(Selector.from_set({"a": "1"})) == "a=1"
    assert from_set({"a": "1"}).matches({"a": "1"})
    assert Selector.from_set(None).empty()


@given(st.text(alphabet="ab=!(),<> \tin1.", max_size=16))
def test_any_text_parses_or_raises_and_prints_stably(text: str) -> None:
    try:
        sel = parse_selector(text)
    except ValueError:
        return
    printed = str(sel)
    again = parse_selector(printed)
    assert str(again) == printed
    assert again == sel


def test_parse_is_memoized_by_text_and_errors_are_raised_every_time() -> None:
    text = "app=web,tier in (a,b)"
    first = parse_selector(text)
    assert parse_selector(text) is first  # immutable, so one object serves every caller
    assert first.matches({"app": "web", "tier": "b"})
    for _ in range(2):
        with pytest.raises(ValueError):
            parse_selector("app in (")
