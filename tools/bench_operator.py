"""Benchmarks of the operator (figures to read, never timed tests): how long it takes to
create a BrokerCluster's objects and to bring many Topics to Ready, and how much memory it
holds with them.

::

    PYTHONPATH=tests/support .venv/bin/python tools/bench_operator.py [--topics 1000] \
        [--steady 30] [--json]
    make bench-operator BENCH_ARGS='--topics 100'

What runs, all on 127.0.0.1: the emulated API server (``kube_api``, in this process, the
operator's CRDs created), a name server and one master per broker group of the cluster
(child ``rocketkube`` processes), and the operator as a child process of its own
(``rocketkube operator --namesrv-override demo=<the name server>``), so the memory read
from ``/proc/<pid>/status`` (VmRSS, VmHWM) is the operator's alone. Nothing here plays the
kubelet's processes: this script creates each StatefulSet's pods Ready, as the handler
tests do; the brokers it runs stand for the groups' masters.

Phases, each bounded by ``--timeout`` overall::

    idle      the operator watching, nothing to reconcile: its RSS
    cluster   ``kubectl apply`` of examples/kubernetes/cluster.yaml (2 groups x 2) until
              every StatefulSet, Service, ConfigMap and PodDisruptionBudget of it exists;
              its pods are then created Ready, and the cluster waits for Ready (decided on
              the operator's timer, so that figure follows --timer-interval)
    topics    N Topics (4 queues each) created at once, in-process, until all N are Ready
              (routed by the name server); RSS before and after
    steady    --steady seconds with the N Topics and nothing changing: the operator's CPU
              and API requests per second (its timers)

API requests are the operator's (kubectl's left out), counted by the emulator's request
hook per phase, by verb and resource. With ``--json`` the figures go to stdout as one
JSON object, the lines for a person to stderr. Exits 1 (with the operator's log tail) when
a phase does not finish in time; every process and file it made is gone on exit.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from aiohttp import web
from kube_api import running_kube_api
from kube_api_cluster import Cluster
from kube_api_store import Change
from operator_harness import Kubectl, apply_crds, conditions, statefulset_pods
from ports import free_port

from rocketkube.client.admin.client import AdminClient
from rocketkube.common.errors import RocketKubeError
from rocketkube.operator.api import names

CHECKOUT: Final = Path(__file__).resolve().parents[1]
EXAMPLE: Final = CHECKOUT / "examples" / "kubernetes" / "cluster.yaml"
CLUSTER: Final = "demo"
"""The example's BrokerCluster."""
GROUPS: Final = 2
NAMESPACE: Final = "default"
QUEUES: Final = 4
OBJECT_KINDS: Final = ("statefulsets", "services", "configmaps", "poddisruptionbudgets")
WATCHED: Final = ("brokerclusters", "topics", "consumergroups")
ROCKETKUBE: Final = (sys.executable, "-m", "rocketkube.launcher")
SMALL_STORE: Final = (
    f"mappedFileSizeCommitLog={16 << 20}",
    f"mappedFileSizeConsumeQueue={20 * 30_000}",
    "maxHashSlotNum=10000",
    "maxIndexNum=40000",
)
MIB: Final = 1024.0


class Unfinished(Exception):
    """A phase did not finish before the deadline."""


# -- what the emulator sees ------------------------------------------------------------


def request_key(method: str, path: str, watch: bool) -> tuple[str, str]:
    """(verb, resource) of an API request: ``("LIST", "topics")``,
    ``("PATCH", "topics/status")``, ``("WATCH", "pods")``; discovery is ``("GET", "")``."""
    parts = [part for part in path.split("/") if part]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else []
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    if not rest:
        return method, ""
    resource = rest[0] if len(rest) < 3 else f"{rest[0]}/{rest[2]}"
    if method == "GET" and len(rest) == 1:
        return ("WATCH" if watch else "LIST"), resource
    return method, resource


