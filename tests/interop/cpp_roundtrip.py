"""Round trip through the real C++ RocketMQ client 1.0.1 (PyPI ``rocketmq==0.4.4``).

Run in a subprocess by ``test_cpp_client.py``, never imported by pytest::

    python cpp_roundtrip.py NAMESRV TOPIC GROUP COUNT [both|produce|consume] [DEADLINE_S]

Sends COUNT messages (body ``cpp-<i>``, tags TagA/TagB alternating, key ``key-<i>``,
property ``custom=c<i>``) with ``send_sync``, then consumes them back with a push consumer
subscribed to ``TagA || TagB`` until all arrived or the deadline passed. Prints one JSON
line ``{"sent": [{"status", "msg_id", "offset"}], "received": [{"body", "tags", "keys",
"custom", "id"}], "deliveries": n}`` (or ``{"error": ...}``) and leaves at once with
``os._exit``: the library's destructors and threads must not keep the process alive. The
push consumer is shut down after the result is printed: the C++ client sometimes aborts in
its ``shutdown`` (``boost::thread_interrupted``, apache/rocketmq-client-cpp#204).
The library writes its logs under ``$HOME/logs/rocketmq-cpp``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from typing import Any

from rocketmq.client import Message, Producer, PushConsumer

TAGS = ("TagA", "TagB")
SEND_TIMEOUT_MS = 30_000  # the 3 s default is too short for a CI host that stalls for seconds


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def produce(namesrv: str, topic: str, group: str, count: int) -> list[dict[str, Any]]:
    producer = Producer(f"{group}_P", timeout=SEND_TIMEOUT_MS)
    producer.set_namesrv_addr(namesrv)
    producer.start()
    sent = []
    for i in range(count):
        msg = Message(topic)
        msg.set_keys(f"key-{i}")
        msg.set_tags(TAGS[i % 2])
        msg.set_body(f"cpp-{i}")
        msg.set_property("custom", f"c{i}")
        result = producer.send_sync(msg)
        sent.append(
            {"status": result.status.name, "msg_id": result.msg_id, "offset": result.offset}
        )
    producer.shutdown()
    return sent


def consume(
    namesrv: str, topic: str, group: str, count: int, deadline: float
) -> tuple[dict[str, Any], PushConsumer]:
    """Receive until COUNT distinct bodies arrived or the deadline; the consumer keeps running."""
    lock = threading.Lock()
    done = threading.Event()
    seen: dict[str, dict[str, str | None]] = {}
    deliveries = 0

    def on_message(msg: Any) -> None:
        nonlocal deliveries
        body = _text(msg.body) or ""
        meta = {
            "tags": _text(msg.tags),
            "keys": _text(msg.keys),
            "custom": _text(msg.get_property("custom")),
            "id": _text(msg.id),
        }
        with lock:
            deliveries += 1
            seen[body] = meta
            if len(seen) >= count:
                done.set()

    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    consumer.subscribe(topic, on_message, "TagA || TagB")
    consumer.start()
    done.wait(max(0.0, deadline - time.monotonic()))
    with lock:
        received = [{"body": body, **meta} for body, meta in seen.items()]
        return {"received": received, "deliveries": deliveries}, consumer


def main(argv: list[str]) -> int:
    namesrv, topic, group, count_text = argv[:4]
    mode = argv[4] if len(argv) > 4 else "both"
    deadline = time.monotonic() + (float(argv[5]) if len(argv) > 5 else 90.0)
    count = int(count_text)
    result: dict[str, Any] = {}
    if mode in ("both", "produce"):
        result["sent"] = produce(namesrv, topic, group, count)
    consumers = []
    if mode in ("both", "consume"):
        received, consumer = consume(namesrv, topic, group, count, deadline)
        result.update(received)
        consumers.append(consumer)
    print(json.dumps(result), flush=True)
    for consumer in consumers:
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
