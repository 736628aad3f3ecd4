"""What a PromQL expression reads: its metric names and label names.

A tokenizer, not a parser: enough to check that dashboards and alert rules refer only
to series a process really serves. It knows PromQL's functions, aggregations,
keywords and grouping clauses (``by``, ``without``, ``on``, ``ignoring``,
``group_left``, ``group_right``); any other identifier is a metric name, and the
identifiers before a matcher operator inside ``{...}`` or inside a grouping clause
are label names. Grafana variables (``$__rate_interval``, ``$job``, ``${x}``) are
replaced first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FUNCTIONS = frozenset(
    [
        "abs",
        "absent",
        "absent_over_time",
        "avg_over_time",
        "ceil",
        "changes",
        "clamp",
        "clamp_max",
        "clamp_min",
        "count_over_time",
        "day_of_month",
        "day_of_week",
        "day_of_year",
        "days_in_month",
        "delta",
        "deriv",
        "exp",
        "floor",
        "histogram_avg",
        "histogram_count",
        "histogram_fraction",
        "histogram_quantile",
        "histogram_stddev",
        "histogram_stdvar",
        "histogram_sum",
        "holt_winters",
        "double_exponential_smoothing",
        "hour",
        "idelta",
        "increase",
        "irate",
        "label_join",
        "label_replace",
        "last_over_time",
        "ln",
        "log10",
        "log2",
        "mad_over_time",
        "max_over_time",
        "min_over_time",
        "minute",
        "month",
        "predict_linear",
        "present_over_time",
        "quantile_over_time",
        "rate",
        "resets",
        "round",
        "scalar",
        "sgn",
        "sort",
        "sort_desc",
        "sort_by_label",
        "sort_by_label_desc",
        "sqrt",
        "stddev_over_time",
        "stdvar_over_time",
        "sum_over_time",
        "time",
        "timestamp",
        "vector",
        "year",
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atanh",
        "cos",
        "cosh",
        "deg",
        "pi",
        "rad",
        "sin",
        "sinh",
        "tan",
        "tanh",
    ]
)
AGGREGATIONS = frozenset(
    [
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    ]
)
KEYWORDS = frozenset(["and", "or", "unless", "bool", "offset", "atmodifier"])
GROUPING = frozenset(["by", "without", "on", "ignoring", "group_left", "group_right"])

_TOKEN = re.compile(
    r"""
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
    | (?P<range>\[[^\]]*\])
    | (?P<number>(?<![A-Za-z_:])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?:[smhdwy]|ms)?)
    | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
    | (?P<matchop>=~|!~|!=|==|=)
    | (?P<punct>[(){},])
    | (?P<other>[-+*/%^<>@!]+|\s+)
    """,
    re.VERBOSE,
)


@dataclass
class Refs:
    metrics: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)
    #: label names per metric, from ``metric{label=...}`` selectors
    selectors: dict[str, set[str]] = field(default_factory=dict)


def grafana_expand(expr: str, variables: dict[str, str] | None = None) -> str:
    """``expr`` with Grafana's variables replaced (rate intervals by 5m)."""
    values = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h", **(variables or {})}

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return values.get(name, "x")

    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)", sub, expr)


def tokens(expr: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            raise ValueError(f"cannot tokenize {expr[pos : pos + 20]!r} in {expr!r}")
        kind = m.lastgroup
        assert kind is not None
        if kind != "other" or m.group().strip():
            out.append((kind, m.group()))
        pos = m.end()
    return out


def references(expr: str) -> Refs:
    """The metric and label names ``expr`` reads."""
    refs = Refs()
    toks = tokens(expr)
    depth_braces = 0
    grouping_depth: int | None = None  # paren depth of an open by/without/on clause
    parens = 0
    selector_of: str | None = None
    for i, (kind, text) in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ("", "")
        if kind == "punct":
            if text == "{":
                depth_braces += 1
                prev = toks[i - 1] if i else ("", "")
                selector_of = prev[1] if prev[0] == "ident" and prev[1] in refs.metrics else None
            elif text == "}":
                depth_braces -= 1
                selector_of = None
            elif text == "(":
                parens += 1
            elif text == ")":
                if grouping_depth == parens:
                    grouping_depth = None
                parens -= 1
            continue
        if kind != "ident":
            continue
        if depth_braces:
            if nxt[0] == "matchop":
                refs.labels.add(text)
                if selector_of is not None:
                    refs.selectors.setdefault(selector_of, set()).add(text)
            continue
        if grouping_depth is not None:
            refs.labels.add(text)
            continue
        if text in GROUPING:
            if nxt == ("punct", "("):
                grouping_depth = parens + 1
            continue
        if text in KEYWORDS:
            continue
        if nxt == ("punct", "("):
            if text not in FUNCTIONS and text not in AGGREGATIONS:
                raise ValueError(f"unknown function {text!r} in {expr!r}")
            continue
        if text in AGGREGATIONS and nxt[1] in GROUPING:
            continue
        refs.metrics.add(text)
    if depth_braces or parens:
        raise ValueError(f"unbalanced brackets in {expr!r}")
    return refs


HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def family_of(name: str, families: set[str]) -> str | None:
    """The served family a sample name belongs to (``x_bucket`` -> ``x``), or None."""
    if name in families:
        return name
    for suffix in (*HISTOGRAM_SUFFIXES, "_total"):
        if name.endswith(suffix) and name[: -len(suffix)] in families:
            return name[: -len(suffix)]
    return None
