"""Pod networking for the kubelet harness: a bridge, and per pod a namespace on it.

One run owns one Linux bridge and one /24 (``kubelet_host`` leases both)::

    host                                    pod namespace rk<id>-<n>-<ns>-<pod>
    rk<id>br  10.244.X.1/24  ── rk<id>h<n> ═══ eth0  10.244.X.<k>/24,  lo up
              (the host's end: probes and         route: 10.244.X.0/24 only
               tests reach every pod IP)          /etc/netns/<name>/{hosts,resolv.conf}

Nothing is routed anywhere else: a pod has no default route, the host adds no NAT and no
route but the bridge's own /24, and IPv6 is off on every link the run creates, so each
address a pod can reach is one of this run's. Every pod has an IP of its own, so pods all
listen on the ports their templates name (every broker on 10911). ``ip netns exec``
bind-mounts ``/etc/netns/<name>/hosts`` over ``/etc/hosts`` for the processes it starts:
that file is the pod's DNS (``kubelet_dns``), rewritten in place (a bind mount holds the
inode); ``resolv.conf`` names 127.0.0.1, so a name not in the hosts file fails at once
instead of reaching the host's resolver.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["CommandFailed", "Network", "PodNet", "Unavailable", "host_routes", "preflight", "run"]

NETNS_ETC: Final = Path("/etc/netns")
_RESOLV: Final = (
    "# kubelet harness: names come from /etc/hosts only\n"
    "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"
)


class Unavailable(RuntimeError):
    """This machine cannot run pods (not root, no ``ip``, namespaces refused)."""


class CommandFailed(RuntimeError):
    def __init__(self, argv: tuple[str, ...], code: int, stderr: str) -> None:
        super().__init__(f"{' '.join(argv)} exited {code}: {stderr.strip()}")
        self.stderr = stderr


async def run(*argv: str) -> str:
    """Run a command to its end; its stdout, or CommandFailed."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    if process.returncode != 0:
        raise CommandFailed(argv, process.returncode or 0, err.decode(errors="replace"))
    return out.decode()


