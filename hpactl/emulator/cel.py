"""A small CEL interpreter for CRD `x-kubernetes-validations` rules.

Parses and evaluates the subset of the Common Expression Language that CRD rules
use (no Python `eval`): literals, `self`/`oldSelf`, field selection and indexing,
`has()`, `!`/`-`, arithmetic, comparisons, `in`, `&&`/`||` with CEL's error
absorption, `?:`, `size()`, string functions, the list macros `all`, `exists`,
`exists_one`, `map`, `filter`, and Kubernetes' `quantity()` library. Anything else
fails to compile with cel-go's error shape (`ERROR: <input>:1:3: ...` plus the
caret line), which the API server reports when a CRD is created.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hpactl.model.quantity import parse_quantity

# Nesting (parentheses, operator chains) beyond this does not compile: evaluation
# recurses once per level.
MAX_DEPTH = 64
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class CelCompileError(Exception):
    """A rule cel-go would refuse to compile; str() is cel-go's error text."""


class CelEvalError(Exception):
    """A runtime error (`no such key: x`, `division by zero`, ...)."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """A resource.Quantity as the Kubernetes CEL library exposes it."""

    text: str
    milli: int


# ---- lexer --------------------------------------------------------------------------------

_PUNCT: tuple[str, ...] = (
    "==",
    "!=",
    "<=",
    ">=",
    "&&",
    "||",
    "<",
    ">",
    "+",
    "-",
    "*",
    "/",
    "%",
    "!",
    "?",
    ":",
)
_PUNCT += (".", ",", "(", ")", "[", "]", "{", "}")
_KEYWORDS = {"true", "false", "null", "in"}
_RESERVED = {
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
}
_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F]+[uU]?|\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?"
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "num", "str", "ident", "punct", "eof"
    text: str
    pos: int
    value: Any = None


def _unescape(body: str, raw: bool, pos: int, src: str) -> str:
    if raw:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in ("x", "X") and re.fullmatch(r"[0-9a-fA-F]{2}", body[i + 2 : i + 4]):
            out.append(chr(int(body[i + 2 : i + 4], 16)))
            i += 4
        elif nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[i + 2 : i + 6]):
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt == "U" and re.fullmatch(r"[0-9a-fA-F]{8}", body[i + 2 : i + 10]):
            out.append(chr(int(body[i + 2 : i + 10], 16)))
            i += 10
        elif re.fullmatch(r"[0-3][0-7]{2}", body[i + 1 : i + 4]):
            out.append(chr(int(body[i + 1 : i + 4], 8)))
            i += 4
        else:
            raise _syntax(src, pos, "token recognition error at: '\\" + nxt + "'")
    return "".join(out)


def _syntax(src: str, pos: int, msg: str) -> CelCompileError:
    return CelCompileError(format_error(src, pos, f"Syntax error: {msg}"))


def tokenize(src: str) -> list[Token]:
    toks: list[Token] = []
    i = 0
    n = len(src)
    while i < n:
        c = src[i]
        if c in " \t\r\n\f":
            i += 1
            continue
        if src.startswith("//", i):
            while i < n and src[i] != "\n":
                i += 1
            continue
        start = i
        raw = False
        if c in "rR" and i + 1 < n and src[i + 1] in "'\"":
            raw = True
            i += 1
            c = src[i]
        if c in "bB" and i + 1 < n and src[i + 1] in "'\"":
            raise CelCompileError(format_error(src, start, "bytes literals are not supported"))
        if c in "'\"":
            quote = src[i : i + 3] if src[i : i + 3] in ("'''", '"""') else c
            j = i + len(quote)
            while j < n and not src.startswith(quote, j):
                if src[j] == "\\" and not raw:
                    j += 2
                    continue
                if src[j] == "\n" and len(quote) == 1:
                    break
                j += 1
            if j >= n or not src.startswith(quote, j):
                raise _syntax(src, start, f"token recognition error at: '{src[start:]}'")
            body = src[i + len(quote) : j]
            toks.append(
                Token("str", src[start : j + len(quote)], start, _unescape(body, raw, start, src))
            )
            i = j + len(quote)
            continue
        if c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            m = _NUMBER.match(src, i)
            assert m is not None
            text = m.group(0)
            if text[:2].lower() == "0x":
                value: Any = int(text.rstrip("uU"), 16)
            elif any(ch in text for ch in ".eE") and not text.lower().startswith("0x"):
                value = float(text)
            else:
                value = int(text.rstrip("uU"))
            toks.append(Token("num", text, start, value))
            i = m.end()
            continue
        m = _IDENT.match(src, i)
        if m:
            toks.append(Token("ident", m.group(0), start))
            i = m.end()
            continue
        for p in _PUNCT:
            if src.startswith(p, i):
                toks.append(Token("punct", p, start))
                i += len(p)
                break
        else:
            raise _syntax(src, start, f"token recognition error at: '{c}'")
    toks.append(Token("eof", "<EOF>", n))
    return toks


