"""The metric names a PromQL expression selects, so a test can check each against the catalogue.

Not a parser: a tokenizer and a few rules. A name is an identifier outside braces and brackets that is not a
function or aggregation (followed by "(" or by/without), not a keyword, and not a label list's member (by, without,
on, ignoring, group_left, group_right). String literals, durations, numbers, comments and Grafana's variables
($node, ${node}, $__rate_interval) are skipped; a {__name__="x"} matcher names x.
"""
from __future__ import annotations

import re

_TOKEN = re.compile(r"""
    (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<comment>\#[^\n]*)
  | (?P<variable>\$\{[^}]*\}|\$\w+|\[\[\w+\]\])
  | (?P<number>0[xX][0-9a-fA-F]+|\d[\w.]*|\.\d[\w.]*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<space>\s+)
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)

KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
                "quantile", "limitk", "limit_ratio"}


def tokens(expr: str) -> list[tuple[str, str]]:
    """(kind, text) of each token that matters: spaces and comments left out."""
    return [(m.lastgroup, m.group()) for m in _TOKEN.finditer(expr) if m.lastgroup not in ("space", "comment")]


def metric_names(expr: str) -> set[str]:
    """Every metric name the expression selects."""
    toks = tokens(expr)
    names: set[str] = set()
    depth = {"{": 0, "[": 0}
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        following = toks[i + 1][1] if i + 1 < len(toks) else ""
        if kind == "other" and text in "{[":
            depth[text] += 1
        elif kind == "other" and text in "}]":
            depth["{" if text == "}" else "["] -= 1
        elif kind == "ident" and depth["{"]:
            names |= _name_matcher(toks, i)
        elif kind == "ident" and not depth["["]:
            i = _after_ident(toks, i, names, following)
            continue
        i += 1
    return names


def _name_matcher(toks: list[tuple[str, str]], i: int) -> set[str]:
    """{__name__="x"}: x (only an equality matcher names one series name)."""
    if toks[i][1] != "__name__" or i + 2 >= len(toks) or toks[i + 1][1] != "=" or toks[i + 2][0] != "string":
        return set()
    return {toks[i + 2][1][1:-1]}


def _after_ident(toks: list[tuple[str, str]], i: int, names: set[str], following: str) -> int:
    """Record the identifier at i when it is a metric name; the index of the next token to read."""
    word = toks[i][1].lower()
    if word in LABEL_LISTS:  # group_left may stand without its list
        return _skip_parens(toks, i + 1) if following == "(" else i + 1
    if following == "(" or word in KEYWORDS or (word in AGGREGATIONS and following.lower() in ("by", "without")):
        return i + 1
    names.add(toks[i][1])
    return i + 1


def _skip_parens(toks: list[tuple[str, str]], i: int) -> int:
    """The index after the ")" that closes the "(" at i (a label list holds no parentheses)."""
    while i < len(toks) and toks[i][1] != ")":
        i += 1
    return i + 1