@dataclass
class Recorder:
    """What the emulator saw, fed by its request and change hooks (on its thread)."""

    clock: Callable[[], float] = time.monotonic
    requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    added: dict[tuple[str, str], float] = field(default_factory=dict)
    """(plural, name) -> when it was first created."""
    ready_topics: dict[str, float] = field(default_factory=dict)
    """Topic name -> when its Ready condition first turned True."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_request(self, request: web.Request) -> None:
        if request.headers.get("User-Agent", "").startswith("kubectl"):
            return
        key = request_key(request.method, request.path, request.query.get("watch") == "true")
        with self.lock:
            self.requests[key] += 1

    def on_change(self, change: Change) -> None:
        plural, name = change.resource[1], str(change.object["metadata"]["name"])
        now = self.clock()
        with self.lock:
            if change.type == "ADDED":
                self.added.setdefault((plural, name), now)
            ready = conditions(change.object).get("Ready", ("",))[0] == "True"
            if plural == "topics" and ready and name not in self.ready_topics:
                self.ready_topics[name] = now

    def counted(self) -> Counter[tuple[str, str]]:
        with self.lock:
            return Counter(self.requests)

    def watching(self) -> bool:
        with self.lock:
            return all(self.requests[("WATCH", plural)] for plural in WATCHED)

    def all_added(self, wanted: list[tuple[str, str]]) -> float | None:
        """When the last of ``wanted`` was created, once all were."""
        with self.lock:
            times = [self.added.get(key) for key in wanted]
        return None if None in times else max(t for t in times if t is not None)

    def topics_ready(self, wanted: set[str]) -> float | None:
        """When the last of ``wanted`` turned Ready, once all did."""
        with self.lock:
            times = [self.ready_topics.get(name) for name in wanted]
        return None if None in times else max(t for t in times if t is not None)


def requests_between(
    before: Counter[tuple[str, str]], after: Counter[tuple[str, str]]
) -> dict[str, int]:
    """The requests of a phase: ``{"total": n, "PATCH topics/status": n, ...}``."""
    spent = after - before
    out = {"total": sum(spent.values())}
    out.update({f"{verb} {what}".strip(): n for (verb, what), n in sorted(spent.items())})
    return out


# -- the operator's process --------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """A process's memory (MiB) and CPU seconds so far."""

    rss: float
    hwm: float
    cpu: float


def usage(pid: int) -> Usage:
    """VmRSS and VmHWM from ``/proc/<pid>/status``, user + system time from ``stat``."""
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / MIB
    stat = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    ticks = int(stat[11]) + int(stat[12])  # utime, stime (fields 14 and 15)
    return Usage(fields["VmRSS"], fields["VmHWM"], ticks / os.sysconf("SC_CLK_TCK"))


class Children:
    """Child processes, each logging to a file of its own; all stopped on exit."""

    def __init__(self, logs: Path) -> None:
        self.logs = logs
        self.running: dict[str, asyncio.subprocess.Process] = {}

    async def start(self, name: str, *args: str) -> asyncio.subprocess.Process:
        with (self.logs / f"{name}.log").open("wb") as log:
            proc = await asyncio.create_subprocess_exec(
                *ROCKETKUBE, *args, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log,
                env={**os.environ, "NAMESRV_ADDR": ""},
            )  # fmt: skip
        self.running[name] = proc
        return proc

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.logs / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def check(self) -> None:
        for name, proc in self.running.items():
            if proc.returncode is not None:
                raise Unfinished(f"{name} exited with {proc.returncode}:\n{self.log_tail(name)}")

    async def stop_all(self) -> None:
        for proc in reversed(self.running.values()):  # the operator first
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.running.values():
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()


@contextlib.asynccontextmanager
async def children(logs: Path) -> AsyncIterator[Children]:
    running = Children(logs)
    try:
        yield running
    finally:
        await running.stop_all()


# -- phases ------------------------------------------------------------------------------


