"""SQL92 filters: RocketMQ's grammar, its checks while parsing, and its typing rules.

Each expected answer is what RocketMQ 4.9's ``org.apache.rocketmq.filter`` gives for the
same expression and properties (every property value is a string there too).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketkube.common.filter import EvaluationError, Sql92Filter, Sql92SyntaxError, parse
from rocketkube.common.filter.sql92 import MAX_NESTING

# (expression, properties, evaluate() result: True, False or None for unknown)
EVALUATIONS: list[tuple[str, dict[str, str], bool | None]] = [
    # the example of the README and the end-to-end tests
    ("a BETWEEN 3 AND 5 AND b = 'x'", {"a": "3", "b": "x"}, True),
    ("a BETWEEN 3 AND 5 AND b = 'x'", {"a": "5", "b": "x"}, True),
    ("a BETWEEN 3 AND 5 AND b = 'x'", {"a": "6", "b": "x"}, False),
    ("a BETWEEN 3 AND 5 AND b = 'x'", {"a": "4", "b": "y"}, False),
    ("a BETWEEN 3 AND 5 AND b = 'x'", {"a": "4"}, None),
    ("a NOT BETWEEN 3 AND 5", {"a": "2"}, True),
    ("a NOT BETWEEN 3 AND 5", {"a": "4"}, False),
    ("a NOT BETWEEN 3 AND 5", {}, None),
    # comparisons of numbers: the property must parse as the literal's Java type
    ("a = 3", {"a": "3"}, True),
    ("a = 3", {"a": "+3"}, True),
    ("a = 3.0", {"a": "3"}, True),
    ("a > 3.0", {"a": "3.5"}, True),
    ("a > 3.0", {"a": " 3.5 "}, True),  # Double.valueOf trims
    ("a > 3.0", {"a": "3.5f"}, True),
    ("a > 3.0", {"a": "NaN"}, True),  # Double.compare puts NaN above everything
    ("a < 3.0", {"a": "-Infinity"}, True),
    ("a >= 2147483648", {"a": "3000000000"}, True),  # a Long literal reads a Long
    ("a <> 3", {"a": "4"}, True),
    ("a <= 3", {"a": "3"}, True),
    ("a > -3", {"a": "-2"}, True),
    ("a > +3", {"a": "4"}, True),
    ("a > - -3", {"a": "4"}, True),
    ("a > 3L", {"a": "4"}, True),
    ("a > .5", {"a": "0.6"}, True),
    ("a > 5E-1", {"a": "0.6"}, True),
    ("a > b", {"a": "2", "b": "1.5"}, True),  # two strings compare as doubles
    ("a = b", {"a": "2", "b": "2.0"}, False),  # ... but = compares them as strings
    ("5 > 3", {}, True),
    ("3 = 3.0", {}, True),
    # missing properties: unknown, which never matches
    ("a = 3", {}, None),
    ("a > 3", {}, None),
    ("a <> 'x'", {}, None),
    ("a IN ('x')", {}, None),
    ("a NOT IN ('x')", {}, None),
    ("NOT (a = 'x')", {}, None),
    ("a IS NULL", {}, True),
    ("a IS NULL", {"a": "x"}, False),
    ("a IS NOT NULL", {"a": "x"}, True),
    ("a IS NOT NULL", {}, False),
    ("NULL IS NULL", {}, True),
    ("a IS TRUE", {"a": "TRUE"}, True),
    ("a IS TRUE", {"a": "yes"}, False),
    ("a IS TRUE", {}, False),
    ("a IS NOT TRUE", {}, True),
    ("a IS NOT TRUE", {"a": "true"}, False),
    ("a IS FALSE", {"a": "false"}, True),
    ("a IS NOT FALSE", {"a": "false"}, False),
    ("(a > 3) IS TRUE", {"a": "4"}, True),
    ("(a > 3) IS FALSE", {"a": "2"}, True),
    ("(a > 3) IS FALSE", {}, False),
    ("(a > 3) IS NOT TRUE", {}, True),
    # strings: = and <> only, and only between strings
    ("a = 'x'", {"a": "x"}, True),
    ("a = 'it''s'", {"a": "it's"}, True),
    ("a <> 'x'", {"a": "y"}, True),
    ("a = '3'", {"a": "3.0"}, False),
    ("'3' = 3", {}, True),
    ("a IN ('x', 'y', 'z', 'v', 'w')", {"a": "w"}, True),
    ("a NOT IN ('x', 'y')", {"a": "z"}, True),
    ("a NOT IN ('x', 'y')", {"a": "x"}, False),
    # booleans
    ("a = TRUE", {"a": "TRUE"}, True),
    ("a = TRUE", {"a": "yes"}, False),
    ("a = FALSE", {"a": "anything"}, True),  # Boolean.valueOf of anything but true
    ("a", {"a": "true"}, False),  # a bare property: a string is never a Boolean
    ("a", {}, None),
    ("NOT a", {"a": "x"}, True),
    ("TRUE", {}, True),
    ("FALSE OR TRUE", {}, True),
    ("NULL", {}, None),
    ("NOT (a = 'x')", {"a": "y"}, True),
    # three-valued AND / OR
    ("a = 'x' AND b = 'y'", {"b": "z"}, False),
    ("a = 'x' AND b = 'y'", {"b": "y"}, None),
    ("a = 'x' OR b = 'y'", {"b": "y"}, True),
    ("a = 'x' OR b = 'y'", {"b": "z"}, None),
    ("(a = 'x' OR b = 'y') AND c IS NULL", {"a": "x"}, True),
    # RocketMQ's own properties are properties like any other
    ("TAGS = 'TagA' AND KEYS IS NOT NULL", {"TAGS": "TagA", "KEYS": "k1"}, True),
    # identifiers and keywords: case-insensitive keywords, case-sensitive names
    ("a between 1 and 2 and B is not null", {"a": "1", "B": "v"}, True),
    ("$x_1 = 'v'", {"$x_1": "v"}, True),
    ("a = 1 /* comment */ AND b = 2 -- line comment\n", {"a": "1", "b": "2"}, True),
    ("a = 1 -- a comment to the end", {"a": "1"}, True),
]

# Java throws while evaluating these: the message does not match, whatever else holds.
EVALUATION_ERRORS: list[tuple[str, dict[str, str]]] = [
    ("a = 3", {"a": "3.0"}),  # Integer.valueOf("3.0")
    ("a > 3", {"a": "3.5"}),
    ("a = 3", {"a": "abc"}),
    ("a = 3", {"a": " 3"}),  # Integer.valueOf does not trim
    ("a = 3", {"a": "3000000000"}),  # beyond an Integer
    ("a > 3.0", {"a": "abc"}),
    ("a > b", {"a": "2", "b": "x"}),
    ("a > 3 OR b = 'y'", {"a": "x", "b": "y"}),  # the error comes first
    ("(a = 'x') = b", {"a": "x", "b": "true"}),  # a Boolean meets a String
    ("NOT a = 'x'", {"a": "y"}),  # (NOT a) = 'x': NOT binds tighter, then the same
]


@pytest.mark.parametrize(("expression", "properties", "expected"), EVALUATIONS)
def test_evaluation_follows_rocketmq(
    expression: str, properties: dict[str, str], expected: bool | None
) -> None:
    selector = parse(expression)
    assert selector.evaluate(properties) is expected
    assert selector.matches(properties) is (expected is True)


@pytest.mark.parametrize(("expression", "properties"), EVALUATION_ERRORS)
def test_an_evaluation_error_does_not_match(expression: str, properties: dict[str, str]) -> None:
    selector = parse(expression)
    with pytest.raises(EvaluationError):
        selector.evaluate(properties)
    assert selector.matches(properties) is False


def test_a_decided_or_never_reaches_an_error_on_its_right() -> None:
    assert parse("b = 'y' OR a > 3").matches({"a": "x", "b": "y"})
    assert not parse("b = 'n' AND a > 3").matches({"a": "x", "b": "y"})


# (expression, 0-based position of the error, words of the message)
SYNTAX_ERRORS: list[tuple[str, int, str]] = [
    ("", 0, "found end of expression"),
    ("a = ", 4, "found end of expression"),
    ("a IS 3", 5, "expected NULL, TRUE or FALSE after IS"),
    ("a IS NOT 'x'", 9, "expected NULL, TRUE or FALSE after IS NOT"),
    ("a = 1 b = 2", 6, "found 'b'"),
    ("a = 'x", 4, "unterminated string"),
    ("a = 1 /* open", 6, "unterminated comment"),
    ("a != 1", 2, "unexpected character '!'"),
    ("a.b = 1", 1, "unexpected character '.'"),
    ('a = "x"', 4, "unexpected character '\"'"),
    ("a > 'x'", 4, "only numbers compare with >"),
    ("a > TRUE", 4, "only numbers compare with >"),
    ("a < NULL", 4, "only numbers compare with <"),
    ("(a = 1) > 2", 0, "a condition cannot be compared"),
    ("a BETWEEN 5 AND 3", 10, "low bound is above"),
    ("a BETWEEN NULL AND 3", 10, "cannot be NULL"),
    ("a BETWEEN 'x' AND 'y'", 10, "only numbers compare with >="),
    ("a = NULL", 4, "use IS [NOT] NULL"),
    ("NULL <> a", 0, "use IS [NOT] NULL"),
    ("TRUE = 3", 0, "boolean with a non-boolean"),
    ("a IN ()", 6, "expected a string literal"),
    ("a IN (1, 2)", 6, "expected a string literal"),
    ("'x' IN ('x')", 0, "IN applies to a property only"),
    ("a IN 'x'", 5, "expected ( after IN"),
    ("3", 0, "'3' is not a condition"),
    ("'x'", 0, "is not a condition"),
    ("-a", 0, "is not a condition"),
    ("NOT 3", 4, "'3' is not a condition"),
    ("a AND 3", 6, "is not a condition"),
    ("a > 0.0", 4, "less than Double.MIN_VALUE"),
    ("a > 1E999", 4, "greater than Double.MAX_VALUE"),
    ("a > 9223372036854775808", 4, "beyond Long.MAX_VALUE"),
    ("a = 007", 5, "found '0'"),
    ("a = 0L", 5, "found 'L'"),
    ("(a = 1", 6, "expected ) to close"),
    ("a = 1)", 5, "found ')'"),
    ("\n  a =", 6, "found end of expression"),
]


@pytest.mark.parametrize(("expression", "position", "words"), SYNTAX_ERRORS)
def test_syntax_errors_name_their_position(expression: str, position: int, words: str) -> None:
    with pytest.raises(Sql92SyntaxError) as caught:
        parse(expression)
    assert caught.value.position == position
    assert words in str(caught.value)


def test_the_message_gives_line_and_column() -> None:
    with pytest.raises(Sql92SyntaxError, match=r"at line 2, column 5$"):
        parse("a = 1 AND\nb = ")


def test_nesting_is_bounded_not_a_recursion_error() -> None:
    parse("(" * MAX_NESTING + "a = 1" + ")" * MAX_NESTING)
    with pytest.raises(Sql92SyntaxError, match="nested deeper"):
        parse("(" * (MAX_NESTING + 1) + "a = 1" + ")" * (MAX_NESTING + 1))
    with pytest.raises(Sql92SyntaxError, match="nested deeper"):
        parse("NOT " * 10_000 + "a")
    with pytest.raises(Sql92SyntaxError, match="deeper than"):
        parse("a" + " = a" * 10_000)


def test_long_and_or_chains_are_flat() -> None:
    chain = " OR ".join(f"a = '{i}'" for i in range(5_000))
    assert parse(chain).matches({"a": "4999"})
    chain = " AND ".join("a IS NOT NULL" for _ in range(5_000))
    assert parse(chain).matches({"a": "x"})


_WORDS = ["AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "BETWEEN", "--", "/*", "*/"]
_ALPHABET = st.sampled_from([*"ab$_019.eEL'()=<>,+-*/ \n\t!\"", *_WORDS])


def _parse_or_error(text: str) -> Sql92Filter | Sql92SyntaxError:
    try:
        return parse(text)
    except Sql92SyntaxError as exc:
        return exc


@settings(max_examples=500)
@given(st.lists(_ALPHABET, max_size=30).map("".join) | st.text(max_size=40))
def test_any_text_parses_or_raises_the_syntax_error(text: str) -> None:
    selector = _parse_or_error(text)
    if isinstance(selector, Sql92SyntaxError):
        assert 0 <= selector.position <= len(text)
        return
    for properties in ({}, {"a": "1", "b": "x"}, {"a": "NaN", "b": "1e5", "$": "true"}):
        assert isinstance(selector.matches(properties), bool)
