"""Master/slave replication (RocketMQ's HA service, docs/protocol.md §12).

A master (brokerId 0) listens on ``haListenPort`` (listenPort + 1 by default) and streams
its commit log, byte for byte, to each slave that connects; the slave writes the bytes at
the same offsets and rebuilds its consume queues and index from them. The slave reports
how far it has written; a SYNC_MASTER answers a send only once a slave has it.

- ``wire``    the two raw streams (no remoting frames), pure
- ``master``  :class:`HAService`: the master's server and the SYNC_MASTER wait
- ``slave``   :class:`HAClient`: the slave's connection to its master
- ``sync``    :class:`SlaveSynchronizer`: a slave's copy of the master's metadata
"""

from __future__ import annotations

from rocketkube.broker.ha.master import HAService
from rocketkube.broker.ha.slave import HAClient
from rocketkube.broker.ha.sync import SlaveSynchronizer

__all__ = ["HAClient", "HAService", "SlaveSynchronizer"]