def format_error(src: str, pos: int, msg: str) -> str:
    """cel-go's error text: location, message, the source line and a caret under it."""
    line_no = src.count("\n", 0, pos) + 1
    line_start = src.rfind("\n", 0, pos) + 1
    line_end = src.find("\n", pos)
    line = src[line_start : line_end if line_end >= 0 else len(src)]
    col = pos - line_start
    return f"ERROR: <input>:{line_no}:{col + 1}: {msg}\n | {line}\n | {'.' * col}^"


# ---- AST ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Node:
    op: str  # lit, ident, select, index, call, list, map, unary, binary, cond, and, or, has, macro
    pos: int
    args: list[Any] = field(default_factory=list)
    value: Any = None  # literal value, identifier / field / function name


# ---- parser -------------------------------------------------------------------------------

_RELOPS = ("<", "<=", ">", ">=", "==", "!=", "in")
_MACROS = {"all", "exists", "exists_one", "map", "filter"}


def _depth(node: Node) -> int:
    deepest = 0
    stack = [(node, 1)]
    while stack:
        cur, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((a, d + 1) for a in cur.args if isinstance(a, Node))
    return deepest


class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.toks = tokenize(src)
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def _is(self, text: str) -> bool:
        t = self.tok
        return t.kind in ("punct", "ident") and t.text == text

    def _eat(self, text: str) -> Token:
        t = self.tok
        if not self._is(text):
            shown = t.text if t.kind != "eof" else "<EOF>"
            raise _syntax(self.src, t.pos, f"mismatched input '{shown}' expecting '{text}'")
        self.i += 1
        return t

    def parse(self) -> Node:
        node = self.expr()
        if self.tok.kind != "eof":
            t = self.tok
            raise _syntax(self.src, t.pos, f"extraneous input '{t.text}' expecting <EOF>")
        if _depth(node) > MAX_DEPTH:
            # Long operator chains nest as deeply as parentheses once parsed.
            raise _syntax(self.src, 0, "expression recursion limit exceeded")
        return node

    def expr(self) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _syntax(self.src, self.tok.pos, "expression recursion limit exceeded")
        cond = self.or_()
        if self._is("?"):
            pos = self._eat("?").pos
            yes = self.or_()
            self._eat(":")
            no = self.expr()
            cond = Node("cond", pos, [cond, yes, no])
        self.depth -= 1
        return cond

    def _chain(self, operand: Callable[[], Node], ops: tuple[str, ...], op: str = "") -> Node:
        """One precedence level: operands joined left-associatively by any of ``ops``.

        The node is ``op`` when given (``and``/``or`` short-circuit), else ``binary``
        carrying the operator.
        """
        left = operand()
        while self.tok.kind in ("punct", "ident") and self.tok.text in ops:
            t = self.tok
            self.i += 1
            if op:
                left = Node(op, t.pos, [left, operand()])
            else:
                left = Node("binary", t.pos, [left, operand()], t.text)
        return left

    def or_(self) -> Node:
        return self._chain(self.and_, ("||",), "or")

    def and_(self) -> Node:
        return self._chain(self.rel, ("&&",), "and")

    def rel(self) -> Node:
        return self._chain(self.add, _RELOPS)

    def add(self) -> Node:
        return self._chain(self.mul, ("+", "-"))

    def mul(self) -> Node:
        return self._chain(self.unary, ("*", "/", "%"))

    def unary(self) -> Node:
        if self._is("!") or self._is("-"):
            t = self.tok
            self.i += 1
            if t.text == "-" and self.tok.kind == "num" and not self._followed_by_member():
                num = self.tok
                self.i += 1
                return self.member(Node("lit", t.pos, value=-num.value))
            return Node("unary", t.pos, [self.unary()], t.text)
        return self.member(self.primary())

    def _followed_by_member(self) -> bool:
        nxt = self.toks[self.i + 1]
        return nxt.kind == "punct" and nxt.text in (".", "[")

    def args(self) -> list[Node]:
        out: list[Node] = []
        if not self._is(")"):
            out.append(self.expr())
            while self._is(","):
                self.i += 1
                out.append(self.expr())
        self._eat(")")
        return out

    def member(self, node: Node) -> Node:
        while True:
            if self._is("."):
                dot = self._eat(".")
                name = self.tok
                if name.kind != "ident":
                    raise _syntax(
                        self.src, name.pos, f"mismatched input '{name.text}' expecting IDENTIFIER"
                    )
                self.i += 1
                if self._is("("):
                    paren = self._eat("(")
                    args = self.args()
                    if name.text in _MACROS:
                        node = self._macro(name.text, paren.pos, node, args)
                    else:
                        node = Node("call", paren.pos, [node, *args], ("member", name.text))
                else:
                    node = Node("select", dot.pos, [node], name.text)
            elif self._is("["):
                pos = self._eat("[").pos
                idx = self.expr()
                self._eat("]")
                node = Node("index", pos, [node, idx])
            else:
                return node

    def _macro(self, name: str, pos: int, target: Node, args: list[Node]) -> Node:
        want = (2, 3) if name == "map" else (2,)
        if len(args) not in want or args[0].op != "ident":
            raise CelCompileError(format_error(self.src, pos, f"{name}() invalid arguments"))
        return Node("macro", pos, [target, *args], name)

    def primary(self) -> Node:
        t = self.tok
        if t.kind == "num":
            self.i += 1
            return Node("lit", t.pos, value=t.value)
        if t.kind == "str":
            self.i += 1
            return Node("lit", t.pos, value=t.value)
        if t.kind == "ident":
            self.i += 1
            if t.text in ("true", "false"):
                return Node("lit", t.pos, value=t.text == "true")
            if t.text == "null":
                return Node("lit", t.pos, value=None)
            if t.text in _RESERVED or t.text == "in":
                raise _syntax(self.src, t.pos, f"reserved identifier: {t.text}")
            if self._is("("):
                paren = self._eat("(")
                args = self.args()
                if t.text == "has":
                    if len(args) != 1 or args[0].op != "select":
                        raise CelCompileError(
                            format_error(self.src, paren.pos, "invalid argument to has() macro")
                        )
                    return Node("has", paren.pos, args)
                return Node("call", paren.pos, args, ("global", t.text))
            return Node("ident", t.pos, value=t.text)
        if self._is("("):
            self.i += 1
            inner = self.expr()
            self._eat(")")
            return inner
        if self._is("["):
            pos = self._eat("[").pos
            items: list[Node] = []
            if not self._is("]"):
                items.append(self.expr())
                while self._is(","):
                    self.i += 1
                    if self._is("]"):
                        break
                    items.append(self.expr())
            self._eat("]")
            return Node("list", pos, items)
        if self._is("{"):
            pos = self._eat("{").pos
            entries: list[Node] = []
            if not self._is("}"):
                while True:
                    k = self.expr()
                    self._eat(":")
                    entries += [k, self.expr()]
                    if not self._is(","):
                        break
                    self.i += 1
                    if self._is("}"):
                        break
            self._eat("}")
            return Node("map", pos, entries)
        shown = t.text
        raise _syntax(self.src, t.pos, f"mismatched input '{shown}' expecting <expression>")


