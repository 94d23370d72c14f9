"""Send one message with the real C++ RocketMQ client (PyPI ``rocketmq``), in its own process.

Run by ``test_interop_cpp_client.py``, never collected by pytest::

    python cpp_producer_probe.py NAMESRV_ADDR TOPIC GROUP BODY

Prints one JSON line on stdout and exits 0 when the send returned, whatever its outcome:

    {"ok": true, "status": 0, "msg_id": "...", "offset": 0}
    {"ok": false, "error": "ProducerSendSyncFailed('...')"}

Exits with :data:`EXIT_NO_CLIENT` when ``rocketmq`` cannot be imported. The C++ library
writes logs under ``$HOME/logs/rocketmq-cpp/``, so the caller gives it a temporary HOME.
A watchdog thread ends the process if the client hangs (start, send or shutdown).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

EXIT_NO_CLIENT = 77
EXIT_WATCHDOG = 78
#: The C++ client 1.0.1 ignores its send timeout when a server does not answer (45-50 s).
WATCHDOG_SECONDS = 90.0
SEND_TIMEOUT_MS = 30_000  # CI hosts stall for seconds at times


def _emit(result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


def _watchdog() -> None:
    _emit({"ok": False, "error": f"watchdog: no result within {WATCHDOG_SECONDS}s"})
    os._exit(EXIT_WATCHDOG)


def main(argv: list[str]) -> int:
    namesrv, topic, group, body = argv
    try:
        from rocketmq import client
    except (ImportError, OSError) as exc:  # OSError: the bundled .so does not load
        _emit({"ok": False, "error": f"cannot import rocketmq: {exc!r}"})
        return EXIT_NO_CLIENT
    timer = threading.Timer(WATCHDOG_SECONDS, _watchdog)
    timer.daemon = True
    timer.start()
    producer = client.Producer(group, timeout=SEND_TIMEOUT_MS)
    producer.set_namesrv_addr(namesrv)
    producer.start()
    try:
        msg = client.Message(topic)
        msg.set_keys("probe-key")
        msg.set_tags("probe-tag")
        msg.set_body(body)
        try:
            sent = producer.send_sync(msg)
        except Exception as exc:  # the client's own exception types, reported verbatim
            _emit({"ok": False, "error": repr(exc)})
        else:
            _emit(
                {
                    "ok": True,
                    "status": int(sent.status),
                    "msg_id": str(sent.msg_id),
                    "offset": int(sent.offset),
                }
            )
    finally:
        producer.shutdown()
    # Skip the ctypes destructors at interpreter exit: the result is already out.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
