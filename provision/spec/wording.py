"""What is wrong with a value, in our words, from a pydantic error's type and context.

pydantic's own messages change between releases ("list should have at most 256 items after validation"); users
and tests read ours, built from the error's stable parts: its `type` and its `ctx` (limits, patterns, the allowed
values). A type not listed here falls back to pydantic's message, lower-cased.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from provision.limits import clip, cut

_Ctx = dict[str, Any]


def _entries(count: Any) -> str:
    return f"{count} entr{'y' if count == 1 else 'ies'}"


def _too_long(ctx: _Ctx) -> str:
    has = f"{_entries(ctx['actual_length'])}, " if ctx.get("actual_length") is not None else ""
    return f"{has}at most {ctx['max_length']} allowed"


def _too_short(ctx: _Ctx) -> str:
    has = f"{_entries(ctx['actual_length'])}, " if ctx.get("actual_length") is not None else ""
    return f"{has}at least {ctx['min_length']} needed"


_WORDS: dict[str, Callable[[_Ctx], str]] = {
    "too_long": _too_long,
    "too_short": _too_short,
    "string_too_long": lambda ctx: f"longer than {ctx['max_length']} characters",
    "string_too_short": lambda ctx: f"shorter than {ctx['min_length']} character"
                                    f"{'' if ctx['min_length'] == 1 else 's'}",
    "int_parsing": lambda ctx: "not a whole number",
    "int_type": lambda ctx: "not a whole number",
    "int_from_float": lambda ctx: "not a whole number",
    "float_parsing": lambda ctx: "not a number",
    "float_type": lambda ctx: "not a number",
    "bool_parsing": lambda ctx: "not true or false",
    "bool_type": lambda ctx: "not true or false",
    "string_type": lambda ctx: "not a string",
    "list_type": lambda ctx: "not a list",
    "dict_type": lambda ctx: "not a mapping",
    "model_type": lambda ctx: "not a mapping",
    "literal_error": lambda ctx: f"not one of {ctx['expected']}",
    "enum": lambda ctx: f"not one of {ctx['expected']}",
    "string_pattern_mismatch": lambda ctx: f"does not match {clip(str(ctx['pattern']))}",
    "greater_than": lambda ctx: f"must be greater than {ctx['gt']}",
    "greater_than_equal": lambda ctx: f"must be {ctx['ge']} or more",
    "less_than": lambda ctx: f"must be less than {ctx['lt']}",
    "less_than_equal": lambda ctx: f"must be {ctx['le']} or less",
    "multiple_of": lambda ctx: f"must be a multiple of {ctx['multiple_of']}",
}


def message(error: dict) -> str:
    """What is wrong, in our words where the error type is known; pydantic's message (lower-cased, without its
    'Value error, ' prefix: our own validators' text) otherwise."""
    words = _WORDS.get(error.get("type", ""))
    if words is not None:
        try:
            return words(error.get("ctx") or {})
        except (KeyError, TypeError, ValueError):
            pass
    text = cut(str(error.get("msg", "")), 300).removeprefix("Value error, ")
    return text[:1].lower() + text[1:]
