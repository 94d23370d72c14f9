"""Transactional messages on the broker: half/op bookkeeping and the check-back service
(docs/protocol.md §11; Java ``TransactionalMessageServiceImpl``,
``TransactionalMessageBridge``, ``TransactionalMessageCheckService``).

Topics, all with queue 0 only::

    RMQ_SYS_TRANS_HALF_TOPIC     half messages (stored by the send path, REAL_TOPIC/REAL_QID
                                 in their properties); re-put at the end after every check
    RMQ_SYS_TRANS_OP_HALF_TOPIC  one op message per resolved half: tag "d", body = the
                                 half's queue offset in decimal
    TRANS_CHECK_MAX_TIME_TOPIC   halves checked ``transactionCheckMax`` times, discarded

The checker scans, every ``transactionCheckInterval`` ms, the half queue from its progress
offset. A half with an op entry is done. One older than ``transactionTimeOut`` (or its
``CHECK_IMMUNITY_TIME_IN_SECONDS``) gets ``TRANSACTION_CHECK_TIMES`` + 1 and is re-put at
the end of the half queue; the copy's offsets go to one live producer channel of its
``PGROUP`` in a CHECK_TRANSACTION_STATE (39, oneway). A half checked ``transactionCheckMax``
times, or older than ``fileReservedTime``, is discarded instead. A younger half stops the
scan: later ones are younger still. Progress is kept as consumer offsets of group
``CID_RMQ_SYS_TRANS`` on the half and op topics, so it survives restarts; the op offset only
moves over op entries known to be done (Java ``calculateOpOffset``).

Where this differs from Java: an END_TRANSACTION for a half whose ``UNIQ_KEY`` was already
committed or rolled back by this broker process (the original request racing a check-back
answer) writes the op entry but never a second real message, and the checker settles such
copies without asking the producer. Java delivers the message twice in that race.

- ``progress``  the checker's pure arithmetic: op progress, check deadlines, one scan's view
- ``half``      :class:`TransactionalMessageService`: reads half messages, writes what
                resolves them (real, op, re-put, discard); END_TRANSACTION uses it
- ``checker``   :class:`TransactionCheckService`: the periodic scan and check-back
"""