@dataclass
class Bench:
    """One run: the emulator, the child processes, the deadline."""

    cluster: Cluster
    kubectl: Kubectl
    recorder: Recorder
    procs: Children
    deadline: float
    operator_pid: int = 0

    async def until(self, probe: Callable[[], Any], what: str) -> Any:
        """``probe()``'s first value other than None or False, polled every 20 ms."""
        while True:
            value = probe()
            if value is not None and value is not False:
                return value
            self.procs.check()
            if time.monotonic() > self.deadline:
                raise Unfinished(f"not in time: {what}")
            await asyncio.sleep(0.02)

    async def brokers(self, work: Path) -> str:
        """A name server and each group's master; the name server's address once every
        master is registered with it."""
        port = free_port()
        await self.procs.start(
            "namesrv", "namesrv", "-p", str(port), "--http-port", str(free_port()),
            "--bind", "127.0.0.1", "--kv-config-path", str(work / "kv.json"),
            "--log-level", "WARNING",
        )  # fmt: skip
        address = f"127.0.0.1:{port}"
        for group in range(GROUPS):
            name = names.broker_name(CLUSTER, group)
            await self.procs.start(
                name, "broker", "-n", address, "--broker-name", name,
                "--cluster", names.broker_cluster_name(CLUSTER), "-p", str(free_port()),
                "--http-port", str(free_port()), "--broker-ip", "127.0.0.1",
                "--store", str(work / name), "--set", "bindAddress=127.0.0.1",
                "--set", "haListenPort=0", "--set", "autoCreateTopicEnable=false",
                *(arg for setting in SMALL_STORE for arg in ("--set", setting)),
                "--log-level", "WARNING",
            )  # fmt: skip
        while len(await registered(address)) < GROUPS:
            self.procs.check()
            if time.monotonic() > self.deadline:
                raise Unfinished("not in time: the brokers registered")
            await asyncio.sleep(0.1)
        return address

    async def operator(self, kubeconfig: Path, namesrv: str, timer_interval: float | None) -> None:
        timer = () if timer_interval is None else ("--timer-interval", str(timer_interval))
        proc = await self.procs.start(
            "operator", "operator", "--kubeconfig", str(kubeconfig),
            "--namesrv-override", f"{CLUSTER}={namesrv}", *timer,
        )  # fmt: skip
        self.operator_pid = proc.pid
        print(f"operator pid {proc.pid} (to profile: py-spy record -p {proc.pid})", file=sys.stderr)
        await self.until(self.recorder.watching, "the operator watching its kinds")

    async def apply_cluster(self) -> dict[str, float]:
        wanted = [
            (kind, name)
            for name in [names.namesrv(CLUSTER)]
            + [names.broker_group(CLUSTER, group) for group in range(GROUPS)]
            for kind in OBJECT_KINDS
        ]
        started = time.monotonic()
        applied = await asyncio.to_thread(self.kubectl, "apply", "-f", str(EXAMPLE))
        if applied.returncode != 0:
            raise Unfinished(f"kubectl apply failed: {applied.stderr}")
        created = self.recorder.all_added([("brokerclusters", CLUSTER)]) or started
        done = await self.until(lambda: self.recorder.all_added(wanted), "the cluster's objects")
        for statefulset in {name for _, name in wanted}:
            statefulset_pods(self.cluster, statefulset, NAMESPACE)
        await self.until(self.cluster_ready, f"BrokerCluster {CLUSTER} Ready")
        return {
            "objects": len(wanted),
            "apply_to_objects_s": done - started,
            "create_to_objects_s": done - created,
            "apply_to_ready_s": time.monotonic() - started,
        }

    def cluster_ready(self) -> bool:
        found = self.cluster.find_object("brokerclusters", CLUSTER, NAMESPACE)
        return conditions(found).get("Ready", ("",))[0] == "True"

    async def topics(self, count: int) -> dict[str, float]:
        wanted = {f"bench-{index:05d}" for index in range(count)}
        started = time.monotonic()
        for name in sorted(wanted):
            self.cluster.create_object(topic(name))
        created = time.monotonic()
        done = await self.until(lambda: self.recorder.topics_ready(wanted), f"{count} Topics Ready")
        elapsed = done - started
        times = sorted(self.recorder.ready_topics[name] - started for name in wanted)
        return {
            "created_s": created - started,
            "first_ready_s": times[0],
            "half_ready_s": times[(len(times) - 1) // 2],
            "create_to_ready_s": elapsed,
            "topics_per_s": count / elapsed if elapsed > 0 else 0.0,
            "ms_per_topic": 1000 * elapsed / count if count else 0.0,
        }


def topic(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "rocketkube.io/v1alpha1",
        "kind": "Topic",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"cluster": CLUSTER, "queues": QUEUES},
    }


async def registered(namesrv: str) -> set[str]:
    """The brokers registered under the cluster's name (none while it does not answer)."""
    try:
        async with AdminClient(namesrv, timeout=3) as admin:
            info = await admin.cluster_info()
    except (RocketKubeError, OSError, TimeoutError):
        return set()
    return set(info.cluster_addr_table.get(names.broker_cluster_name(CLUSTER), ()))


def memory(pid: int) -> dict[str, float]:
    now = usage(pid)
    return {"rss_mib": now.rss, "hwm_mib": now.hwm, "cpu_s": now.cpu}


async def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    recorder = Recorder()
    figures: dict[str, Any] = {"benchmark": "operator", "topic_count": args.topics}
    with running_kube_api(work / "kubeconfig", on_request=recorder.on_request) as kube:
        stop_watching = kube.cluster.on_change(recorder.on_change)
        apply_crds(kube.cluster)
        async with children(work) as procs:
            bench = Bench(
                kube.cluster, Kubectl(kube, work / "kubectl"), recorder, procs,
                time.monotonic() + args.timeout,
            )  # fmt: skip
            namesrv = await bench.brokers(work)
            await bench.operator(kube.kubeconfig, namesrv, args.timer_interval)
            await asyncio.sleep(1.0)  # its start-up settled: the idle figure
            figures["idle"] = memory(bench.operator_pid)
            await phase(bench, figures, "cluster", bench.apply_cluster())
            await phase(bench, figures, "topics", bench.topics(args.topics))
            await phase(bench, figures, "steady", steady(args.steady))
        stop_watching()
    return figures


