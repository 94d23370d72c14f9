"""What a consumer subscribes with: a TAG expression or a SQL92 one (Java ``MessageSelector``).

``MessageSelector.by_tag("TagA || TagB")`` filters by tag, as a plain string does;
``MessageSelector.by_sql("a BETWEEN 3 AND 5 AND b = 'x'")`` asks the broker to evaluate
the expression on each message's properties (docs/protocol.md §5.7). The SQL text is parsed
here first, with the broker's own parser (:mod:`rocketkube.common.filter`), so a syntax
error raises :class:`~rocketkube.common.filter.Sql92SyntaxError` before anything is sent;
the broker needs ``enablePropertyFilter=true`` to serve it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketkube.common import filter as sql_filter
from rocketkube.common.protocol import heartbeat

__all__ = ["MessageSelector", "Selector", "subscription"]


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """An expression and its type (``TAG`` or ``SQL92``); build it with the class methods."""

    expression_type: str
    expression: str

    @classmethod
    def by_tag(cls, expression: str = heartbeat.SUB_ALL) -> MessageSelector:
        """Messages whose tag is one of ``"TagA || TagB"``; ``"*"`` (or empty) for all."""
        return cls(heartbeat.EXPRESSION_TAG, expression or heartbeat.SUB_ALL)

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        """Messages whose properties satisfy the SQL92 ``expression``; raises
        ``Sql92SyntaxError`` (a ``ValueError``) when it does not parse."""
        sql_filter.parse(expression)
        return cls(sql_filter.EXPRESSION_TYPE, expression)


Selector = str | MessageSelector
"""What ``subscribe`` takes: a TAG expression string, or a :class:`MessageSelector`."""


def subscription(topic: str, selector: Selector, sub_version: int) -> heartbeat.SubscriptionData:
    """The subscription data the heartbeats and pulls of ``topic`` carry."""
    if isinstance(selector, str):
        selector = MessageSelector.by_tag(selector)
    if selector.expression_type == heartbeat.EXPRESSION_TAG:
        return heartbeat.parse_subscription(topic, selector.expression, sub_version)
    return heartbeat.SubscriptionData(
        topic,
        selector.expression,
        sub_version=sub_version,
        expression_type=selector.expression_type,
    )