# ---- functions ----------------------------------------------------------------------------

_GLOBALS = {
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "type",
    "dyn",
    "matches",
    "quantity",
    "isQuantity",
}
_METHODS = {
    "size",
    "startsWith",
    "endsWith",
    "contains",
    "matches",
    "lowerAscii",
    "upperAscii",
    "trim",
    "indexOf",
    "lastIndexOf",
    "join",
    "split",
    "substring",
    "replace",
    "isSorted",
    "sum",
    "min",
    "max",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "sign",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "add",
    "sub",
}


def _type_name(v: Any) -> str:
    if v is None:
        return "null_type"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "list"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, Quantity):
        return "kubernetes.Quantity"
    return type(v).__name__


def _no_overload(name: str, *args: Any) -> CelEvalError:
    types = ", ".join(_type_name(a) for a in args)
    return CelEvalError(f"no such overload: {name}({types})" if args else "no such overload")


def _check_int(v: int) -> int:
    if v < INT64_MIN or v > INT64_MAX:
        raise CelEvalError("integer overflow")
    return v


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def values_equal(a: Any, b: Any) -> bool:
    """CEL equality (numbers compare across int and double, no other coercion)."""
    if _is_num(a) and _is_num(b):
        return bool(a == b)
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if type(a) is not type(b) and not (_is_num(a) and _is_num(b)):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _compare(op: str, a: Any, b: Any) -> bool:
    if _is_num(a) and _is_num(b):
        pass
    elif type(a) is not type(b) or not isinstance(a, (str, bool)):
        raise _no_overload(f"_{op}_", a, b)
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def _arith(op: str, a: Any, b: Any) -> Any:
    if isinstance(a, bool) or isinstance(b, bool):
        raise _no_overload(f"_{op}_", a, b)
    if isinstance(a, int) and isinstance(b, int):
        if op == "+":
            return _check_int(a + b)
        if op == "-":
            return _check_int(a - b)
        if op == "*":
            return _check_int(a * b)
        if b == 0:
            raise CelEvalError("division by zero" if op == "/" else "modulus by zero")
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return _check_int(q) if op == "/" else a - b * q
    if isinstance(a, float) and isinstance(b, float):
        if op == "%":
            raise _no_overload("_%_", a, b)
        if op == "/":
            if b == 0:
                return float("inf") if a > 0 else float("-inf") if a < 0 else float("nan")
            return a / b
        return a + b if op == "+" else a - b if op == "-" else a * b
    if op == "+" and isinstance(a, str) and isinstance(b, str):
        return a + b
    if op == "+" and isinstance(a, list) and isinstance(b, list):
        return a + b
    raise _no_overload(f"_{op}_", a, b)


