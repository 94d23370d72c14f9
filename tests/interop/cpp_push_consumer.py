"""A real C++ RocketMQ push consumer (PyPI ``rocketmq==0.4.4``) that stays online until told.

Run in a subprocess by ``test_running_info_interop.py``, never imported by pytest::

    python cpp_push_consumer.py NAMESRV TOPIC GROUP STOP_FILE DEADLINE_S

Subscribes GROUP to TOPIC (``TagA || TagB``), then waits until STOP_FILE exists or the
deadline passes, so a test can ask the broker about it meanwhile. Prints one JSON line
``{"stopped": true}`` (or ``{"error": ...}``) before shutting the consumer down, because the
C++ client's push consumer sometimes aborts in ``shutdown`` (``boost::thread_interrupted``
thrown from its rebalance thread, apache/rocketmq-client-cpp#204), then leaves at once with
``os._exit``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from rocketmq.client import PushConsumer


def main(namesrv: str, topic: str, group: str, stop_file: Path, deadline: float) -> None:
    def on_message(msg: Any) -> None:
        return None

    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    consumer.subscribe(topic, on_message, "TagA || TagB")
    consumer.start()
    while not stop_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    print(json.dumps({"stopped": True}), flush=True)
    consumer.shutdown()


if __name__ == "__main__":
    try:
        main(
            sys.argv[1],
            sys.argv[2],
            sys.argv[3],
            Path(sys.argv[4]),
            time.monotonic() + float(sys.argv[5]),
        )
    except Exception:
        print(json.dumps({"error": traceback.format_exc()}), flush=True)
    os._exit(0)
