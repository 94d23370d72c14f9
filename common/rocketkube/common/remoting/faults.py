"""What a server does about the frames and requests its peers get wrong, so that a flood of
them neither fills the log nor starves the peers that get them right.

    kind     what the peer sent                                   the answer
    frame    bytes that are not a remoting frame: a bad length,   none: the connection is
             a header that does not parse, an unknown serialize   closed (RocketMQ closes
             type (``ProtocolError`` from the decoder)             the channel too)
    header   a request header missing a field or holding a bad     SYSTEM_ERROR
             value (``HeaderError``)
    body     a body that does not decode (``ProtocolError``,       SYSTEM_ERROR
             ``MessageFormatError``)
    value    a value its handling cannot take: out of range, not   SYSTEM_ERROR
             a number (``ValueError``, ``OverflowError``,
             ``struct.error``)
    code     a request code nobody serves                          REQUEST_CODE_NOT_SUPPORTED
    tls      a plain connection where TLS is enforced, or a TLS    none: the connection is
             handshake that failed (:mod:`.listener`)               closed

Each is counted by kind (:attr:`FaultLog.counts`, exported by the servers' metrics) and
told in one warning line, at most once per kind and connection every ``warn_interval``
seconds (the next line says how many were left out), and at most ``lines_per_interval``
lines per server in that time, whatever the number of connections. A traceback is for
our own bugs: any other exception a handler raises, rate-limited the same way.

A connection whose peer keeps sending malformed requests is throttled: each has a budget
(:class:`PeerFaults`, a token bucket of ``malformed_burst`` refilled at
``malformed_per_second``); once it is spent, the connection is not read nor served for a
back-off that doubles while the peer goes on (``first_backoff`` up to ``max_backoff``), so
the well-formed traffic of the others keeps the event loop. A peer that opens a new
connection for each frame of garbage (or each spent budget) is held back by its host's
budget (``host_burst`` refilled at ``host_per_second``, one per connection closed or
throttled, or whose stream ended inside a frame: a truncated request): once that is spent,
the host's new connections wait, unread, until it is refilled (``max_backoff`` at most),
and those of its open connections that send a malformed request are throttled at once,
whatever is left of their own budgets, for that long at least: the host's budget bounds
its garbage across all of its connections and across reconnects, so opening 30
connections instead of 3 buys a host no more of the event loop. The budget is a decaying
score: it refills while the host behaves, and a host with a full one is forgotten. A
connection that sends no garbage is never held, whatever its host; legitimate clients send
no garbage at all.

What a server refuses for its limits (:class:`~rocketkube.common.remoting.server.ServerLimits`)
rather than for a fault is counted by reason in :attr:`FaultLog.refused` and told in one
warning line per reason every ``warn_interval`` seconds, whatever the number of peers:

    reason       what the peer did                                  the answer
    connections  connected while the server holds its most          none: closed at accept
    in_flight    sent a request while as many of its own are         SYSTEM_BUSY
                 waiting for their answers as a connection may have
    slow_frame   left a frame incomplete for the idle timeout        none: the connection is
                 (however slowly its bytes trickle in)                 closed
"""

from __future__ import annotations

import dataclasses
import logging
import math
import struct
import time
from collections.abc import Callable
from typing import Final

from rocketkube.common import errors

log = logging.getLogger(__name__)

FRAME: Final = "frame"
HEADER: Final = "header"
BODY: Final = "body"
VALUE: Final = "value"
CODE: Final = "code"
TLS: Final = "tls"
KINDS: Final = (FRAME, HEADER, BODY, VALUE, CODE, TLS)
CONNECTIONS: Final = "connections"
IN_FLIGHT: Final = "in_flight"
SLOW_FRAME: Final = "slow_frame"
REFUSALS: Final = (CONNECTIONS, IN_FLIGHT, SLOW_FRAME)
_BUG: Final = "bug"
"""The warning slot of our own failures (not counted as the peer's)."""


def kind_of(exc: BaseException) -> str | None:
    """The kind of peer fault ``exc`` (raised while serving a request) says the request
    had; None for an exception that is our own bug."""
    if isinstance(exc, errors.HeaderError):
        return HEADER
    if isinstance(exc, errors.ProtocolError):
        return BODY
    if isinstance(exc, ValueError | OverflowError | struct.error):
        return VALUE
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class FaultPolicy:
    """How much a server tells of its peers' faults, and how much of them it takes."""

    warn_interval: float = 10.0
    """Seconds between two warnings of one kind about one connection."""
    lines_per_interval: int = 50
    """Warning lines a server writes about its peers in ``warn_interval`` seconds, at most."""
    malformed_per_second: float = 20.0
    """A connection's budget of malformed requests refills at this rate ..."""
    malformed_burst: float = 100.0
    """... up to this many."""
    first_backoff: float = 0.25
    """Seconds a connection that spent its budget is left unread, doubled each time it
    spends it again before the budget is full again ..."""
    max_backoff: float = 8.0
    """... up to this."""
    host_per_second: float = 2.0
    """A host's budget of connections closed for garbage or throttled refills at this rate
    ..."""
    host_burst: float = 20.0
    """... up to this many."""
    hosts_kept: int = 10_000
    """Hosts whose budget is tracked, at most (those with a full budget are forgotten)."""


