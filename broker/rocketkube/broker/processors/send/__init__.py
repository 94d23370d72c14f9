"""The send path: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320).

- ``processor``: :class:`SendProcessor`, the checks and the store messages of each send
  (a plain send's layout is the store records module's: ``records.prepare_plain``);
- ``batch``: a batch's body split into its messages;
- ``state``: what the path caches per topic and the sends waiting for their flush;
- ``answers``: the answers, at once or once the group commit and a slave have a send.
"""

from rocketkube.broker.processors.send.processor import SendProcessor, table

__all__ = ["SendProcessor", "table"]
