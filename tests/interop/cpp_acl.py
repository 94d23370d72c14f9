"""The real C++ RocketMQ client 1.0.1 (PyPI ``rocketmq==0.4.4``) signing its requests with
``set_session_credentials`` for a broker with ``aclEnable=true``.

Run in a subprocess by ``test_acl_interop.py``, never imported by pytest::

    python cpp_acl.py NAMESRV TOPIC DENIED_TOPIC GROUP DENIED_GROUP COUNT ACCESS SECRET

Sends COUNT messages to TOPIC, then one to DENIED_TOPIC (the error it raises kept);
consumes TOPIC in GROUP until all COUNT arrived (at most 60 s), then in DENIED_GROUP for
a few seconds (what arrives counted). Prints one JSON line ``{"sent": [status...],
"denied_send": "error text or null", "received": n, "received_denied": n}`` (or
``{"error": ...}``) and leaves with ``os._exit`` (see ``cpp_roundtrip.py``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback
from typing import Any

from rocketmq.client import Message, Producer, PushConsumer

CHANNEL = "ALIYUN"  # the C++ client's default OnsChannel
SEND_TIMEOUT_MS = 30_000
CONSUME_SECONDS = 60.0
#: How long the consumer whose group is denied is left to try.
DENIED_SECONDS = 5.0


def produce(args: list[str]) -> tuple[list[str], str | None]:
    namesrv, topic, denied_topic, group, _, count, access, secret = args
    producer = Producer(f"{group}_P", timeout=SEND_TIMEOUT_MS)
    producer.set_namesrv_addr(namesrv)
    producer.set_session_credentials(access, secret, CHANNEL)
    producer.start()
    sent = []
    for i in range(int(count)):
        msg = Message(topic)
        msg.set_body(f"acl-{i}")
        sent.append(producer.send_sync(msg).status.name)
    denied: str | None = None
    refused = Message(denied_topic)
    refused.set_body("denied")
    try:
        producer.send_sync(refused)
    except Exception as exc:  # the client raises its own exception types
        denied = f"{type(exc).__name__}: {exc}"
    producer.shutdown()
    return sent, denied


def consume(
    namesrv: str, topic: str, group: str, count: int, seconds: float, access: str, secret: str
) -> tuple[int, PushConsumer]:
    """How many distinct bodies arrived (all ``count``, or what came in ``seconds``)."""
    lock = threading.Lock()
    done = threading.Event()
    seen: set[str] = set()

    def on_message(msg: Any) -> None:
        with lock:
            seen.add(msg.body.decode() if isinstance(msg.body, bytes) else msg.body)
            if len(seen) >= count:
                done.set()

    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    consumer.set_session_credentials(access, secret, CHANNEL)
    consumer.subscribe(topic, on_message, "*")
    consumer.start()
    done.wait(seconds)
    with lock:
        return len(seen), consumer


def main(args: list[str]) -> int:
    namesrv, topic, _, group, denied_group, count, access, secret = args
    sent, denied = produce(args)
    received, allowed = consume(namesrv, topic, group, int(count), CONSUME_SECONDS,
                                access, secret)  # fmt: skip
    received_denied, refused = consume(namesrv, topic, denied_group, int(count),
                                       DENIED_SECONDS, access, secret)  # fmt: skip
    result = {
        "sent": sent,
        "denied_send": denied,
        "received": received,
        "received_denied": received_denied,
    }
    print(json.dumps(result), flush=True)
    for consumer in (allowed, refused):
        consumer.shutdown()
    return 0


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    except BaseException:
        print(json.dumps({"error": traceback.format_exc()}), flush=True)
        code = 1
    sys.stdout.flush()
    os._exit(code)