async def preflight() -> None:
    """Unavailable (with the reason) unless this process can make network namespaces."""
    if os.geteuid() != 0:
        raise Unavailable("the kubelet harness needs root (network namespaces, mounts)")
    for tool in ("ip", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            raise Unavailable(f"the kubelet harness needs {tool!r} on PATH")
    probe = f"rk-preflight-{os.getpid()}"
    try:
        await run("ip", "netns", "add", probe)
    except CommandFailed as error:
        raise Unavailable(f"cannot create a network namespace: {error.stderr.strip()}") from error
    await run("ip", "netns", "del", probe)


async def host_routes() -> list[ipaddress.IPv4Network]:
    """The host's IPv4 routes' destinations (but the default route)."""
    routes = json.loads(await run("ip", "-j", "-4", "route", "show", "table", "all"))
    out = []
    for route in routes:
        dst = str(route.get("dst", "default"))
        if dst != "default" and route.get("type", "unicast") in ("unicast", "local"):
            out.append(ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
    return out


@dataclass(frozen=True)
class PodNet:
    """One pod's namespace, its host-side veth and its address."""

    netns: str
    host_veth: str
    ip: ipaddress.IPv4Address

    @property
    def etc(self) -> Path:
        """The directory ``ip netns exec`` bind-mounts files from."""
        return NETNS_ETC / self.netns


class Network:
    """A run's bridge and its pods' namespaces (names prefixed ``rk<run_id>``)."""

    def __init__(self, run_id: str, subnet: ipaddress.IPv4Network) -> None:
        self.prefix = f"rk{run_id}"
        self.subnet = subnet
        self.bridge = f"{self.prefix}br"
        hosts = list(subnet.hosts())
        self.host_ip = hosts[0]
        self._free = hosts[1:]
        self._count = 0

    async def up(self) -> None:
        await run("ip", "link", "add", self.bridge, "type", "bridge")
        _no_ipv6(self.bridge)
        await run(
            "ip", "addr", "add", f"{self.host_ip}/{self.subnet.prefixlen}", "dev", self.bridge
        )
        await run("ip", "link", "set", self.bridge, "up")

    async def down(self) -> None:
        await _quietly("ip", "link", "del", self.bridge)

    async def add_pod(self, namespace: str, pod: str) -> PodNet:
        """A namespace for ``pod`` with its own address on the bridge, loopback up."""
        if not self._free:
            raise RuntimeError(f"no address left in {self.subnet}")
        self._count += 1
        n = self._count
        net = PodNet(
            f"{self.prefix}-{n}-{namespace}-{pod}", f"{self.prefix}h{n}", self._free.pop(0)
        )
        peer = f"{self.prefix}c{n}"
        await run("ip", "netns", "add", net.netns)
        try:
            await self._wire(net, peer)
        except BaseException:
            await self.remove_pod(net)
            raise
        return net

    async def _wire(self, net: PodNet, peer: str) -> None:
        net.etc.mkdir(parents=True, exist_ok=True)
        (net.etc / "resolv.conf").write_text(_RESOLV, encoding="utf-8")
        (net.etc / "hosts").write_text("127.0.0.1\tlocalhost\n", encoding="utf-8")
        inside = ("ip", "-n", net.netns)
        await run("ip", "link", "add", net.host_veth, "type", "veth", "peer", "name", peer)
        _no_ipv6(net.host_veth)
        await run("ip", "link", "set", peer, "netns", net.netns)
        await run("ip", "link", "set", net.host_veth, "master", self.bridge, "up")
        await run(*inside, "link", "set", peer, "name", "eth0")
        await run("ip", "netns", "exec", net.netns, "sh", "-c", _NO_IPV6_INSIDE)
        await run(*inside, "addr", "add", f"{net.ip}/{self.subnet.prefixlen}", "dev", "eth0")
        await run(*inside, "link", "set", "eth0", "up")
        await run(*inside, "link", "set", "lo", "up")

    async def remove_pod(self, net: PodNet) -> None:
        """Remove what :meth:`add_pod` made (its processes must be gone) and free the IP."""
        await _quietly("ip", "link", "del", net.host_veth)
        await _quietly("ip", "netns", "del", net.netns)
        shutil.rmtree(net.etc, ignore_errors=True)
        if net.ip not in self._free:
            self._free.append(net.ip)


_NO_IPV6_INSIDE: Final = (
    "for c in all default eth0; do f=/proc/sys/net/ipv6/conf/$c/disable_ipv6; "
    "[ -w $f ] && echo 1 > $f; done; true"
)


def _no_ipv6(link: str) -> None:
    path = Path(f"/proc/sys/net/ipv6/conf/{link}/disable_ipv6")
    if path.exists():
        path.write_text("1", encoding="ascii")


async def _quietly(*argv: str) -> None:
    """Run a cleanup command; that there was nothing to clean is fine."""
    with contextlib.suppress(CommandFailed):
        await run(*argv)


async def _until_empty(netns: str, seconds: float = 10.0) -> None:
    """Wait (a bounded while) until no process is left in ``netns``."""
    for _ in range(int(seconds / 0.05)):
        try:
            if not (await run("ip", "netns", "pids", netns)).split():
                return
        except CommandFailed:
            return
        await asyncio.sleep(0.05)


async def sweep(run_id: str) -> None:
    """Remove what a dead run left: its pods' processes, namespaces, links, hosts files."""
    prefix = f"rk{run_id}"
    listing = await run("ip", "netns", "list")
    for name in (line.split()[0] for line in listing.splitlines() if line.strip()):
        if not name.startswith(f"{prefix}-"):
            continue
        try:
            pids = (await run("ip", "netns", "pids", name)).split()
        except CommandFailed:
            pids = []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        await _until_empty(name)
        await _quietly("ip", "netns", "del", name)
        shutil.rmtree(NETNS_ETC / name, ignore_errors=True)
    links = json.loads(await run("ip", "-j", "link", "show"))
    for link in links:
        name = str(link.get("ifname", ""))
        if name.startswith(prefix):
            await _quietly("ip", "link", "del", name)