def _size(v: Any) -> int:
    if isinstance(v, (str, list, dict)):
        return len(v)
    raise _no_overload("size", v)


def _quantity(v: Any) -> Quantity:
    if not isinstance(v, str):
        raise _no_overload("quantity", v)
    try:
        return Quantity(v, parse_quantity(v).milli_value())
    except ValueError:
        raise CelEvalError(
            f"quantities must match the regular expression '{_QUANTITY_RE}'"
        ) from None


_QUANTITY_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def _to_string(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, str)):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    raise _no_overload("string", v)


def _call_global(name: str, args: list[Any]) -> Any:
    if name == "size" and len(args) == 1:
        return _size(args[0])
    if name == "dyn" and len(args) == 1:
        return args[0]
    if name in ("int", "uint") and len(args) == 1:
        v = args[0]
        if isinstance(v, bool):
            raise _no_overload(name, v)
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            return _check_int(int(v))
        if isinstance(v, str):
            try:
                return _check_int(int(v))
            except ValueError:
                raise CelEvalError(f"cannot convert string '{v}' to {name}") from None
    if name == "double" and len(args) == 1 and not isinstance(args[0], bool):
        v = args[0]
        try:
            return float(v)
        except (TypeError, ValueError):
            raise _no_overload(name, v) from None
    if name == "string" and len(args) == 1:
        return _to_string(args[0])
    if name == "bool" and len(args) == 1:
        if isinstance(args[0], bool):
            return args[0]
        if args[0] in ("true", "false"):
            return args[0] == "true"
    if name == "type" and len(args) == 1:
        return _type_name(args[0])
    if name == "matches" and len(args) == 2:
        return _call_method("matches", args[0], args[1:])
    if name == "quantity" and len(args) == 1:
        return _quantity(args[0])
    if name == "isQuantity" and len(args) == 1:
        try:
            _quantity(args[0])
            return True
        except CelEvalError:
            return False
    raise _no_overload(name, *args)