CLIENT_POLICY: Final = FaultPolicy(malformed_burst=math.inf, host_burst=math.inf)
"""A client's: it chose its servers, and never stops reading one (counts and warnings
only)."""


class FaultLog:
    """A server's account of its peers' faults: the counts by kind, the throttles, the
    budget of warning lines its connections share, and the budgets of their hosts."""

    def __init__(
        self,
        policy: FaultPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.policy = policy or FaultPolicy()
        self.clock = clock
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        """Malformed frames and requests by kind, since start."""
        self.throttles = 0
        """Times a connection was left unread for spending its budget, or its host's."""
        self.refused: dict[str, int] = dict.fromkeys(REFUSALS, 0)
        """Connections closed and requests refused for the server's limits, by reason."""
        # reason -> [when last told, how many untold since]
        self._refusals_told: dict[str, list[float]] = {}
        self._window_started = -float("inf")
        self._lines = 0
        self._left_out = 0
        # host -> [budget level, when last refilled]
        self._hosts: dict[str, list[float]] = {}

    def line(self, now: float) -> int | None:
        """May a warning line be written ``now``? None: no (the connection keeps it untold);
        else how many events of closed connections went untold since the last line."""
        if now - self._window_started >= self.policy.warn_interval:
            self._window_started, self._lines = now, 0
        if self._lines >= self.policy.lines_per_interval:
            return None
        self._lines += 1
        left_out, self._left_out = self._left_out, 0
        return left_out

    def refuse(self, reason: str, detail: str, count: int = 1) -> None:
        """``count`` connections or requests refused for ``reason`` (one of
        :data:`REFUSALS`): counted, and told at most once per ``warn_interval``."""
        self.refused[reason] = self.refused.get(reason, 0) + count
        now = self.clock()
        entry = self._refusals_told.setdefault(reason, [-math.inf, 0])
        entry[1] += count
        if now - entry[0] < self.policy.warn_interval:
            return
        untold = int(entry[1]) - count
        entry[0], entry[1] = now, 0
        more = f" (and {untold} more since the last line)" if untold else ""
        log.warning("%s%s", detail, more)

    def leave_out(self, events: int) -> None:
        """``events`` a closed connection never told of."""
        self._left_out += events

    def admit(self, host: str) -> float:
        """Seconds a new connection from ``host`` is to wait unread (0.0: none): until
        the host's budget is refilled, when its connections spent it."""
        wait = self.host_wait(host)
        if wait:
            self.throttles += 1
        return wait

    def host_wait(self, host: str) -> float:
        """Seconds until ``host``'s budget is no longer overdrawn (``max_backoff`` at most;
        0.0: it is not)."""
        entry = self._hosts.get(host)
        if entry is None:
            return 0.0
        policy = self.policy
        level = self._refill(entry, policy.host_per_second, policy.host_burst)
        return 0.0 if level >= 0 else min(policy.max_backoff, -level / policy.host_per_second)

    def charge_host(self, host: str) -> None:
        """A connection from ``host`` was closed for garbage or throttled."""
        policy = self.policy
        entry = self._hosts.get(host)
        if entry is None:
            if len(self._hosts) >= policy.hosts_kept:
                self._forget_behaving_hosts()
            entry = self._hosts[host] = [policy.host_burst, self.clock()]
        level = self._refill(entry, policy.host_per_second, policy.host_burst)
        entry[0] = max(level - 1, -policy.host_burst)
        if level >= 0 > entry[0]:  # overdrawn now: told once each time
            left_out = self.line(self.clock())
            if left_out is not None:
                log.warning("new connections from %s wait before they are read: its "
                            "connections keep sending garbage%s", host,
                            f" ({left_out} more from connections since closed, not logged)"
                            if left_out else "")  # fmt: skip

    def _refill(self, entry: list[float], rate: float, burst: float) -> float:
        """The level of a token bucket ``[level, when]``, refilled up to now."""
        now = self.clock()
        entry[0] = min(burst, entry[0] + (now - entry[1]) * rate)
        entry[1] = now
        return entry[0]

    def _forget_behaving_hosts(self) -> None:
        policy = self.policy
        for host, entry in list(self._hosts.items()):
            if self._refill(entry, policy.host_per_second, policy.host_burst) >= policy.host_burst:
                del self._hosts[host]
        if len(self._hosts) >= policy.hosts_kept:  # all misbehaving: the oldest go
            for host in list(self._hosts)[: len(self._hosts) // 2]:
                del self._hosts[host]


class PeerFaults:
    """One connection's faults: its warnings by kind, its budget of malformed requests."""

    __slots__ = (
        "_backoffs", "_held_until", "_last", "_level", "_log", "_warned", "host", "peer"
    )  # fmt: skip

    def __init__(self, fault_log: FaultLog, peer: str, host: str = "?") -> None:
        self._log = fault_log
        self.peer = peer
        self.host = host
        self._level = fault_log.policy.malformed_burst
        self._last = fault_log.clock()
        self._backoffs = 0
        self._held_until = -float("inf")
        # kind -> [when last told, how many left untold since]
        self._warned: dict[str, list[float]] = {}

    def malformed(self, kind: str, detail: str, count: int = 1) -> float:
        """``count`` malformed frames or requests of ``kind``: counted, told (rate-limited),
        charged to the budget; the seconds the connection is to be left unread (0.0: none).
        """
        fault_log = self._log
        fault_log.counts[kind] = fault_log.counts.get(kind, 0) + count
        now = fault_log.clock()
        if kind == FRAME:
            self.warn(kind, f"closing the connection from {self.peer}: {detail}", now)
            fault_log.charge_host(self.host)
        else:
            self.warn(kind, f"malformed request ({kind}) from {self.peer}: {detail}", now, count)
        policy = fault_log.policy
        refilled = self._level + (now - self._last) * policy.malformed_per_second
        self._last = now
        if refilled >= policy.malformed_burst:
            refilled = policy.malformed_burst
            self._backoffs = 0  # a full budget again: the peer behaved for a while
        # Charged while held too (the rest of a run), but never deeper than one burst: a
        # peer that behaves again has its full budget back within two bursts' refill.
        self._level = max(refilled - count, -policy.malformed_burst)
        if now < self._held_until:
            return 0.0  # held already (the rest of a run being served)
        host_wait = 0.0 if kind == FRAME else fault_log.host_wait(self.host)
        if self._level >= 0 and not host_wait:
            return 0.0  # within its budget and its host's (a frame fault closes it anyway)
        # Held until its host's budget is refilled, at least: with it, a host's garbage is
        # bounded whatever the number of its connections, each past its first back-offs.
        backoff = min(policy.max_backoff, policy.first_backoff * 2.0**self._backoffs)
        backoff = max(backoff, host_wait)
        self._backoffs += 1
        self._held_until = now + backoff
        fault_log.throttles += 1
        fault_log.charge_host(self.host)
        self.warn("throttled", f"not reading {self.peer} for {backoff:g} s: too many "
                  "malformed requests", now)  # fmt: skip
        return backoff

    def refuse_in_flight(self, detail: str, count: int) -> None:
        """``count`` requests answered SYSTEM_BUSY: too many of this connection's in flight."""
        self._log.refuse(IN_FLIGHT, detail, count)

    def truncated(self, detail: str) -> None:
        """The peer ended its stream inside a frame (a request cut short): counted as a
        ``frame`` fault and charged to its host, as an undecodable frame is; else a host
        that opens a connection per truncated request would never spend its budget."""
        fault_log = self._log
        fault_log.counts[FRAME] += 1
        self.warn(FRAME, f"connection from {self.peer} ended inside a frame: {detail}",
                  fault_log.clock())  # fmt: skip
        fault_log.charge_host(self.host)

    def slow_frame(self, detail: str) -> None:
        """The connection is closed: a frame it began stayed incomplete too long."""
        self._log.refuse(SLOW_FRAME, detail)
        self._log.charge_host(self.host)

    def admit(self) -> float:
        """Seconds this new connection is to wait unread, for its host (0.0: none)."""
        return self._log.admit(self.host)

    def bug(self, code: int, exc: BaseException) -> None:
        """A handler failed on request ``code`` with ``exc``, our bug: its traceback logged,
        rate-limited as the warnings are."""
        self.warn(_BUG, f"request code {code} from {self.peer} failed", self._log.clock(), exc=exc)

    def warn(
        self, kind: str, text: str, now: float, count: int = 1, exc: BaseException | None = None
    ) -> None:
        """Log ``text`` (of ``count`` events of ``kind``) unless one of ``kind`` was told of
        this connection less than ``warn_interval`` ago, or the server's lines are spent."""
        entry = self._warned.get(kind)
        if entry is None:
            entry = self._warned[kind] = [-float("inf"), 0]
        if now - entry[0] < self._log.policy.warn_interval:
            entry[1] += count
            return
        left_out = self._log.line(now)
        if left_out is None:
            entry[1] += count
            return
        untold = int(entry[1])
        entry[0], entry[1] = now, 0
        if untold:
            text += f" (and {untold} more before, not logged)"
        if left_out:
            text += f" ({left_out} more from connections since closed, not logged)"
        if exc is None:
            log.warning("%s", text)
        else:
            log.error("%s", text, exc_info=exc)

    def close(self) -> None:
        """The connection closed: what it did not tell of goes to the server's account."""
        untold = sum(int(count) for _, count in self._warned.values())
        if untold:
            self._log.leave_out(untold)
