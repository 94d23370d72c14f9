"""Tokens of a SQL92 filter expression (RocketMQ's ``SelectorParser.jj`` token section).

::

    blank       " " | "\\t" | "\\n" | "\\r" | "\\f"                      skipped
    comment     "--" up to a line end or the end of the text          skipped
                "/*" ... "*/"                                         skipped
    keyword     NOT AND OR BETWEEN IN TRUE FALSE NULL IS               any letter case
    ID          [a-zA-Z_$] [a-zA-Z0-9_$]*                              not a keyword
    DECIMAL     "0" | [1-9] [0-9]* [lL]?
    FLOAT       [0-9]+ "." [0-9]* EXP? | "." [0-9]+ EXP? | [0-9]+ EXP   EXP: [eE] [+-]? [0-9]+
    STRING      "'" ( "''" | any character but "'" )* "'"              '' stands for '
    operator    = <> > >= < <= ( ) , + -

The longest token wins, a keyword over an ID of the same text (``NOT`` is a keyword,
``NOTE`` an ID), as JavaCC decides. ``0L`` is therefore DECIMAL ``0`` then ID ``L``, and
``007`` three DECIMALs. A ``--`` comment ends at a line end as in RocketMQ, or at the end of
the text, where RocketMQ would read two minus signs (and ignore them, see
:mod:`~rocketkube.common.filter.sql92`).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator
from typing import Final, NamedTuple

__all__ = ["KEYWORDS", "Sql92SyntaxError", "Token", "TokenKind", "tokenize"]

KEYWORDS: Final = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})


class Sql92SyntaxError(ValueError):
    """A SQL92 filter expression that does not parse; ``position`` is the 0-based offset of
    the offending text, and the message names it by line and column (1-based)."""

    def __init__(self, expression: str, position: int, problem: str) -> None:
        line = expression.count("\n", 0, position) + 1
        column = position - (expression.rfind("\n", 0, position) + 1) + 1
        super().__init__(f"{problem} at line {line}, column {column}")
        self.expression = expression
        self.position = position
        self.problem = problem


class TokenKind(enum.Enum):
    KEYWORD = "keyword"
    ID = "identifier"
    DECIMAL = "decimal literal"
    FLOAT = "floating point literal"
    STRING = "string literal"
    OPERATOR = "operator"
    EOF = "end of expression"


class Token(NamedTuple):
    kind: TokenKind
    text: str
    """The source text; keywords upper-cased; '' for EOF."""
    start: int
    end: int


_EXP: Final = r"[eE][+-]?[0-9]+"
_PATTERN: Final = re.compile(
    rf"""
    (?P<blank>[ \t\n\r\f]+)
    | (?P<comment>--[^\n\r]*|/\*.*?\*/)
    | (?P<string>'(?:''|[^'])*')
    | (?P<float>[0-9]+\.[0-9]*(?:{_EXP})?|\.[0-9]+(?:{_EXP})?|[0-9]+{_EXP})
    | (?P<decimal>0|[1-9][0-9]*[lL]?)
    | (?P<word>[a-zA-Z_$][a-zA-Z0-9_$]*)
    | (?P<operator><>|>=|<=|[=<>(),+-])
    """,
    re.VERBOSE | re.DOTALL,
)
_KINDS: Final = {
    "string": TokenKind.STRING,
    "float": TokenKind.FLOAT,
    "decimal": TokenKind.DECIMAL,
    "operator": TokenKind.OPERATOR,
}


def tokenize(expression: str) -> Iterator[Token]:
    """The tokens of ``expression``, then one EOF token; a character no token starts
    with (an unterminated string or comment among them) raises :class:`Sql92SyntaxError`."""
    position, end = 0, len(expression)
    while position < end:
        match = _PATTERN.match(expression, position)
        if match is None:
            raise Sql92SyntaxError(expression, position, _lexical_problem(expression, position))
        group, text = match.lastgroup, match.group()
        if group == "word":
            upper = text.upper()
            if upper in KEYWORDS:
                yield Token(TokenKind.KEYWORD, upper, position, match.end())
            else:
                yield Token(TokenKind.ID, text, position, match.end())
        elif group in _KINDS:
            yield Token(_KINDS[group], text, position, match.end())
        position = match.end()
    yield Token(TokenKind.EOF, "", end, end)


def _lexical_problem(expression: str, position: int) -> str:
    if expression.startswith("'", position):
        return "unterminated string literal"
    if expression.startswith("/*", position):
        return "unterminated comment"
    return f"unexpected character {expression[position]!r}"
