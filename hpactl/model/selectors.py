"""Label and field selectors, as k8s.io/apimachinery parses, matches and prints them.

* ``parse_selector`` is Go's ``labels.Parse``: the same lexer (whitespace `` \\t\\r\\n``,
  special symbols ``= ! ( ) , > <``), the same grammar, the same error texts, requirements
  sorted by key, value sets de-duplicated and sorted.
* ``selector_from_label_selector`` is ``metav1.LabelSelectorAsSelector`` on a raw JSON
  ``LabelSelector`` (``None`` matches nothing, ``{}`` matches everything).
* ``selector_from_set`` is ``labels.SelectorFromSet``.
* ``parse_field_selector`` is ``fields.ParseSelector`` (``=``, ``==``, ``!=`` joined by
  commas, backslash escapes) returning a matcher over a flat ``{field: value}`` mapping.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

__all__ = [
    "FieldRequirement",
    "FieldSelector",
    "Operator",
    "Requirement",
    "Selector",
    "from_set",
    "parse_field_selector",
    "parse_selector",
    "selector_from_label_selector",
    "selector_from_set",
    "validate_label_key",
    "validate_label_value",
]

Operator = Literal["in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"]
IN: Final = "in"
NOT_IN: Final = "notin"
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="
GREATER_THAN: Final = "gt"
LESS_THAN: Final = "lt"
EXISTS: Final = "exists"
DOES_NOT_EXIST: Final = "!"

_BINARY_OPERATORS: Final = ("in", "notin", "=", "==", "!=", "gt", "lt")
_VALID_OPERATORS: Final = (*_BINARY_OPERATORS, "exists", "!")

# ---- validation texts (k8s.io/apimachinery/pkg/util/validation) ------------------------------
_QNAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE: Final = re.compile(_QNAME_FMT)
_QNAME_ERR: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_QNAME_MAX: Final = 63
_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1123_SUBDOMAIN_ERR: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MAX: Final = 253
_LABEL_VALUE_FMT: Final = "(" + _QNAME_FMT + ")?"
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)
_LABEL_VALUE_ERR: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MAX: Final = 63


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def _byte_len(s: str) -> int:
    return len(s.encode("utf-8"))


def validate_label_key(key: str) -> list[str]:
    """Go ``IsQualifiedName`` messages for a label key (empty list when valid)."""
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            msgs = []
            if _byte_len(prefix) > _DNS1123_SUBDOMAIN_MAX:
                msgs.append(_max_len_error(_DNS1123_SUBDOMAIN_MAX))
            if not _DNS1123_SUBDOMAIN_RE.fullmatch(prefix):
                msgs.append(
                    _regex_error(_DNS1123_SUBDOMAIN_ERR, _DNS1123_SUBDOMAIN_FMT, "example.com")
                )
            errs.extend("prefix part " + m for m in msgs)
    else:
        return [
            "a qualified name "
            + _regex_error(_QNAME_ERR, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > _QNAME_MAX:
        errs.append("name part " + _max_len_error(_QNAME_MAX))
    if not _QNAME_RE.fullmatch(name):
        errs.append(
            "name part " + _regex_error(_QNAME_ERR, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def validate_label_value(value: str) -> list[str]:
    """Go ``IsValidLabelValue`` messages (empty list when valid)."""
    errs: list[str] = []
    if _byte_len(value) > _LABEL_VALUE_MAX:
        errs.append(_max_len_error(_LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(
            _regex_error(_LABEL_VALUE_ERR, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return errs


def _go_quote(s: str) -> str:
    """Go ``%q`` for the strings that reach error messages."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        elif not ch.isprintable():
            out.append(f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_value(v: Sequence[str]) -> str:
    """Go ``%#v`` of a []string, as field.Invalid prints a bad value list.

    Only LabelSelectorAsSelector can produce an empty list here, and it passes a nil slice.
    """
    if not v:
        return "[]string(nil)"
    return "[]string{" + ", ".join(_go_quote(x) for x in v) + "}"


def _invalid(path: str, bad: str, detail: str) -> str:
    return f"{path}: Invalid value: {bad}: {detail}"


def _aggregate(errs: list[str]) -> str:
    seen: list[str] = []
    for e in errs:
        if e not in seen:
            seen.append(e)
    return seen[0] if len(seen) == 1 else "[" + ", ".join(seen) + "]"


def _go_parse_int64(s: str) -> int | None:
    if not re.fullmatch(r"[+-]?[0-9]+", s):
        return None
    v = int(s)
    return v if -(1 << 63) <= v < (1 << 63) else None


# ---- requirements and selectors ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Requirement:
    """One label requirement; ``values`` keep the order they were given in."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    @classmethod
    def new(cls, key: str, operator: str, values: Iterable[str] = ()) -> Requirement:
        """Go ``labels.NewRequirement``: validates and raises ValueError with Go's text."""
        vals = tuple(values)
        errs: list[str] = []
        key_errs = validate_label_key(key)
        if key_errs:
            errs.append(_invalid("key", _go_quote(key), "; ".join(key_errs)))
        if operator in (IN, NOT_IN):
            if not vals:
                errs.append(
                    _invalid(
                        "values",
                        _go_value(vals),
                        "for 'in', 'notin' operators, values set can't be empty",
                    )
                )
        elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
            if len(vals) != 1:
                errs.append(
                    _invalid(
                        "values",
                        _go_value(vals),
                        "exact-match compatibility requires one single value",
                    )
                )
        elif operator in (EXISTS, DOES_NOT_EXIST):
            if vals:
                errs.append(
                    _invalid(
                        "values",
                        _go_value(vals),
                        "values set must be empty for exists and does not exist",
                    )
                )
        elif operator in (GREATER_THAN, LESS_THAN):
            if len(vals) != 1:
                errs.append(
                    _invalid(
                        "values",
                        _go_value(vals),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    )
                )
            for i, v in enumerate(vals):
                if _go_parse_int64(v) is None:
                    errs.append(
                        _invalid(
                            f"values[{i}]",
                            _go_quote(v),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        )
                    )
        else:
            supported = ", ".join(_go_quote(o) for o in _VALID_OPERATORS)
            errs.append(
                f"operator: Unsupported value: {_go_quote(operator)}: supported values: {supported}"
            )
        for i, v in enumerate(vals):
            val_errs = validate_label_value(v)
            if val_errs:
                errs.append(_invalid(f"values[{i}][{key}]", _go_quote(v), "; ".join(val_errs)))
        if errs:
            raise ValueError(_aggregate(errs))
        return cls(key, cast(Operator, operator), vals)

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            if self.key not in labels or len(self.values) != 1:
                return False
            have = _go_parse_int64(labels[self.key])
            want = _go_parse_int64(self.values[0])
            if have is None or want is None:
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        op = self.operator
        head = ("!" if op == DOES_NOT_EXIST else "") + self.key
        if op in (EXISTS, DOES_NOT_EXIST):
            return head
        sym = {
            EQUALS: "=",
            DOUBLE_EQUALS: "==",
            NOT_EQUALS: "!=",
            IN: " in ",
            NOT_IN: " notin ",
            GREATER_THAN: ">",
            LESS_THAN: "<",
        }[op]
        vals = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if op in (IN, NOT_IN):
            return f"{head}{sym}({vals})"
        return f"{head}{sym}{vals}"


class Selector:
    """A label selector: an AND of requirements, or the selector that matches nothing."""

    __slots__ = ("_nothing", "requirements")

    requirements: tuple[Requirement, ...]
    _nothing: bool

    def __init__(self, requirements: Iterable[Requirement] = (), *, nothing: bool = False) -> None:
        # Go's Add sorts by key; Python's sort is stable like Go's for small selectors.
        object.__setattr__(self, "requirements", tuple(sorted(requirements, key=lambda r: r.key)))
        object.__setattr__(self, "_nothing", nothing)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Selector is immutable")

    @classmethod
    def everything(cls) -> Selector:
        return _EVERYTHING

    @classmethod
    def nothing(cls) -> Selector:
        return _NOTHING

    @classmethod
    def from_set(cls, labels: Mapping[str, str] | None) -> Selector:
        """Go ``labels.SelectorFromSet``."""
        return selector_from_set(labels)

    @property
    def is_nothing(self) -> bool:
        return self._nothing

    def empty(self) -> bool:
        """Go ``Empty()``: true when it does not restrict anything (Nothing is not empty)."""
        return not self._nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self._nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def add(self, *reqs: Requirement) -> Selector:
        if self._nothing:
            return self
        return Selector((*self.requirements, *reqs))

    def requires_exact_match(self, label: str) -> str | None:
        """Go ``RequiresExactMatch``: the single value the selector pins ``label`` to."""
        for r in self.requirements:
            if r.key == label:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        if self._nothing:
            return ""
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return "Selector(<nothing>)" if self._nothing else f"Selector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return self._nothing == other._nothing and self.requirements == other.requirements

    def __hash__(self) -> int:
        return hash((self._nothing, self.requirements))


_EVERYTHING: Final = Selector()
_NOTHING: Final = Selector(nothing=True)


# ---- labels.Parse ----------------------------------------------------------------------------
_ERROR, _EOS, _CLOSE, _COMMA, _NOT, _DEQ, _EQ, _GT, _ID, _IN, _LT, _NEQ, _NOTIN, _OPEN = range(14)
_STRING2TOKEN: Final[dict[str, int]] = {
    ")": _CLOSE,
    ",": _COMMA,
    "!": _NOT,
    "==": _DEQ,
    "=": _EQ,
    ">": _GT,
    "in": _IN,
    "<": _LT,
    "!=": _NEQ,
    "notin": _NOTIN,
    "(": _OPEN,
}
_WHITESPACE: Final = frozenset(" \t\r\n")
_SPECIAL: Final = frozenset("=!(),><")


def _lex(s: str) -> list[tuple[int, str]]:
    items: list[tuple[int, str]] = []
    pos, n = 0, len(s)
    while True:
        while pos < n and s[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            items.append((_EOS, ""))
            return items
        if s[pos] in _SPECIAL:
            buf = ""
            last: tuple[int, str] | None = None
            while pos < n and s[pos] in _SPECIAL:
                buf += s[pos]
                pos += 1
                tok = _STRING2TOKEN.get(buf)
                if tok is not None:
                    last = (tok, buf)
                elif last is not None:
                    pos -= 1
                    break
            if last is None:
                items.append((_ERROR, f"error expected: keyword found '{buf}'"))
            else:
                items.append(last)
        else:
            start = pos
            while pos < n and s[pos] not in _SPECIAL and s[pos] not in _WHITESPACE:
                pos += 1
            word = s[start:pos]
            items.append((_STRING2TOKEN.get(word, _ID), word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def _adjust(self, tok: int, values: bool) -> int:
        return _ID if values and tok in (_IN, _NOTIN) else tok

    def lookahead(self, values: bool) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        return self._adjust(tok, values), lit

    def consume(self, values: bool) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        self.pos += 1
        return self._adjust(tok, values), lit

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead(True)
            if tok in (_ID, _NOT):
                try:
                    reqs.append(self.parse_requirement())
                except ValueError as err:
                    raise ValueError(f"unable to parse requirement: {err}") from None
                t, lit2 = self.consume(True)
                if t == _EOS:
                    return reqs
                if t == _COMMA:
                    t2, l2 = self.lookahead(True)
                    if t2 not in (_ID, _NOT):
                        raise ValueError(f"found '{l2}', expected: identifier after ','")
                else:
                    raise ValueError(f"found '{lit2}', expected: ',' or 'end of string'")
            elif tok == _EOS:
                return reqs
            else:
                raise ValueError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def parse_requirement(self) -> Requirement:
        key, op = self.parse_key_and_infer_operator()
        if op in (EXISTS, DOES_NOT_EXIST):
            return Requirement.new(key, op, ())
        op = self.parse_operator()
        values = self.parse_values() if op in (IN, NOT_IN) else self.parse_exact_value()
        return Requirement.new(key, op, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self.consume(True)
        if tok == _NOT:
            op = DOES_NOT_EXIST
            tok, lit = self.consume(True)
        if tok != _ID:
            raise ValueError(f"found '{lit}', expected: identifier")
        errs = validate_label_key(lit)
        if errs:
            raise ValueError(_invalid("<nil>", _go_quote(lit), "; ".join(errs)))
        t, _ = self.lookahead(True)
        if t in (_EOS, _COMMA) and op != DOES_NOT_EXIST:
            op = EXISTS
        return lit, op

    def parse_operator(self) -> str:
        tok, lit = self.consume(False)
        ops = {
            _IN: IN,
            _EQ: EQUALS,
            _DEQ: DOUBLE_EQUALS,
            _GT: GREATER_THAN,
            _LT: LESS_THAN,
            _NOTIN: NOT_IN,
            _NEQ: NOT_EQUALS,
        }
        if tok not in ops:
            raise ValueError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return ops[tok]

    def parse_values(self) -> set[str]:
        tok, lit = self.consume(True)
        if tok != _OPEN:
            raise ValueError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(True)
        if tok in (_ID, _COMMA):
            values = self.parse_identifiers_list()
            if self.consume(True)[0] != _CLOSE:
                raise ValueError(f"found '{lit}', expected: ')'")
            return values
        if tok == _CLOSE:
            self.consume(True)
            return {""}
        raise ValueError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume(True)
            if tok == _ID:
                values.add(lit)
                tok2, lit2 = self.lookahead(True)
                if tok2 == _COMMA:
                    continue
                if tok2 == _CLOSE:
                    return values
                raise ValueError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _COMMA:
                if not values:
                    values.add("")
                tok2, _ = self.lookahead(True)
                if tok2 == _CLOSE:
                    values.add("")
                    return values
                if tok2 == _COMMA:
                    values.add("")
                continue
            raise ValueError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        tok, _ = self.lookahead(True)
        if tok in (_EOS, _COMMA):
            return {""}
        tok, lit = self.consume(True)
        if tok == _ID:
            return {lit}
        raise ValueError(f"found '{lit}', expected: identifier")


@functools.lru_cache(maxsize=131_072)
def parse_selector(text: str) -> Selector:
    """Go ``labels.Parse``; raises ValueError carrying Go's error text.

    Memoized by text (a ``Selector`` is immutable; errors are not cached): one sync
    parses its target's selector in several places (pods, validation, metrics), and
    each HPA's selector text stays the same from period to period. The bound holds
    one text per HPA at 50,000 HPAs with room (~375 B each): the syncs visit the HPAs
    in a cycle, so an LRU smaller than the HPA count misses on every lookup (at
    16,384 entries, 25,000 HPAs re-parsed most selectors each period).
    """
    return Selector(_Parser(text).parse())


def selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """Go ``labels.SelectorFromSet`` (no validation; empty/None → everything)."""
    if not labels:
        return _EVERYTHING
    return Selector(Requirement(k, EQUALS, (v,)) for k, v in labels.items())


from_set = selector_from_set

_LABEL_SELECTOR_OPS: Final[dict[str, str]] = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}


def selector_from_label_selector(raw: Mapping[str, Any] | None) -> Selector:
    """Go ``metav1.LabelSelectorAsSelector`` on a raw ``LabelSelector`` JSON object."""
    if raw is None:
        return _NOTHING
    match_labels: Mapping[str, str] = raw.get("matchLabels") or {}
    match_exprs: Sequence[Mapping[str, Any]] = raw.get("matchExpressions") or []
    if len(match_labels) + len(match_exprs) == 0:
        return _EVERYTHING
    reqs: list[Requirement] = []
    # Go ranges over the map in random order; keys are unique, so sorting hides it.
    for k in sorted(match_labels):
        reqs.append(Requirement.new(k, EQUALS, (match_labels[k],)))
    for expr in match_exprs:
        raw_op = expr.get("operator", "")
        op = _LABEL_SELECTOR_OPS.get(raw_op)
        if op is None:
            raise ValueError(f"{_go_quote(str(raw_op))} is not a valid label selector operator")
        reqs.append(Requirement.new(expr.get("key", ""), op, list(expr.get("values") or [])))
    return Selector(reqs)


# ---- fields.ParseSelector ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    operator: Literal["=", "!="]
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        have = fields.get(self.field, "")
        return have == self.value if self.operator == "=" else have != self.value

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return f"{self.field}{self.operator}{escaped}"


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """An AND of field terms; a missing field reads as the empty string, as in Go."""

    requirements: tuple[FieldRequirement, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all(r.matches(fields) for r in self.requirements)

    def empty(self) -> bool:
        return not self.requirements

    def fields(self) -> frozenset[str]:
        return frozenset(r.field for r in self.requirements)

    def requires_exact_match(self, field: str) -> str | None:
        for r in self.requirements:
            if r.field == field and r.operator == "=":
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _split_terms(text: str) -> list[str]:
    if not text:
        return []
    terms: list[str] = []
    start, in_slash = 0, False
    for i, c in enumerate(text):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _unescape_value(s: str) -> str:
    if not any(c in s for c in "\\,="):
        return s
    out: list[str] = []
    in_slash = False
    for c in s:
        if in_slash:
            if c in "\\,=":
                out.append(c)
            else:
                raise ValueError(f"invalid field selector: invalid escape sequence: \\{c}")
            in_slash = False
            continue
        if c == "\\":
            in_slash = True
        elif c in ",=":
            raise ValueError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise ValueError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text: str) -> FieldSelector:
    """Go ``fields.ParseSelector``; terms are sorted as Go sorts them."""
    reqs: list[FieldRequirement] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        for i in range(len(part)):
            rest = part[i:]
            op = next((o for o in ("!=", "==", "=") if rest.startswith(o)), None)
            if op is not None:
                lhs, rhs = part[:i], part[i + len(op) :]
                break
        else:
            raise ValueError(f"invalid selector: '{text}'; can't understand '{part}'")
        reqs.append(FieldRequirement(lhs, "!=" if op == "!=" else "=", _unescape_value(rhs)))
    return FieldSelector(tuple(reqs))
