"""Message filters the broker evaluates and the SDK checks: RocketMQ's SQL92 language.

Shared by the broker (evaluating subscriptions on message properties) and the client
(refusing a bad expression before it is sent), so it lives in ``common``.

Modules (pure, no I/O):

- ``sql92``   :func:`parse` and :class:`Sql92Filter`, the grammar and its checks
- ``lexer``   the tokens and :class:`Sql92SyntaxError`
- ``nodes``   the expression tree and its three-valued evaluation
- ``values``  Java's value kinds and comparison rules
"""

from __future__ import annotations

from rocketkube.common.filter.lexer import Sql92SyntaxError
from rocketkube.common.filter.sql92 import EXPRESSION_TYPE, Sql92Filter, parse
from rocketkube.common.filter.values import EvaluationError

__all__ = ["EXPRESSION_TYPE", "EvaluationError", "Sql92Filter", "Sql92SyntaxError", "parse"]
