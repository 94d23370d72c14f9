"""SQL92 property filters on the pull path (Java's ``ConsumerFilterManager`` and
``ExpressionMessageFilter``, without their bloom filter).

With ``enablePropertyFilter`` a subscription of expression type SQL92 is matched on each
message's properties instead of its tags code: the consume queue's tags-code prefilter
keeps every entry, and each record it keeps is decoded as far as its properties and
evaluated (:mod:`rocketkube.common.filter`). Expressions are parsed once, whichever
subscription (the pull's own or the heartbeat's) carries them: :class:`FilterCache` keeps
the parsed filters, and the syntax errors, by expression text.
"""

from __future__ import annotations

from typing import Final

from rocketkube.broker.store import RecordFilter
from rocketkube.common import errors
from rocketkube.common.filter import Sql92Filter, Sql92SyntaxError, parse
from rocketkube.common.message import properties, record

__all__ = ["DEFAULT_CACHE_SIZE", "FilterCache", "record_filter"]

DEFAULT_CACHE_SIZE: Final = 1024


class FilterCache:
    """Parsed expressions by text, the most recently used ``size`` of them."""

    def __init__(self, size: int = DEFAULT_CACHE_SIZE) -> None:
        self.size = size
        self._entries: dict[str, Sql92Filter | Sql92SyntaxError] = {}

    def get(self, expression: str) -> Sql92Filter | Sql92SyntaxError:
        """The filter of ``expression``, or why it does not parse."""
        entry = self._entries.pop(expression, None)
        if entry is None:
            try:
                entry = parse(expression)
            except Sql92SyntaxError as exc:
                entry = exc
        self._entries[expression] = entry  # last: the most recently used
        if len(self._entries) > self.size:
            del self._entries[next(iter(self._entries))]
        return entry


def record_filter(selector: Sql92Filter) -> RecordFilter:
    """The store's per-record check for ``selector``: a record that does not decode does
    not match."""

    def matches(stored: memoryview) -> bool:
        try:
            raw = record.read_meta(stored, 0).properties
        except errors.MessageFormatError:
            return False
        return selector.matches(properties.decode_properties(raw))

    return matches
