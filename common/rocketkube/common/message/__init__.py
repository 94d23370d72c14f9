"""Messages: the model, their properties, ids, sysFlag bits, tags hash and batch body.

Modules (each pure, no I/O):

- ``model``       :class:`Message` and :class:`MessageExt`
- ``properties``  the ``name\\x01value\\x02...`` properties string and :class:`PropertyName`
- ``ids``         offset message ids, client unique ids, packed host addresses
- ``sysflag``     message and pull sysFlag bits
- ``hashing``     Java ``String.hashCode`` and the tags code
- ``batch``       the SEND_BATCH_MESSAGE body
- ``record``      the stored record layout
"""

from __future__ import annotations

from rocketkube.common.message.batch import BatchItem, decode_batch, encode_batch
from rocketkube.common.message.hashing import java_string_hash, tags_code
from rocketkube.common.message.ids import (
    UniqueIdGenerator,
    decode_offset_msg_id,
    encode_offset_msg_id,
    join_host_port,
    pack_host,
    split_host_port,
    unpack_host,
)
from rocketkube.common.message.model import Message, MessageExt
from rocketkube.common.message.properties import PropertyName, decode_properties, encode_properties
from rocketkube.common.message.sysflag import TransactionType, transaction_type

__all__ = [
    "BatchItem",
    "Message",
    "MessageExt",
    "PropertyName",
    "TransactionType",
    "UniqueIdGenerator",
    "decode_batch",
    "decode_offset_msg_id",
    "decode_properties",
    "encode_batch",
    "encode_offset_msg_id",
    "encode_properties",
    "java_string_hash",
    "join_host_port",
    "pack_host",
    "split_host_port",
    "tags_code",
    "transaction_type",
    "unpack_host",
]
