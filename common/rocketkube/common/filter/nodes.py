"""The tree a SQL92 filter compiles to, and its three-valued evaluation.

Each node evaluates, against a message's properties (name -> string value), to a
:data:`~rocketkube.common.filter.values.Value`; the boolean ones to ``True``, ``False`` or
``None`` (unknown, SQL's third truth value), as RocketMQ's expression classes do:

- :class:`Property`: the property's value, ``None`` when the message has none.
- :class:`Equal` (``=``, and ``IS NULL`` against ``NULL``): ``None`` when only the left
  side is null, ``False`` when only the right one is, ``True`` when both are, else
  :func:`~rocketkube.common.filter.values.compare` is 0.
- :class:`Compare` (``> >= < <=``): ``None`` when either side is null; two strings (two
  properties) are compared as doubles, raising when one is no number; else ``compare``.
- :class:`In`: ``None`` for a missing property, else membership (NOT IN: its negation).
- :class:`Not`, :class:`And`, :class:`Or`: SQL's three-valued logic,
  short-circuiting left to right as Java does (an error on the right of a decided AND/OR
  is never reached). Chains of AND or OR are one node each, so a long chain costs no depth.
- :class:`Definitely` (``IS TRUE``, ``IS FALSE`` over an :class:`Equal`): ``True`` when
  its operand is, else ``False``, never unknown.
- :class:`BooleanCast`: a bare property used as a condition: ``None`` when missing,
  ``False`` otherwise (a property value is a string, never a Boolean).
- :class:`Negate`: the negated number, ``None`` for anything else (a property's string).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rocketkube.common.filter.values import EvaluationError, JavaLong, Value, compare, java_double

__all__ = [
    "And",
    "BooleanCast",
    "Compare",
    "Constant",
    "Definitely",
    "Equal",
    "In",
    "Negate",
    "Node",
    "Not",
    "Or",
    "Property",
]

Properties = Mapping[str, str]


class Node(abc.ABC):
    """One expression of the tree."""

    __slots__ = ()

    @abc.abstractmethod
    def evaluate(self, properties: Properties) -> Value:
        """The value for a message with ``properties``; raises :class:`EvaluationError`."""

    @property
    def is_boolean(self) -> bool:
        """Whether Java's parser sees a ``BooleanExpression`` (a condition) here."""
        return True

    def children(self) -> Sequence[Node]:
        return ()


@dataclass(frozen=True, slots=True)
class Constant(Node):
    """A literal; TRUE, FALSE and NULL are boolean expressions, the others are not."""

    value: Value

    @property
    def is_boolean(self) -> bool:
        return self.value is None or isinstance(self.value, bool)

    def evaluate(self, properties: Properties) -> Value:
        return self.value


@dataclass(frozen=True, slots=True)
class Property(Node):
    name: str

    @property
    def is_boolean(self) -> bool:
        return False

    def evaluate(self, properties: Properties) -> Value:
        return properties.get(self.name)


@dataclass(frozen=True, slots=True)
class Negate(Node):
    operand: Node

    @property
    def is_boolean(self) -> bool:
        return False

    def children(self) -> Sequence[Node]:
        return (self.operand,)

    def evaluate(self, properties: Properties) -> Value:
        value = self.operand.evaluate(properties)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return JavaLong(-value) if isinstance(value, JavaLong) else -value


@dataclass(frozen=True, slots=True)
class Definitely(Node):
    """Whether ``operand`` holds, unknown counting as not: SQL's ``IS TRUE``."""

    operand: Node

    def children(self) -> Sequence[Node]:
        return (self.operand,)

    def evaluate(self, properties: Properties) -> Value:
        return self.operand.evaluate(properties) is True


@dataclass(frozen=True, slots=True)
class BooleanCast(Node):
    operand: Property

    def children(self) -> Sequence[Node]:
        return (self.operand,)

    def evaluate(self, properties: Properties) -> Value:
        value = self.operand.evaluate(properties)
        return None if value is None else value is True


@dataclass(frozen=True, slots=True)
class Not(Node):
    operand: Node

    def children(self) -> Sequence[Node]:
        return (self.operand,)

    def evaluate(self, properties: Properties) -> Value:
        value = self.operand.evaluate(properties)
        return None if value is None else not value


@dataclass(frozen=True, slots=True)
class And(Node):
    """``a AND b AND ...``: False at the first False, else None if any is None."""

    operands: tuple[Node, ...]

    def children(self) -> Sequence[Node]:
        return self.operands

    def evaluate(self, properties: Properties) -> Value:
        unknown = False
        for operand in self.operands:
            value = operand.evaluate(properties)
            if value is False:
                return False
            unknown = unknown or value is None
        return None if unknown else True


@dataclass(frozen=True, slots=True)
class Or(Node):
    """``a OR b OR ...``: True at the first True, else None if any is None."""

    operands: tuple[Node, ...]

    def children(self) -> Sequence[Node]:
        return self.operands

    def evaluate(self, properties: Properties) -> Value:
        unknown = False
        for operand in self.operands:
            value = operand.evaluate(properties)
            if value is True:
                return True
            unknown = unknown or value is None
        return None if unknown else False


@dataclass(frozen=True, slots=True)
class Equal(Node):
    left: Node
    right: Node

    def children(self) -> Sequence[Node]:
        return (self.left, self.right)

    def evaluate(self, properties: Properties) -> Value:
        left = self.left.evaluate(properties)
        right = self.right.evaluate(properties)
        if left is None or right is None:
            return None if right is not None else left is None
        return compare(left, right) == 0


@dataclass(frozen=True, slots=True)
class Compare(Node):
    """``left <op> right`` for ``>``, ``>=``, ``<``, ``<=``."""

    operator: str
    left: Node
    right: Node

    def children(self) -> Sequence[Node]:
        return (self.left, self.right)

    def evaluate(self, properties: Properties) -> Value:
        left = self.left.evaluate(properties)
        if left is None:
            return None
        right = self.right.evaluate(properties)
        if right is None:
            return None
        if isinstance(left, str) and isinstance(right, str):
            try:
                left, right = java_double(left), java_double(right)
            except EvaluationError as exc:
                raise EvaluationError(
                    f"strings are not compared by {self.operator}: {left!r}, {right!r}"
                ) from exc
        order = compare(left, right)
        return _ORDERS[self.operator](order)


_ORDERS: dict[str, Callable[[int], bool]] = {
    ">": lambda order: order > 0,
    ">=": lambda order: order >= 0,
    "<": lambda order: order < 0,
    "<=": lambda order: order <= 0,
}


@dataclass(frozen=True, slots=True)
class In(Node):
    operand: Property
    values: frozenset[str]
    negated: bool = False

    def children(self) -> Sequence[Node]:
        return (self.operand,)

    def evaluate(self, properties: Properties) -> Value:
        value = self.operand.evaluate(properties)
        if not isinstance(value, str):
            return None
        return (value in self.values) != self.negated
