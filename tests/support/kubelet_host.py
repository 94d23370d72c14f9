"""What the kubelet harness keeps on the host between runs: leases, subnets, mount points.

Several harnesses may run at once (pytest-xdist workers, a sandbox beside a test run), and
one may die without its teardown (SIGKILL). A directory (``/run/rocketkube-kubelet`` by
default) holds::

    registry.lock        held (flock) while a run starts, sweeps or removes mount points
    run-<id>.json        one per run: its id and /24; held (flock) for the run's lifetime,
                         so a file whose lock can be taken belongs to a dead run
    mountpoints.json     directories and files runs created on the host as mount points
                         (``/etc/rocketkube``...); removed once no run is alive

A run's id (4 hex digits) prefixes every name it gives the kernel (bridge, veths,
namespaces), so a dead run's leftovers can be found and swept; its /24 is one of
10.244.0.0/16 that no live run holds and no host route overlaps.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import random
import secrets
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["POOL", "Lease", "Registry", "RunRecord", "choose_subnet"]

POOL: Final = ipaddress.IPv4Network("10.244.0.0/16")
"""Where every run's /24 comes from (Kubernetes' customary pod range)."""

_REGISTRY_LOCK: Final = "registry.lock"
_MOUNT_POINTS: Final = "mountpoints.json"


@dataclass(frozen=True)
class RunRecord:
    """A run as its file records it."""

    run_id: str
    subnet: ipaddress.IPv4Network
    path: Path


@dataclass(frozen=True)
class Lease:
    """This run's record and the descriptor whose lock marks it alive."""

    record: RunRecord
    fd: int


def choose_subnet(
    taken: Collection[ipaddress.IPv4Network], pick: random.Random | None = None
) -> ipaddress.IPv4Network:
    """A /24 of :data:`POOL` that overlaps nothing in ``taken``, chosen at random."""
    free = [n for n in POOL.subnets(new_prefix=24) if not any(n.overlaps(t) for t in taken)]
    if not free:
        raise RuntimeError(f"no free /24 left in {POOL}")
    return (pick or random.Random()).choice(free)


class Registry:
    """The harness's bookkeeping directory (see the module docstring)."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the registry: one run at a time starts, sweeps or cleans up."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.state_dir / _REGISTRY_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def runs(self) -> tuple[list[RunRecord], list[RunRecord]]:
        """(live, dead) runs; call it holding :meth:`locked`."""
        live: list[RunRecord] = []
        dead: list[RunRecord] = []
        for path in sorted(self.state_dir.glob("run-*.json")):
            record = _read_record(path)
            if record is None:
                continue
            (dead if _lock_free(path) else live).append(record)
        return live, dead

    def lease(self, taken: Iterable[ipaddress.IPv4Network]) -> Lease:
        """A new run: an id and a /24 no live run holds and nothing in ``taken`` overlaps.
        Call it holding :meth:`locked`."""
        live, _ = self.runs()
        used_ids = {r.run_id for r in live}
        run_id = secrets.token_hex(2)
        while run_id in used_ids:
            run_id = secrets.token_hex(2)
        subnet = choose_subnet([*taken, *(r.subnet for r in live)])
        path = self.state_dir / f"run-{run_id}.json"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, json.dumps({"id": run_id, "subnet": str(subnet), "pid": os.getpid()}).encode())
        return Lease(RunRecord(run_id, subnet, path), fd)

    def release(self, lease: Lease) -> None:
        lease.record.path.unlink(missing_ok=True)
        os.close(lease.fd)

    def forget(self, record: RunRecord) -> None:
        """Drop a dead run's file (once its leftovers are swept)."""
        record.path.unlink(missing_ok=True)

    def note_created(self, paths: Iterable[Path]) -> None:
        """Record host paths a run created as mount points (holding :meth:`locked`)."""
        known = self.created()
        added = [str(p) for p in paths if p not in known]
        if added:
            file = self.state_dir / _MOUNT_POINTS
            file.write_text(json.dumps([*map(str, known), *added]), encoding="utf-8")

    def created(self) -> list[Path]:
        file = self.state_dir / _MOUNT_POINTS
        if not file.exists():
            return []
        return [Path(p) for p in json.loads(file.read_text(encoding="utf-8"))]

    def remove_created(self) -> list[str]:
        """Remove the recorded mount points, deepest first, those still empty (holding
        :meth:`locked`, with no other run alive); what could not be removed."""
        kept: list[str] = []
        for path in sorted(self.created(), key=lambda p: len(p.parts), reverse=True):
            try:
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()
                elif path.exists() and path.stat().st_size == 0:
                    path.unlink()
            except OSError as error:
                kept.append(f"{path}: {error}")
        (self.state_dir / _MOUNT_POINTS).unlink(missing_ok=True)
        return kept


def _read_record(path: Path) -> RunRecord | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return RunRecord(str(data["id"]), ipaddress.IPv4Network(data["subnet"]), path)
    except (OSError, ValueError, KeyError):
        return None


def _lock_free(path: Path) -> bool:
    """Whether nobody holds ``path``'s lock (its run is dead)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True