async def phase(bench: Bench, figures: dict[str, Any], name: str, run: Any) -> None:
    """Run a phase; its figures, the operator's memory after it, its API requests."""
    before = bench.recorder.counted()
    cpu, emulator_cpu = usage(bench.operator_pid).cpu, time.process_time()
    out: dict[str, Any] = await run
    after = usage(bench.operator_pid)
    out.update(memory(bench.operator_pid))
    out["cpu_s"] = after.cpu - cpu
    out["emulator_cpu_s"] = time.process_time() - emulator_cpu
    out["requests"] = requests_between(before, bench.recorder.counted())
    figures[name] = out


async def steady(seconds: float) -> dict[str, float]:
    await asyncio.sleep(seconds)
    return {"seconds": seconds}


def summary(figures: dict[str, Any]) -> list[str]:
    """The figures as lines for a person."""
    n = figures["topic_count"]
    idle, cluster, topics, still = (figures[k] for k in ("idle", "cluster", "topics", "steady"))
    per_s = still["seconds"] or 1.0
    return [
        f"operator idle: RSS {idle['rss_mib']:.1f} MiB",
        f"BrokerCluster ({GROUPS} groups x 2): kubectl apply -> {cluster['objects']} objects "
        f"{cluster['apply_to_objects_s']:.2f} s (stored -> objects "
        f"{cluster['create_to_objects_s']:.2f} s); -> Ready {cluster['apply_to_ready_s']:.1f} s;"
        f" {cluster['requests']['total']} API requests",
        f"RSS before the topics: {cluster['rss_mib']:.1f} MiB",
        f"{n} Topics -> Ready: {topics['create_to_ready_s']:.2f} s (the first "
        f"{topics['first_ready_s']:.2f} s, half {topics['half_ready_s']:.2f} s) "
        f"({topics['topics_per_s']:.1f} topics/s, {topics['ms_per_topic']:.1f} ms each); "
        f"operator CPU {topics['cpu_s']:.1f} s (the emulated API server's "
        f"{topics['emulator_cpu_s']:.1f} s); {topics['requests']['total']} API requests "
        f"({topics['requests']['total'] / max(n, 1):.1f} per topic)",
        f"RSS with {n} Topics: {topics['rss_mib']:.1f} MiB (peak {topics['hwm_mib']:.1f} MiB)",
        f"steady {still['seconds']:g} s with {n} Topics: CPU "
        f"{100 * still['cpu_s'] / per_s:.1f} %, {still['requests']['total'] / per_s:.1f} API "
        f"requests/s; RSS {still['rss_mib']:.1f} MiB (peak {still['hwm_mib']:.1f} MiB)",
    ]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--topics", type=int, default=1000, help="Topics to create (1000)")
    parser.add_argument(
        "--steady", type=float, default=30.0, metavar="SECONDS",
        help="seconds to watch the operator idle with the Topics (30; 0 skips)",
    )  # fmt: skip
    parser.add_argument(
        "--timer-interval", type=float, metavar="SECONDS",
        help="the operator's --timer-interval (default: its own default)",
    )  # fmt: skip
    parser.add_argument(
        "--timeout", type=float, default=900.0, metavar="SECONDS",
        help="the longest the whole run may take (900)",
    )  # fmt: skip
    parser.add_argument(
        "--workdir", type=Path, metavar="DIR",
        help="keep the processes' logs and stores here (default: a temporary folder, removed)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="the figures as JSON on stdout")
    args = parser.parse_args(argv)
    if args.topics < 1 or args.steady < 0 or args.timeout <= 0:
        parser.error("--topics must be at least 1, --steady and --timeout not negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    # The operator's watches end with a reset when it stops: aiohttp would print each.
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    with contextlib.ExitStack() as stack:
        work = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        work.mkdir(parents=True, exist_ok=True)
        try:
            figures = asyncio.run(run(args, work))
        except Unfinished as exc:
            log = work / "operator.log"
            tail = log.read_text(errors="replace").splitlines()[-40:] if log.exists() else []
            print(f"bench operator: {exc}", *tail, sep="\n", file=sys.stderr)
            return 1
    lines = summary(figures)
    if args.json:
        print(json.dumps(figures, indent=2))
    print(*lines, sep="\n", file=sys.stderr if args.json else sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
