"""Container probes for the kubelet harness: startup, liveness, readiness, as the kubelet.

A probe is tried every ``periodSeconds`` (after ``initialDelaySeconds``), each try
bounded by ``timeoutSeconds``; its verdict changes only after ``successThreshold``
successes or ``failureThreshold`` failures in a row (:class:`Verdict`). Actions:

    httpGet     GET from the host through the bridge to the pod's IP (or ``host``),
                success on a status of 200-399
    tcpSocket   a TCP connection that opens
    exec        the command, in the container's namespaces (``nsenter``), exiting 0

``period_cap`` (a harness option, off by default) shortens long periods and initial
delays, so a test sees a pod Ready within a second of its server listening instead of
a template's 5-10 s; thresholds and timeouts stay as written.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubelet_spec import port_number

__all__ = ["ProbeSpec", "Verdict", "attempt", "probe_spec"]


@dataclass(frozen=True)
class ProbeSpec:
    """A container's probe, its timings in seconds."""

    action: Mapping[str, Any]
    initial_delay: float
    period: float
    timeout: float
    success_threshold: int
    failure_threshold: int


def probe_spec(raw: Mapping[str, Any] | None, period_cap: float | None) -> ProbeSpec | None:
    if not raw:
        return None

    def capped(seconds: float) -> float:
        return min(seconds, period_cap) if period_cap is not None else seconds

    return ProbeSpec(
        action=raw,
        initial_delay=capped(float(raw.get("initialDelaySeconds", 0))),
        period=capped(float(raw.get("periodSeconds", 10))),
        timeout=float(raw.get("timeoutSeconds", 1)),
        success_threshold=int(raw.get("successThreshold", 1)),
        failure_threshold=int(raw.get("failureThreshold", 3)),
    )


class Verdict:
    """A probe's result, changed only by enough tries in a row (the kubelet's worker)."""

    def __init__(self, spec: ProbeSpec, initial: bool | None = None) -> None:
        self.spec = spec
        self.result = initial
        self._last: bool | None = None
        self._run = 0

    def observe(self, ok: bool) -> bool | None:
        """Count one try; the verdict after it (None until the first is reached)."""
        self._run = self._run + 1 if ok == self._last else 1
        self._last = ok
        needed = self.spec.success_threshold if ok else self.spec.failure_threshold
        if self._run >= needed:
            self.result = ok
        return self.result


async def attempt(
    spec: ProbeSpec, container: Mapping[str, Any], pod_ip: str, pid: int | None
) -> bool:
    """One try of the probe's action."""
    action = spec.action
    try:
        async with asyncio.timeout(spec.timeout):
            if "httpGet" in action:
                return await _http(action["httpGet"], container, pod_ip)
            if "tcpSocket" in action:
                get = action["tcpSocket"]
                port = port_number(container, get["port"])
                _, writer = await asyncio.open_connection(get.get("host") or pod_ip, port)
                await _close(writer)
                return True
            if "exec" in action and pid is not None:
                return await _exec(action["exec"].get("command") or [], pid)
    except (OSError, TimeoutError, ValueError):
        return False
    return False


async def _http(get: Mapping[str, Any], container: Mapping[str, Any], pod_ip: str) -> bool:
    host = get.get("host") or pod_ip
    port = port_number(container, get["port"])
    context = None
    if str(get.get("scheme", "HTTP")).upper() == "HTTPS":
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    reader, writer = await asyncio.open_connection(host, port, ssl=context)
    try:
        headers = "".join(f"{h['name']}: {h['value']}\r\n" for h in get.get("httpHeaders") or [])
        request = (
            f"GET {get.get('path', '/')} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"User-Agent: kube-probe/1.32\r\nAccept: */*\r\n{headers}Connection: close\r\n\r\n"
        )
        writer.write(request.encode())
        await writer.drain()
        status_line = (await reader.readline()).decode("latin-1").split()
    finally:
        await _close(writer)
    return len(status_line) >= 2 and status_line[1].isdigit() and 200 <= int(status_line[1]) < 400


async def _exec(command: list[str], pid: int) -> bool:
    process = await asyncio.create_subprocess_exec(
        "nsenter", "-t", str(pid), "-m", "-u", "-n", "--", *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        return await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
