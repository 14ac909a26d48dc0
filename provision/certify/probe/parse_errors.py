"""The one error every parser raises: what could not be read, and the first line that shows it.

Standard library only (the node probe ships the DCGM parser, which uses it). Callers in the certify
run path turn a ParseError into a failed check whose detail is str(error), so the message always
quotes the line a reader needs to see: the first line the parser could not place, or, when every
line was understood but the result is missing (output cut short), the last line there is.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

MAX_QUOTE = 160  # characters of a line kept in a message
FIRST, LAST = "first unparseable line", "output ends at"  # how a message introduces the line it quotes


class ParseError(ValueError):
    """Output that does not hold the result a parser looks for."""

    def __init__(self, what: str, line: str | None = None, *, where: str = FIRST) -> None:
        self.what = what
        self.line = line
        super().__init__(what if line is None else f"{what}; {where}: {quote(line)}")


def quote(line: str) -> str:
    """A line as a message shows it: trimmed, control and binary bytes escaped, at most MAX_QUOTE chars."""
    text = line.strip()
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    if len(shown) > MAX_QUOTE:
        shown = shown[:MAX_QUOTE] + "..."
    return f"'{shown}'"


def failure(what: str, lines: Iterable[str], known: Callable[[str], bool]) -> ParseError:
    """The error for output without a result: quotes the first line `known` rejects, else the last line."""
    last = None
    for line in lines:
        if not line.strip():
            continue
        if not known(line):
            return ParseError(what, line)
        last = line
    if last is None:
        return ParseError(f"{what}: the output is empty")
    return ParseError(what, last, where=LAST)


def guarded(tool: str) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """Decorator for a parser's entry point: a slip inside it (an index, a type, a recursion limit on deeply
    nested JSON) surfaces as a ParseError naming the tool, so certify reports it and carries on."""
    def wrap(parse: Callable[[str], T]) -> Callable[[str], T]:
        @functools.wraps(parse)
        def guarded_parse(text: str) -> T:
            try:
                return parse(text)
            except ParseError:
                raise
            except (ValueError, LookupError, TypeError, ArithmeticError, AttributeError, RecursionError) as exc:
                first = next((line for line in text.splitlines() if line.strip()), None)
                raise ParseError(f"{tool} output not understood ({type(exc).__name__}: {exc})", first) from exc
        return guarded_parse
    return wrap