def _call_method(name: str, target: Any, args: list[Any]) -> Any:
    if name == "size" and not args:
        return _size(target)
    if isinstance(target, str):
        if name in ("startsWith", "endsWith", "contains") and len(args) == 1:
            (a,) = args
            if isinstance(a, str):
                if name == "startsWith":
                    return target.startswith(a)
                return target.endswith(a) if name == "endsWith" else a in target
        if name == "matches" and len(args) == 1 and isinstance(args[0], str):
            try:
                return re.search(args[0], target) is not None
            except re.error as exc:
                raise CelEvalError(f"invalid regular expression: {exc}") from None
        if name == "lowerAscii" and not args:
            return "".join(c.lower() if c.isascii() else c for c in target)
        if name == "upperAscii" and not args:
            return "".join(c.upper() if c.isascii() else c for c in target)
        if name == "trim" and not args:
            return target.strip()
        if name in ("indexOf", "lastIndexOf") and len(args) == 1 and isinstance(args[0], str):
            return target.find(args[0]) if name == "indexOf" else target.rfind(args[0])
        if name == "split" and len(args) == 1 and isinstance(args[0], str):
            return target.split(args[0])
        if name == "replace" and len(args) == 2 and all(isinstance(a, str) for a in args):
            return target.replace(args[0], args[1])
        if name == "substring" and 1 <= len(args) <= 2 and all(_is_num(a) for a in args):
            end = args[1] if len(args) == 2 else len(target)
            if not 0 <= args[0] <= end <= len(target):
                raise CelEvalError(f"index out of range: {args[0]}")
            return target[args[0] : end]
    if isinstance(target, list):
        if name == "join" and len(args) <= 1 and all(isinstance(x, str) for x in target):
            sep = args[0] if args else ""
            return sep.join(target)
        if name in ("indexOf", "lastIndexOf") and len(args) == 1:
            hits = [i for i, x in enumerate(target) if values_equal(x, args[0])]
            return (hits[0] if name == "indexOf" else hits[-1]) if hits else -1
        if name == "isSorted" and not args:
            return all(_compare("<=", a, b) for a, b in itertools.pairwise(target))
        if name == "sum" and not args:
            total: Any = 0
            for x in target:
                total = _arith("+", total, x)
            return total
        if name in ("min", "max") and not args:
            if not target:
                raise CelEvalError(f"{name} called on empty list")
            best = target[0]
            for x in target[1:]:
                if _compare("<" if name == "min" else ">", x, best):
                    best = x
            return best
    if isinstance(target, Quantity):
        if name in ("isGreaterThan", "isLessThan", "compareTo") and len(args) == 1:
            other = args[0]
            if not isinstance(other, Quantity):
                raise _no_overload(name, target, other)
            c = (target.milli > other.milli) - (target.milli < other.milli)
            return c if name == "compareTo" else c == (1 if name == "isGreaterThan" else -1)
        if name == "sign" and not args:
            return (target.milli > 0) - (target.milli < 0)
        if name == "isInteger" and not args:
            return target.milli % 1000 == 0
        if name == "asInteger" and not args:
            if target.milli % 1000:
                raise CelEvalError("cannot convert value to integer")
            return _check_int(target.milli // 1000)
        if name == "asApproximateFloat" and not args:
            return target.milli / 1000.0
        if name in ("add", "sub") and len(args) == 1:
            other = args[0]
            m = other.milli if isinstance(other, Quantity) else other * 1000
            total_m = target.milli + m if name == "add" else target.milli - m
            return Quantity(f"{total_m}m", total_m)
    raise _no_overload(name, target, *args)


# ---- evaluation ---------------------------------------------------------------------------


class _Error:
    """A deferred runtime error (CEL's `&&`/`||` absorb errors when the other side decides)."""

    __slots__ = ("exc",)

    def __init__(self, exc: CelEvalError) -> None:
        self.exc = exc


def _select(target: Any, name: str) -> Any:
    if isinstance(target, dict):
        if name in target:
            return target[name]
        raise CelEvalError(f"no such key: {name}")
    raise _no_overload(f"select {name}", target)


def _index(target: Any, idx: Any) -> Any:
    if isinstance(target, list):
        if not _is_num(idx) or (isinstance(idx, float) and not idx.is_integer()):
            raise _no_overload("_[_]", target, idx)
        i = int(idx)
        if not 0 <= i < len(target):
            raise CelEvalError(f"index out of bounds: {i}")
        return target[i]
    if isinstance(target, dict):
        if isinstance(idx, str) and idx in target:
            return target[idx]
        raise CelEvalError(f"no such key: {idx}")
    raise _no_overload("_[_]", target, idx)


def _truth(v: Any, what: str) -> bool:
    if isinstance(v, bool):
        return v
    raise _no_overload(what, v)


class _Eval:
    def __init__(self, env: Mapping[str, Any]) -> None:
        self.env: dict[str, Any] = dict(env)
        self.steps = 0

    def run(self, node: Node) -> Any:
        self.steps += 1
        if self.steps > 1_000_000:
            raise CelEvalError("operation cancelled: actual cost limit exceeded")
        op = node.op
        if op == "lit":
            return node.value
        if op == "ident":
            if node.value in self.env:
                return self.env[node.value]
            raise CelEvalError(f"no such attribute: {node.value}")
        if op == "select":
            return _select(self.run(node.args[0]), node.value)
        if op == "index":
            return _index(self.run(node.args[0]), self.run(node.args[1]))
        if op == "has":
            sel = node.args[0]
            target = self.run(sel.args[0])
            if isinstance(target, dict):
                return sel.value in target
            raise _no_overload("has", target)
        if op == "list":
            return [self.run(a) for a in node.args]
        if op == "map":
            out: dict[Any, Any] = {}
            for k, v in zip(node.args[::2], node.args[1::2], strict=True):
                out[self.run(k)] = self.run(v)
            return out
        if op == "unary":
            v = self.run(node.args[0])
            if node.value == "!":
                return not _truth(v, "!_")
            if _is_num(v):
                return _check_int(-v) if isinstance(v, int) else -v
            raise _no_overload("-_", v)
        if op in ("and", "or"):
            return self._logic(node)
        if op == "cond":
            c = _truth(self.run(node.args[0]), "_?_:_")
            return self.run(node.args[1] if c else node.args[2])
        if op == "binary":
            return self._binary(node)
        if op == "call":
            kind, name = node.value
            if kind == "member":
                target = self.run(node.args[0])
                return _call_method(name, target, [self.run(a) for a in node.args[1:]])
            return _call_global(name, [self.run(a) for a in node.args])
        if op == "macro":
            return self._macro(node)
        raise CelEvalError(f"unsupported expression {op}")

    def _try(self, node: Node) -> Any:
        try:
            return self.run(node)
        except CelEvalError as exc:
            return _Error(exc)

    def _logic(self, node: Node) -> Any:
        decisive = node.op == "or"  # the value that decides: true for ||, false for &&
        left = self._try(node.args[0])
        if left is decisive:
            return decisive
        right = self._try(node.args[1])
        if right is decisive:
            return decisive
        for side in (left, right):
            if isinstance(side, _Error):
                raise side.exc
            if not isinstance(side, bool):
                raise _no_overload("_||_" if decisive else "_&&_", side)
        return not decisive

    def _binary(self, node: Node) -> Any:
        op = node.value
        a = self.run(node.args[0])
        b = self.run(node.args[1])
        if op == "==":
            return values_equal(a, b)
        if op == "!=":
            return not values_equal(a, b)
        if op in ("<", "<=", ">", ">="):
            return _compare(op, a, b)
        if op == "in":
            if isinstance(b, list):
                return any(values_equal(a, x) for x in b)
            if isinstance(b, dict):
                return a in b if isinstance(a, (str, int)) else False
            raise _no_overload("@in", a, b)
        return _arith(op, a, b)

    def _macro(self, node: Node) -> Any:
        name = node.value
        target = self.run(node.args[0])
        var = node.args[1].value
        if isinstance(target, dict):
            items: list[Any] = list(target)
        elif isinstance(target, list):
            items = target
        else:
            raise _no_overload(name, target)
        saved = self.env.get(var, _MISSING)
        try:
            if name in ("all", "exists"):
                want = name == "exists"
                err: CelEvalError | None = None
                for x in items:
                    self.env[var] = x
                    r = self._try(node.args[2])
                    if isinstance(r, _Error):
                        err = err or r.exc
                        continue
                    if _truth(r, name) is want:
                        return want
                if err is not None:
                    raise err
                return not want
            if name == "exists_one":
                count = 0
                for x in items:
                    self.env[var] = x
                    count += _truth(self.run(node.args[2]), name)
                return count == 1
            if name == "filter":
                out = []
                for x in items:
                    self.env[var] = x
                    if _truth(self.run(node.args[2]), name):
                        out.append(x)
                return out
            mapped = []
            for x in items:
                self.env[var] = x
                if len(node.args) == 4 and not _truth(self.run(node.args[2]), name):
                    continue
                mapped.append(self.run(node.args[-1]))
            return mapped
        finally:
            if saved is _MISSING:
                self.env.pop(var, None)
            else:
                self.env[var] = saved


_MISSING = object()


def _undeclared(src: str, pos: int, name: str) -> str:
    return format_error(src, pos, f"undeclared reference to '{name}' (in container '')")


# ---- compiled programs --------------------------------------------------------------------

# A schema view for compile-time checks: returns the child schema of a field, None when
# the field is unknown, or ... (Ellipsis) when anything goes (no schema information).
FieldLookup = Callable[[Any, str], Any]


@dataclass(slots=True)
class Program:
    """A compiled rule: evaluate with `self` (and `oldSelf` for transition rules)."""

    source: str
    root: Node
    uses_old_self: bool

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        return _Eval(variables).run(self.root)


def schema_kind(s: Any) -> str:
    """The CEL type a schema node declares (dyn when it does not say, or when the
    Kubernetes type is one this subset does not model: timestamps, durations)."""
    if not isinstance(s, dict) or s.get("x-kubernetes-int-or-string"):
        return "dyn"
    t = s.get("type")
    if t == "integer":
        return "int"
    if t == "number":
        return "double"
    if t == "boolean":
        return "bool"
    if t == "string":
        return (
            "dyn" if s.get("format") in ("date-time", "datetime", "date", "duration") else "string"
        )
    if t == "array":
        return "list"
    if t == "object":
        if isinstance(s.get("additionalProperties"), dict):
            return "map"
        return "object" if s.get("properties") else "dyn"
    return "dyn"


_LIT_KIND = {bool: "bool", int: "int", float: "double", str: "string", type(None): "null"}
_METHOD_KIND = {
    "startsWith": "bool",
    "endsWith": "bool",
    "contains": "bool",
    "matches": "bool",
    "isSorted": "bool",
    "isGreaterThan": "bool",
    "isLessThan": "bool",
    "isInteger": "bool",
    "lowerAscii": "string",
    "upperAscii": "string",
    "trim": "string",
    "replace": "string",
    "substring": "string",
    "join": "string",
    "size": "int",
    "indexOf": "int",
    "lastIndexOf": "int",
    "compareTo": "int",
    "sign": "int",
    "asInteger": "int",
    "split": "list",
    "asApproximateFloat": "double",
    "add": "quantity",
    "sub": "quantity",
}
_GLOBAL_KIND = {
    "size": "int",
    "int": "int",
    "uint": "int",
    "double": "double",
    "string": "string",
    "bool": "bool",
    "matches": "bool",
    "isQuantity": "bool",
    "quantity": "quantity",
}
_STRING_METHODS = {
    "startsWith",
    "endsWith",
    "contains",
    "matches",
    "lowerAscii",
    "upperAscii",
    "trim",
    "replace",
    "substring",
    "split",
}
# Kinds the checker reasons about; others (object, dyn, quantity) are never flagged.
_KNOWN = {"int", "double", "string", "bool", "null", "list", "map"}
_NUMERIC = {"int", "double"}
_ARITH_OK = {
    "_+_": {("int", "int"), ("double", "double"), ("string", "string"), ("list", "list")},
    "_-_": {("int", "int"), ("double", "double")},
    "_*_": {("int", "int"), ("double", "double")},
    "_/_": {("int", "int"), ("double", "double")},
    "_%_": {("int", "int")},
}


def _shown(kind: str) -> str:
    return {"null": "null_type", "list": "list(dyn)", "map": "map(string, dyn)"}.get(kind, kind)


class CelResultTypeError(CelCompileError):
    """A rule that compiles but does not evaluate to a bool."""


def compile_rule(
    source: str,
    variables: tuple[str, ...] = ("self", "oldSelf"),
    self_schema: Any = None,
    lookup: FieldLookup | None = None,
    result: str = "bool",
) -> Program:
    """Parse and check a rule as cel-go's checker would: undeclared identifiers or
    functions, fields the schema does not declare, operators applied to types they have
    no overload for (only where both types are known), and a result of the wrong type."""
    root = _Parser(source).parse()
    errs: list[tuple[int, str]] = []
    uses_old = [False]
    Typed = tuple[str, Any]  # (kind, schema node or ...)
    dyn: Typed = ("dyn", ...)

    def error(pos: int, msg: str) -> None:
        errs.append((pos, format_error(source, pos, msg)))

    def overload(pos: int, op: str, *kinds: str) -> None:
        shown = ", ".join(_shown(k) for k in kinds)
        error(pos, f"found no matching overload for '{op}' applied to '({shown})'")

    def of_schema(sch: Any) -> Typed:
        return (schema_kind(sch), sch) if sch is not ... else dyn

    def binary(node: Node, a: str, b: str) -> str:
        op = node.value
        both = a in _KNOWN and b in _KNOWN
        if op in ("==", "!="):
            if both and a != b and "null" not in (a, b) and not (a in _NUMERIC and b in _NUMERIC):
                overload(node.pos, f"_{op}_", a, b)
            return "bool"
        if op in ("<", "<=", ">", ">="):
            if both and not (
                (a in _NUMERIC and b in _NUMERIC) or (a == b and a in ("string", "bool"))
            ):
                overload(node.pos, f"_{op}_", a, b)
            return "bool"
        if op == "in":
            if b in _KNOWN and b not in ("list", "map"):
                overload(node.pos, "@in", a, b)
            return "bool"
        name = f"_{op}_"
        if both and (a, b) not in _ARITH_OK[name]:
            overload(node.pos, name, a, b)
            return "dyn"
        return a if both else "dyn"

    def want_bool(node: Node, op: str, *kinds: str) -> None:
        if any(k in _KNOWN and k != "bool" for k in kinds):
            overload(node.pos, op, *kinds)

    def check(node: Node, scope: dict[str, Typed]) -> Typed:
        op = node.op
        if op == "lit":
            return (_LIT_KIND.get(type(node.value), "dyn"), ...)
        if op == "ident":
            name = node.value
            if name not in scope:
                errs.append((node.pos, _undeclared(source, node.pos, name)))
                return dyn
            if name == "oldSelf":
                uses_old[0] = True
            return scope[name]
        if op == "select":
            kind, parent = check(node.args[0], scope)
            if kind in _KNOWN and kind != "map":
                error(node.pos, f"type '{_shown(kind)}' does not support field selection")
                return dyn
            if lookup is None or parent is ...:
                return dyn
            child = lookup(parent, node.value)
            if child is None:
                error(node.pos, f"undefined field '{node.value}'")
                return dyn
            return of_schema(child)
        if op == "has":
            check(node.args[0], scope)
            return ("bool", ...)
        if op == "index":
            kind, parent = check(node.args[0], scope)
            check(node.args[1], scope)
            if lookup is not None and parent is not ... and kind in ("list", "map"):
                return of_schema(lookup(parent, "[]"))
            return dyn
        if op == "list":
            for a in node.args:
                check(a, scope)
            return ("list", ...)
        if op == "map":
            for a in node.args:
                check(a, scope)
            return ("map", ...)
        if op == "unary":
            kind = check(node.args[0], scope)[0]
            if node.value == "!":
                want_bool(node, "!_", kind)
                return ("bool", ...)
            if kind in _KNOWN and kind not in _NUMERIC:
                overload(node.pos, "-_", kind)
                return dyn
            return (kind, ...)
        if op in ("and", "or"):
            a = check(node.args[0], scope)[0]
            b = check(node.args[1], scope)[0]
            want_bool(node, "_&&_" if op == "and" else "_||_", a, b)
            return ("bool", ...)
        if op == "cond":
            c = check(node.args[0], scope)[0]
            if c in _KNOWN and c != "bool":
                overload(node.pos, "_?_:_", c, "dyn", "dyn")
            yes = check(node.args[1], scope)
            no = check(node.args[2], scope)
            return yes if yes[0] == no[0] else dyn
        if op == "binary":
            a = check(node.args[0], scope)[0]
            b = check(node.args[1], scope)[0]
            return (binary(node, a, b), ...)
        if op == "call":
            kind, name = node.value
            known = _METHODS if kind == "member" else _GLOBALS
            if name not in known:
                errs.append((node.pos, _undeclared(source, node.pos, name)))
            arg_kinds = [check(a, scope)[0] for a in node.args]
            first = arg_kinds[0] if arg_kinds else "dyn"
            if name == "size" and first in _KNOWN and first not in ("string", "list", "map"):
                overload(node.pos, "size", first)
            is_string_method = kind == "member" and name in _STRING_METHODS
            if is_string_method and first in _KNOWN and first != "string":
                overload(node.pos, name, *arg_kinds)
            table = _METHOD_KIND if kind == "member" else _GLOBAL_KIND
            return (table.get(name, "dyn"), ...)
        if op == "macro":
            kind, parent = check(node.args[0], scope)
            if kind in _KNOWN and kind not in ("list", "map"):
                overload(node.pos, node.value, kind)
            elem: Typed = dyn
            if kind == "map":
                elem = ("string", ...)
            elif lookup is not None and parent is not ...:
                elem = of_schema(lookup(parent, "[]"))
            inner = dict(scope)
            inner[node.args[1].value] = elem
            for a in node.args[2:]:
                check(a, inner)
            return ("bool", ...) if node.value in ("all", "exists", "exists_one") else ("list", ...)
        return dyn

    scope: dict[str, Typed] = {
        v: (of_schema(self_schema) if self_schema is not None else dyn) for v in variables
    }
    out_kind = check(root, scope)[0]
    if errs:
        raise CelCompileError("\n".join(text for _, text in sorted(errs)))
    if out_kind in _KNOWN and out_kind != result:
        what = (
            "cel expression must evaluate to a bool"
            if result == "bool"
            else ("messageExpression must evaluate to a string")
        )
        raise CelResultTypeError(what)
    return Program(source, root, uses_old[0])


@functools.lru_cache(maxsize=2048)
def compile_cached(source: str, result: str = "bool") -> Program:
    """compile_rule without schema checks, memoized: for rules run on every write (their
    fields were checked against the schema when the CRD was written)."""
    return compile_rule(source, result=result)


def evaluate(source: str, variables: Mapping[str, Any]) -> Any:
    """Compile (without schema checks) and run a rule: for tests and one-off use."""
    return compile_rule(source, tuple(variables)).evaluate(variables)
