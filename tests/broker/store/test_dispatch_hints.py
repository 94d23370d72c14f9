"""Dispatch hints: TAGS, KEYS and UNIQ_KEY handed over by the send path give the consume
queues and the index exactly what reading the stored properties gives (as recovery and a
slave do)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from rocketkube.broker.store import DispatchHints, InnerMessage, MessageStore
from rocketkube.broker.store.dispatch import property_value
from rocketkube.common.message import hashing
from rocketkube.common.message.properties import decode_properties, encode_properties

MakeMessage = Callable[..., InnerMessage]
OpenStore = Callable[..., MessageStore]

_NAMES = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "CLUSTER", "A", "XTAGS"])
_VALUES = st.text(st.characters(blacklist_characters="\x02", codec="utf-8"), min_size=1)
_PROPS = st.lists(st.tuples(_NAMES, _VALUES), max_size=8)


@given(_PROPS)
def test_hints_from_the_decoded_properties_equal_the_stored_bytes(
    entries: list[tuple[str, str]],
) -> None:
    # what the send path does: decode what arrived, store its re-encoding, hint from the dict
    props = decode_properties(encode_properties(dict(entries)))
    stored = encode_properties(props).encode("utf-8", "replace")
    for name in ("TAGS", "KEYS", "UNIQ_KEY"):
        hinted = props.get(name)
        expected = None if hinted is None else hinted.encode()
        assert property_value(stored, f"{name}\x01".encode()) == expected


def hinted(message: InnerMessage) -> InnerMessage:
    props = decode_properties(message.properties)
    hints = DispatchHints(props.get("TAGS"), props.get("KEYS"), props.get("UNIQ_KEY"))
    return message._replace(hints=hints)


def test_a_hinted_message_is_dispatched_as_a_read_one(
    open_store: OpenStore, msg: MakeMessage, clock: Any
) -> None:
    store = open_store()
    made = [
        msg(b"a", tags="TagA", keys="k1 k2", uniq="U1"),
        msg(b"b", keys="k2"),
        msg(b"c", tags="TagB", uniq="U2"),
        msg(b"d"),
    ]
    for message in made:
        store.put_message(message)
        store.put_message(hinted(message._replace(topic="Hinted")))
    plain = store.get_messages("TopicA", 0, 0, 32)
    fast = store.get_messages("Hinted", 0, 0, 32)
    assert plain.queue_offsets == fast.queue_offsets == [0, 1, 2, 3]

    def codes(topic: str) -> list[int]:
        """The consume queue tags codes, as a pull's tag filter sees them."""
        seen: list[int] = []

        def keep(code: int) -> bool:
            seen.append(code)
            return True

        store.get_messages(topic, 0, 0, 32, keep)
        return seen

    assert codes("Hinted") == codes("TopicA")
    assert codes("Hinted") == [hashing.tags_code("TagA"), 0, hashing.tags_code("TagB"), 0]
    span = (0, clock.now + 1000)
    for key in ("k1", "k2", "U1", "U2", "missing"):
        by_plain = store.query_by_key("TopicA", key, 32, *span).physical_offsets
        by_hint = store.query_by_key("Hinted", key, 32, *span).physical_offsets
        assert len(by_plain) == len(by_hint), key
    assert len(store.query_by_key("Hinted", "k2", 32, *span).physical_offsets) == 2
