"""SQL92 message filters: RocketMQ's ``org.apache.rocketmq.filter`` language, parsed by hand.

A consumer subscribing with ``MessageSelector.bySql(...)`` gets the messages whose
properties satisfy the expression; the broker evaluates it on each candidate message.
:func:`parse` turns the text into a :class:`Sql92Filter` (or raises
:class:`~rocketkube.common.filter.lexer.Sql92SyntaxError`), a recursive-descent parser of
RocketMQ 4.x's grammar (``SelectorParser.jj``, tokens in
:mod:`~rocketkube.common.filter.lexer`)::

    selector    := or EOF
    or          := and ( OR and )*
    and         := equality ( AND equality )*
    equality    := comparison ( "=" comparison | "<>" comparison
                                | IS [NOT] ( NULL | TRUE | FALSE ) )*
    comparison  := unary ( ( ">" | ">=" | "<" | "<=" ) unary
                         | [NOT] BETWEEN unary AND unary
                         | [NOT] IN "(" STRING ( "," STRING )* ")" )*
    unary       := "+" unary | "-" unary | NOT unary | primary
    primary     := STRING | DECIMAL | FLOAT | TRUE | FALSE | NULL | ID | "(" or ")"

So ``NOT`` binds tighter than any comparison: ``NOT a = 'x'`` is ``(NOT a) = 'x'``, which
never matches (write ``NOT (a = 'x')`` or ``a <> 'x'``). An ID names a message property,
RocketMQ's own included (``TAGS``, ``KEYS``...); every property value is a string.

Checks RocketMQ makes while parsing, refused here the same way:

- the whole expression, and each operand of AND, OR and NOT, must be a condition: a
  comparison, a logical operation, TRUE/FALSE/NULL, or a bare property (true when it holds
  a Boolean, which a string never is: so false when present, unknown when missing);
- ``> >= < <=`` and BETWEEN take no string, boolean or NULL literal and no condition;
- ``=`` and ``<>`` take no NULL literal, and no TRUE/FALSE literal on the left of a
  literal that is not one;
- IN applies to a property only, and lists string literals only;
- BETWEEN of two literals needs non-null bounds in order (``BETWEEN 5 AND 3`` is refused);
- a decimal literal is a Java Integer, or a Long beyond the int32 range, and at most
  ``Long.MAX_VALUE``; a float literal must be finite and not 0 (``0.0`` is refused).

Typing at evaluation (:mod:`~rocketkube.common.filter.values`, :mod:`.nodes`): a
comparison with a missing property is unknown, and unknown never matches; a property
compared with a number must parse as that number's Java type (``a = 3`` needs an int32
text, ``a > 3.0`` a double text), else the message does not match at all, whatever the
rest of the expression says (Java throws and the broker drops the message); ``=`` and
``<>`` between a property and a string literal compare the texts; ``a = TRUE`` holds when
the value is ``true`` in any letter case; ``x IS TRUE`` (``IS FALSE``) holds when ``x = TRUE``
(``x = FALSE``) does, and is false, never unknown, otherwise (``IS NOT TRUE`` of a missing
property holds), as in SQL.

Where this differs from RocketMQ: its 4.x grammar has ``IS [NOT] NULL`` only; ``IS [NOT]
TRUE`` and ``IS [NOT] FALSE`` are SQL's and added here (an expression using them is refused
by a RocketMQ broker, so a consumer moving there finds out at once). Its generated parser
stops at the end of the first complete expression and ignores the rest (``a = 1 b = 2``
filters by ``a = 1``); here
anything after a complete expression is a syntax error, since a silently dropped half of a
filter delivers messages the consumer did not ask for. Nesting deeper than
:data:`MAX_NESTING` parentheses or unary operators, or a tree deeper than
:data:`MAX_DEPTH`, is refused too (Java would overflow its stack somewhere further).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rocketkube.common.filter import nodes
from rocketkube.common.filter.lexer import Sql92SyntaxError, Token, TokenKind, tokenize
from rocketkube.common.filter.values import EvaluationError, JavaLong, compare

__all__ = ["EXPRESSION_TYPE", "MAX_DEPTH", "MAX_NESTING", "Sql92Filter", "parse"]

EXPRESSION_TYPE: Final = "SQL92"
"""The ``expressionType`` of SQL92 subscriptions (Java ``ExpressionType.SQL92``)."""

MAX_NESTING: Final = 50
MAX_DEPTH: Final = 100
_INT_MAX: Final = 2**31 - 1
_LONG_MAX: Final = 2**63 - 1
_ORDERING: Final = frozenset({">", ">=", "<", "<="})
_LITERALS: Final = {"TRUE": True, "FALSE": False, "NULL": None}


@dataclass(frozen=True, slots=True)
class Sql92Filter:
    """A parsed expression: ``matches`` decides a message by its properties."""

    expression: str
    root: nodes.Node

    def evaluate(self, properties: Mapping[str, str]) -> bool | None:
        """True, False or None (unknown); raises ``EvaluationError`` where Java throws."""
        value = self.root.evaluate(properties)
        return value if isinstance(value, bool) else None

    def matches(self, properties: Mapping[str, str]) -> bool:
        """Whether the broker delivers a message with ``properties``: only on True."""
        try:
            return self.root.evaluate(properties) is True
        except EvaluationError:
            return False


def parse(expression: str) -> Sql92Filter:
    """Parse ``expression``; raises :class:`Sql92SyntaxError` (a ``ValueError``) and
    nothing else."""
    return Sql92Filter(expression, _Parser(expression).selector())


def _depth(root: nodes.Node) -> int:
    """Depth of the tree, walked without recursion."""
    deepest, stack = 0, [(root, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in node.children())
    return deepest


class _Parser:
    def __init__(self, expression: str) -> None:
        self.text = expression
        self.tokens = list(tokenize(expression))
        self.index = 0
        self.nesting = 0

    # -- tokens ----------------------------------------------------------------------------

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def at(self, text: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token.kind in (TokenKind.KEYWORD, TokenKind.OPERATOR) and token.text == text

    def advance(self) -> Token:
        token = self.peek()
        self.index = min(self.index + 1, len(self.tokens) - 1)
        return token

    def expect(self, text: str, context: str) -> Token:
        if not self.at(text):
            raise self.unexpected(f"expected {text} {context}")
        return self.advance()

    def unexpected(self, problem: str) -> Sql92SyntaxError:
        token = self.peek()
        found = token.kind.value if token.kind is TokenKind.EOF else repr(token.text)
        return Sql92SyntaxError(self.text, token.start, f"{problem}, found {found}")

    def refuse(self, start: int, problem: str) -> Sql92SyntaxError:
        return Sql92SyntaxError(self.text, start, problem)

    def source(self, start: int) -> str:
        """The text from ``start`` to the end of the last token read."""
        return self.text[start : self.tokens[self.index - 1].end]

    # -- grammar ---------------------------------------------------------------------------

    def selector(self) -> nodes.Node:
        start = self.peek().start
        root = self.as_condition(self.or_expression(), start)
        if self.peek().kind is not TokenKind.EOF:
            raise self.unexpected("expected AND, OR or the end after a complete expression")
        if _depth(root) > MAX_DEPTH:
            raise self.refuse(start, f"expression deeper than {MAX_DEPTH} levels")
        return root

    def or_expression(self) -> nodes.Node:
        start = self.peek().start
        first = self.and_expression()
        if not self.at("OR"):
            return first
        operands = [self.as_condition(first, start)]
        while self.at("OR"):
            self.advance()
            start = self.peek().start
            operands.append(self.as_condition(self.and_expression(), start))
        return nodes.Or(tuple(operands))

    def and_expression(self) -> nodes.Node:
        start = self.peek().start
        first = self.equality()
        if not self.at("AND"):
            return first
        operands = [self.as_condition(first, start)]
        while self.at("AND"):
            self.advance()
            start = self.peek().start
            operands.append(self.as_condition(self.equality(), start))
        return nodes.And(tuple(operands))

    def equality(self) -> nodes.Node:
        start = self.peek().start
        left = self.comparison()
        while True:
            if self.at("=") or self.at("<>"):
                negated = self.advance().text == "<>"
                right_start = self.peek().start
                right = self.comparison()
                left = self.equal(left, start, right, right_start)
                left = nodes.Not(left) if negated else left
            elif self.at("IS"):
                self.advance()
                negated = self.at("NOT")
                if negated:
                    self.advance()
                if self.at("TRUE") or self.at("FALSE"):
                    truth = self.advance().text == "TRUE"
                    left = nodes.Definitely(nodes.Equal(left, nodes.Constant(truth)))
                else:
                    if not self.at("NULL"):
                        after = "IS NOT" if negated else "IS"
                        raise self.unexpected(f"expected NULL, TRUE or FALSE after {after}")
                    self.advance()
                    left = nodes.Equal(left, nodes.Constant(None))
                left = nodes.Not(left) if negated else left
            else:
                return left

    def comparison(self) -> nodes.Node:
        start = self.peek().start
        left = self.unary()
        while True:
            token = self.peek()
            if token.kind is TokenKind.OPERATOR and token.text in _ORDERING:
                self.advance()
                right_start = self.peek().start
                right = self.unary()
                left = self.ordering(token.text, left, start, right, right_start)
            elif self.at("BETWEEN") or (self.at("NOT") and self.at("BETWEEN", 1)):
                left = self.between(left, start)
            elif self.at("IN") or (self.at("NOT") and self.at("IN", 1)):
                left = self.in_list(left, start)
            else:
                return left

    def unary(self) -> nodes.Node:
        token = self.peek()
        if not (self.at("+") or self.at("-") or self.at("NOT")):
            return self.primary()
        self.advance()
        self.enter(token)
        start = self.peek().start
        operand = self.unary()
        self.nesting -= 1
        if token.text == "+":
            return operand
        if token.text == "-":
            return nodes.Negate(operand)
        return nodes.Not(self.as_condition(operand, start))

    def primary(self) -> nodes.Node:
        token = self.peek()
        kind = token.kind
        if self.at("("):
            self.advance()
            self.enter(token)
            inner = self.or_expression()
            self.expect(")", "to close the parenthesis")
            self.nesting -= 1
            return inner
        if kind is TokenKind.ID:
            self.advance()
            return nodes.Property(token.text)
        if kind is TokenKind.KEYWORD and token.text in _LITERALS:
            self.advance()
            return nodes.Constant(_LITERALS[token.text])
        if kind is TokenKind.STRING:
            self.advance()
            return nodes.Constant(_unquote(token.text))
        if kind is TokenKind.DECIMAL:
            self.advance()
            return nodes.Constant(self.decimal(token))
        if kind is TokenKind.FLOAT:
            self.advance()
            return nodes.Constant(self.floating(token))
        raise self.unexpected("expected a property, a literal or '('")

    def enter(self, token: Token) -> None:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise self.refuse(token.start, f"expression nested deeper than {MAX_NESTING} levels")

    # -- literals --------------------------------------------------------------------------

    def decimal(self, token: Token) -> int:
        digits = token.text.rstrip("lL")
        number = int(digits)
        if number > _LONG_MAX:
            raise self.refuse(token.start, f"decimal literal {digits} is beyond Long.MAX_VALUE")
        return number if number <= _INT_MAX else JavaLong(number)

    def floating(self, token: Token) -> float:
        number = float(token.text)
        if number == float("inf"):
            raise self.refuse(token.start, f"{token.text} is greater than Double.MAX_VALUE")
        if number == 0.0:
            raise self.refuse(token.start, f"{token.text} is less than Double.MIN_VALUE")
        return number

    def string_list(self) -> frozenset[str]:
        self.expect("(", "after IN")
        values: list[str] = []
        while True:
            token = self.peek()
            if token.kind is not TokenKind.STRING:
                raise self.unexpected("expected a string literal in the IN list")
            self.advance()
            values.append(_unquote(token.text))
            if not self.at(","):
                break
            self.advance()
        self.expect(")", "to close the IN list")
        return frozenset(values)

    # -- RocketMQ's checks while building --------------------------------------------------

    def as_condition(self, node: nodes.Node, start: int) -> nodes.Node:
        if node.is_boolean:
            return node
        if isinstance(node, nodes.Property):
            return nodes.BooleanCast(node)
        raise self.refuse(start, f"{self.source(start)!r} is not a condition")

    def equal(
        self, left: nodes.Node, start: int, right: nodes.Node, right_start: int
    ) -> nodes.Node:
        for node, at in ((left, start), (right, right_start)):
            if isinstance(node, nodes.Constant) and node.value is None:
                raise self.refuse(at, "NULL cannot be compared with = or <>: use IS [NOT] NULL")
        if (
            isinstance(left, nodes.Constant)
            and isinstance(right, nodes.Constant)
            and left.is_boolean
            and not right.is_boolean
        ):
            raise self.refuse(
                start, f"{self.source(start)!r} compares a boolean with a non-boolean"
            )
        return nodes.Equal(left, right)

    def ordering(
        self, operator: str, left: nodes.Node, start: int, right: nodes.Node, right_start: int
    ) -> nodes.Node:
        for node, at in ((left, start), (right, right_start)):
            if isinstance(node, nodes.Constant):
                value = node.value
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise self.refuse(at, f"only numbers compare with {operator}")
            elif node.is_boolean:
                raise self.refuse(at, f"a condition cannot be compared with {operator}")
        return nodes.Compare(operator, left, right)

    def between(self, value: nodes.Node, start: int) -> nodes.Node:
        negated = self.at("NOT")
        if negated:
            self.advance()
        self.advance()
        low_start = self.peek().start
        low = self.unary()
        self.expect("AND", "between the bounds of BETWEEN")
        high_start = self.peek().start
        high = self.unary()
        if negated:
            return nodes.Or(
                (
                    self.ordering("<", value, start, low, low_start),
                    self.ordering(">", value, start, high, high_start),
                )
            )
        if isinstance(low, nodes.Constant) and isinstance(high, nodes.Constant):
            self.check_bounds(low, high, low_start)
        return nodes.And(
            (
                self.ordering(">=", value, start, low, low_start),
                self.ordering("<=", value, start, high, high_start),
            )
        )

    def check_bounds(self, low: nodes.Constant, high: nodes.Constant, start: int) -> None:
        if low.value is None or high.value is None:
            raise self.refuse(start, "the bounds of BETWEEN cannot be NULL")
        try:
            ordered = compare(high.value, low.value) >= 0
        except EvaluationError as exc:
            raise self.refuse(start, f"the bounds of BETWEEN do not compare: {exc}") from None
        if not ordered:
            raise self.refuse(
                start, f"BETWEEN {self.source(start)}: the low bound is above the high one"
            )

    def in_list(self, value: nodes.Node, start: int) -> nodes.Node:
        negated = self.at("NOT")
        if negated:
            self.advance()
        self.advance()
        if not isinstance(value, nodes.Property):
            raise self.refuse(start, "IN applies to a property only")
        return nodes.In(value, self.string_list(), negated)


def _unquote(literal: str) -> str:
    return literal[1:-1].replace("''", "'")
