"""One container of a running pod: its process across restarts, its probes, its status.

The lifecycle, as the kubelet runs it::

    waiting (ContainerCreating, CreateContainerConfigError)
      → running: the process started; its startup probe, then liveness and readiness
      → terminated: it exited, or was stopped (SIGTERM, then SIGKILL after the grace
        period) because its liveness or startup probe failed or its pod is going
      → restarted per ``restartPolicy`` (Always; OnFailure if it failed; Never), the first
        time at once, then after a back-off of 10 s doubling to 5 min (waiting,
        CrashLoopBackOff), reset once a run lasted 10 min; each restart counts in
        ``restartCount``

The process is the container's argv started by ``ip netns exec`` in the pod's network
namespace (each ``exec`` along the way replaces the last, so the pid is the container's
own), in a session of its own so that stopping it also reaches its children; stdout and
stderr go to the container's log file, each start marked by a line of the harness's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kubelet_probes import ProbeSpec, Verdict, attempt, probe_spec
from kubelet_spec import ConfigError
from kubelet_volumes import VolumeError

__all__ = ["Backoff", "ContainerRuntime", "Launch", "StopSignal", "exit_code"]

CONFIG_RETRY_SECONDS: Final = 1.0


@dataclass(frozen=True)
class Launch:
    """How to start the container this time."""

    argv: list[str]
    env: dict[str, str]
    log: Path


@dataclass(frozen=True)
class Backoff:
    """CrashLoopBackOff's timings, in seconds (the kubelet's by default)."""

    base: float = 10.0
    limit: float = 300.0
    reset_after: float = 600.0

    def delay(self, crashes: int) -> float:
        """The wait before restart ``crashes`` (1 is the first: no wait)."""
        return 0.0 if crashes <= 1 else min(self.base * 2 ** (crashes - 2), self.limit)


@dataclass
class StopSignal:
    """Set when the pod is going; ``grace`` is how long its containers get to stop."""

    event: asyncio.Event = field(default_factory=asyncio.Event)
    grace: float = 30.0

    def set(self, grace: float) -> None:
        if not self.event.is_set():
            self.grace = grace
            self.event.set()


def exit_code(returncode: int) -> int:
    """A process's exit as Kubernetes reports it: 128 + the signal that ended it."""
    return 128 - returncode if returncode < 0 else returncode


