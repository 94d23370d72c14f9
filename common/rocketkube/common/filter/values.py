"""The values a SQL92 filter computes with, and Java's rules for comparing them.

RocketMQ evaluates its filters in Java (``org.apache.rocketmq.filter``, taken from
ActiveMQ's selectors), so what matches depends on Java's types. The value kinds here:

======================  ===================  ==============================================
Java                    Python here          comes from
======================  ===================  ==============================================
``null``                ``None``             a missing property, ``NULL``, unknown results
``Boolean``             ``bool``             ``TRUE``/``FALSE``, comparisons, AND/OR/NOT
``Integer``             ``int``              a decimal literal within the int32 range
``Long``                :class:`JavaLong`    a decimal literal beyond it
``Double``              ``float``            a floating point literal (``1.5``, ``.5``, ``2E3``)
``String``              ``str``              a string literal, and every property value
======================  ===================  ==============================================

:func:`compare` is Java's ``ComparisonExpression.__compare`` (with string conversion on, as
RocketMQ's parser sets it): two values of one kind compare naturally; an Integer meets a
Long or a Double by widening; a String meeting a number or a Boolean is converted to that
kind first (``Integer.valueOf``, ``Long.valueOf``, ``Double.valueOf``,
``Boolean.valueOf``), and a String that does not parse raises
:class:`EvaluationError`; any other pair of kinds compares as "less" (-1). Java's Boolean
meeting a String raises too (a ClassCastException there). An evaluation error makes the
whole filter not match the message, as the broker logs and drops it.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any, Final, TypeAlias

__all__ = ["EvaluationError", "JavaLong", "Known", "Value", "compare", "java_double", "kind"]

_INT_MIN: Final = -(2**31)
_INT_MAX: Final = 2**31 - 1
_LONG_MIN: Final = -(2**63)
_LONG_MAX: Final = 2**63 - 1
_INTEGER_TEXT: Final = re.compile(r"[+-]?[0-9]+")
_DOUBLE_TEXT: Final = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)"
)
_BITS: Final = struct.Struct(">q")
_JAVA_BLANKS: Final = "".join(map(chr, range(33)))  # what Java's String.trim removes


class JavaLong(int):
    """A Java ``Long``: a decimal literal outside the int32 range (``int`` is Integer)."""

    __slots__ = ()


Known: TypeAlias = str | bool | int | float
"""A non-null value."""
Value: TypeAlias = Known | None


class EvaluationError(Exception):
    """A comparison Java would throw on (a string that is no number, say)."""


def kind(value: Value) -> str:
    """The Java class name of ``value`` (``"null"`` for ``None``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, JavaLong):
        return "Long"
    if isinstance(value, int):
        return "Integer"
    if isinstance(value, float):
        return "Double"
    return "String"


def _java_integer(text: str, low: int, high: int) -> int:
    """``Integer.valueOf``/``Long.valueOf``: a sign and ASCII digits, in range."""
    if _INTEGER_TEXT.fullmatch(text):
        number = int(text)
        if low <= number <= high:
            return number
    raise EvaluationError(f"For input string: {text!r}")


def java_double(text: str) -> float:
    """``Double.valueOf``: trimmed, decimal or ``NaN``/``Infinity``, optional f/d suffix."""
    trimmed = text.strip(_JAVA_BLANKS)
    if not _DOUBLE_TEXT.fullmatch(trimmed):
        raise EvaluationError(f"For input string: {text!r}")
    return float(trimmed[:-1] if trimmed[-1] in "fFdD" else trimmed)


def _convert(text: str, like: Known) -> Known:
    """A String converted to the kind of ``like`` (never a String or null)."""
    if isinstance(like, bool):
        return text.lower() == "true"
    if isinstance(like, JavaLong):
        return JavaLong(_java_integer(text, _LONG_MIN, _LONG_MAX))
    if isinstance(like, int):
        return _java_integer(text, _INT_MIN, _INT_MAX)
    return java_double(text)


def _double_key(number: float) -> int:
    """Order of Java's ``Double.compare``: -0.0 < 0.0, NaN above everything and equal to
    itself (Java's ``doubleToLongBits``, turned into a signed order)."""
    if math.isnan(number):
        return 2**63
    bits = int(_BITS.unpack(struct.pack(">d", number))[0])
    return bits if bits >= 0 else -(bits & _LONG_MAX) - 1


def _sign(left: Any, right: Any) -> int:
    """-1, 0 or 1 for two values of one kind (or two Python numbers)."""
    return int(left > right) - int(left < right)


def compare(left: Known, right: Known) -> int:
    """Java's ``__compare`` of two non-null values: negative, 0 or positive."""
    left_kind, right_kind = kind(left), kind(right)
    if left_kind != right_kind:
        if left_kind == "Boolean":
            if right_kind == "String":
                raise EvaluationError("a Boolean cannot be compared with a String")
            return -1
        if right_kind == "Boolean" and left_kind != "String":
            return -1
        if left_kind == "String":
            left = _convert(str(left), right)
        elif right_kind == "String":
            right = _convert(str(right), left)
        elif "Double" in (left_kind, right_kind):
            left, right = float(left), float(right)
    if isinstance(left, float) and isinstance(right, float):
        return _sign(_double_key(left), _double_key(right))
    return _sign(left, right)
