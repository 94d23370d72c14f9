"""The message as a program sees it: :class:`Message` to send, :class:`MessageExt` as stored.

Plain slotted dataclasses with no codec: the stored record layout lives in ``record``, the
properties string in ``properties``. Convenience accessors read and write the well-known
properties (``TAGS``, ``KEYS``, ``UNIQ_KEY``, ``DELAY``, ``WAIT``) in ``properties``.

Hosts are ``"ip:port"`` strings (``"[v6]:port"`` for IPv6), as
:func:`~rocketkube.common.message.ids.join_host_port` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rocketkube.common.message import ids
from rocketkube.common.message import properties as props

__all__ = ["Message", "MessageExt"]


@dataclass(slots=True)
class Message:
    """A message: topic, body, user flag and properties (insertion order is kept)."""

    topic: str
    body: bytes
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def tags(self) -> str | None:
        """The ``TAGS`` property, or ``None``."""
        return self.properties.get(props.PropertyName.TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(props.PropertyName.TAGS, value or None)

    @property
    def keys(self) -> list[str]:
        """The index keys: the ``KEYS`` property split on spaces, empty parts dropped."""
        text = self.properties.get(props.PropertyName.KEYS)
        if not text:
            return []
        return [key for key in text.split(props.KEY_SEPARATOR) if key]

    @keys.setter
    def keys(self, value: list[str]) -> None:
        self._set(props.PropertyName.KEYS, props.KEY_SEPARATOR.join(value) or None)

    @property
    def unique_key(self) -> str | None:
        """The client unique id (``UNIQ_KEY``), or ``None``."""
        return self.properties.get(props.PropertyName.UNIQ_KEY)

    @unique_key.setter
    def unique_key(self, value: str | None) -> None:
        self._set(props.PropertyName.UNIQ_KEY, value or None)

    @property
    def delay_level(self) -> int:
        """The ``DELAY`` level; 0 (no delay) when absent or not a number."""
        text = self.properties.get(props.PropertyName.DELAY)
        if not text:
            return 0
        try:
            return int(text)
        except ValueError:
            return 0

    @delay_level.setter
    def delay_level(self, value: int) -> None:
        self._set(props.PropertyName.DELAY, str(value) if value > 0 else None)

    @property
    def wait_store_ok(self) -> bool:
        """The ``WAIT`` property: absent means ``True``, as in Java."""
        text = self.properties.get(props.PropertyName.WAIT)
        return text is None or text == "true"

    def _set(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value


@dataclass(slots=True)
class MessageExt(Message):
    """A stored message: a :class:`Message` plus where, when and by whom it was stored."""

    queue_id: int = 0
    queue_offset: int = 0
    commit_log_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = ""
    store_timestamp: int = 0
    store_host: str = ""
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body_crc: int = 0
    store_size: int = 0

    @property
    def msg_id(self) -> str:
        """The offset message id, from ``store_host`` and ``commit_log_offset``.

        Raises :class:`~rocketkube.common.errors.MessageFormatError` while ``store_host``
        is not an ``ip:port`` address (for example still empty).
        """
        host, port = ids.split_host_port(self.store_host)
        return ids.encode_offset_msg_id(host, port, self.commit_log_offset)

    @property
    def client_msg_id(self) -> str:
        """The id consumers report: ``UNIQ_KEY`` when present, else :attr:`msg_id`."""
        return self.properties.get(props.PropertyName.UNIQ_KEY) or self.msg_id