async def _sleep_unless(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep ``seconds`` or until ``stop``; whether stop came."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()


class ContainerRuntime:
    """A container of a pod (see the module docstring); its state is read by the pod."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        restart_policy: str,
        launch: Callable[[], Launch],
        pod_ip: Callable[[], str],
        changed: Callable[[], None],
        now: Callable[[], str],
        backoff: Backoff,
        period_cap: float | None,
    ) -> None:
        self.spec = spec
        self.name = str(spec["name"])
        self._restart_policy = restart_policy
        self._launch = launch
        self._pod_ip = pod_ip
        self._changed = changed
        self._now = now
        self._backoff = backoff
        self._probes = {
            kind: probe_spec(spec.get(f"{kind}Probe"), period_cap)
            for kind in ("startup", "liveness", "readiness")
        }
        self.restart_count = 0
        self.state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
        self.last_state: dict[str, Any] = {}
        self.started = False
        self.ready = False
        self.done = False
        self.process: asyncio.subprocess.Process | None = None

    def status(self) -> dict[str, Any]:
        """The container's entry in the pod's ``containerStatuses``."""
        out: dict[str, Any] = {
            "name": self.name,
            "image": self.spec.get("image", ""),
            "imageID": "",
            "ready": self.ready,
            "started": self.started,
            "restartCount": self.restart_count,
            "state": self.state,
            "lastState": self.last_state,
        }
        if self.process is not None and self.process.returncode is None:
            out["containerID"] = f"harness://{self.process.pid}"
        return out

    @property
    def pid(self) -> int | None:
        process = self.process
        return process.pid if process is not None and process.returncode is None else None

    def kill(self) -> int | None:
        """SIGKILL the process (a crash); its pid, None when it is not running."""
        pid = self.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return pid

    def _set(self, **fields: Any) -> None:
        for key, value in fields.items():
            setattr(self, key, value)
        self._changed()

    async def run(self, stop: StopSignal) -> None:
        """Run, restart and back off until the pod stops or the policy says done."""
        crashes = 0
        while not stop.event.is_set():
            try:
                launch = self._launch()
            except (ConfigError, VolumeError) as error:
                self._set(state={"waiting": {"reason": _reason(error), "message": str(error)}})
                if await _sleep_unless(stop.event, CONFIG_RETRY_SECONDS):
                    return
                continue
            began = time.monotonic()
            code = await self._run_once(launch, stop)
            if stop.event.is_set() or not self._restarts(code):
                self._set(done=True)
                return
            crashes = 1 if time.monotonic() - began >= self._backoff.reset_after else crashes + 1
            delay = self._backoff.delay(crashes)
            if delay:
                message = f"back-off {delay:g}s restarting failed container={self.name}"
                self._set(state={"waiting": {"reason": "CrashLoopBackOff", "message": message}})
                if await _sleep_unless(stop.event, delay):
                    return
            self.restart_count += 1

    def _restarts(self, code: int) -> bool:
        return self._restart_policy == "Always" or (
            self._restart_policy == "OnFailure" and code != 0
        )

    async def _run_once(self, launch: Launch, stop: StopSignal) -> int:
        """Start the process, probe it until it exits or must stop; its exit code."""
        launch.log.parent.mkdir(parents=True, exist_ok=True)
        with launch.log.open("ab") as log:
            log.write(f"=== harness: start #{self.restart_count} at {self._now()}\n".encode())
            log.flush()
            process = await asyncio.create_subprocess_exec(
                *launch.argv,
                env=launch.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        started_at = self._now()
        self.process = process
        no_startup = self._probes["startup"] is None
        no_readiness = self._probes["readiness"] is None
        self._set(state={"running": {"startedAt": started_at}}, started=no_startup,
                  ready=no_startup and no_readiness)  # fmt: skip
        unhealthy = asyncio.Event()
        watchers = [
            asyncio.create_task(process.wait()),
            asyncio.create_task(stop.event.wait()),
            asyncio.create_task(unhealthy.wait()),
        ]
        probing = asyncio.create_task(self._probe(unhealthy, process.pid))
        await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
        probing.cancel()
        if process.returncode is None:
            await _terminate(process, stop.grace)
        _kill_group(process.pid)
        for task in [*watchers, probing]:
            task.cancel()
        await asyncio.gather(*watchers, probing, return_exceptions=True)
        code = exit_code(process.returncode or 0)
        terminated = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": started_at,
            "finishedAt": self._now(),
        }
        self._set(state={"terminated": terminated}, last_state={"terminated": terminated},
                  started=False, ready=False)  # fmt: skip
        return code

    async def _probe(self, unhealthy: asyncio.Event, pid: int) -> None:
        startup = self._probes["startup"]
        if startup is not None:
            if not await self._started(startup, pid):
                unhealthy.set()
                return
            self._set(started=True, ready=self._probes["readiness"] is None)
        async with asyncio.TaskGroup() as group:
            liveness, readiness = self._probes["liveness"], self._probes["readiness"]
            if liveness is not None:
                group.create_task(self._live(liveness, pid, unhealthy))
            if readiness is not None:
                group.create_task(self._readiness(readiness, pid))

    async def _started(self, spec: ProbeSpec, pid: int) -> bool:
        """Try the startup probe until it has a verdict: whether it succeeded."""
        verdict = Verdict(spec)
        await asyncio.sleep(spec.initial_delay)
        while True:
            result = verdict.observe(await attempt(spec, self.spec, self._pod_ip(), pid))
            if result is not None:
                return result
            await asyncio.sleep(spec.period)

    async def _live(self, spec: ProbeSpec, pid: int, unhealthy: asyncio.Event) -> None:
        verdict = Verdict(spec, initial=True)
        await asyncio.sleep(spec.initial_delay)
        while True:
            if not verdict.observe(await attempt(spec, self.spec, self._pod_ip(), pid)):
                unhealthy.set()
                return
            await asyncio.sleep(spec.period)

    async def _readiness(self, spec: ProbeSpec, pid: int) -> None:
        verdict = Verdict(spec, initial=False)
        await asyncio.sleep(spec.initial_delay)
        while True:
            ready = bool(verdict.observe(await attempt(spec, self.spec, self._pod_ip(), pid)))
            if ready != self.ready:
                self._set(ready=ready)
            await asyncio.sleep(spec.period)


def _reason(error: Exception) -> str:
    return "CreateContainerConfigError" if isinstance(error, ConfigError) else "ContainerCreating"


async def _terminate(process: asyncio.subprocess.Process, grace: float) -> None:
    """SIGTERM, then SIGKILL (to its whole session) once ``grace`` has passed."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), grace)
    except TimeoutError:
        _kill_group(process.pid)
        await process.wait()


def _kill_group(pid: int) -> None:
    """SIGKILL what is left of a container's session (children it left behind)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
