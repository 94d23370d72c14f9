"""A Kubernetes on this machine, by hand: the emulated API server and the kubelet harness.

Run as root (network namespaces), from the checkout::

    make sandbox                                     # or:
    PYTHONPATH=tests/support .venv/bin/python tools/sandbox.py --demo [--workdir DIR]

It starts the emulated API server (``kube_api``) on 127.0.0.1, creates the operator's
CRDs (``crds/*.yaml``), starts the harness (``kubelet``) over it, prints the KUBECONFIG to
use and where logs and volumes go, then prints each pod's changes until Ctrl-C, when every
pod is stopped and every namespace, link and hosts file removed. In another terminal::

    export KUBECONFIG=<the path printed>
    kubectl get pods -o custom-columns=NAME:.metadata.name,PHASE:.status.phase,\
    READY:.status.containerStatuses[*].ready,IP:.status.podIP   # real processes, own IPs
    kubectl apply -f some-statefulset.yaml           # its pods start here
    kubectl delete pod demo-broker-0-1               # stopped, then recreated
    curl http://<pod IP>:10914/metrics               # the host reaches every pod IP

``--demo`` creates what the operator would for a small BrokerCluster ``demo`` (a name
server, ``--groups`` broker groups of ``--replicas`` pods, small store files), rendered by
the operator's own builders (``rocketkube.operator.specs``); a client on the host reaches
it at the name server pod's IP, port 9876. Without ``--demo`` nothing runs until objects
are applied: a BrokerCluster needs the operator, run against this KUBECONFIG or as a
Deployment applied here (the chart's, rendered: its pods reach this API server as pods
do, through the ``kubernetes`` Service's variables and their service account's token and
CA); the harness runs the StatefulSets it creates. The emulator's tables give built-in
kinds a Name and an Age column only, hence the custom columns above.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import yaml
from kube_api import running_kube_api
from kube_api_cluster import Cluster
from kubelet import KubeletOptions, RunningKubelet, Unavailable, running_kubelet
from kubelet_apiserver import ApiServer
from kubelet_pod import describe
from rendering import render

_CHECKOUT = Path(__file__).resolve().parents[1]
_SMALL_STORE = {
    "mappedFileSizeCommitLog": str(64 << 20),
    "mappedFileSizeConsumeQueue": str(20 * 300_000),
    "maxHashSlotNum": "100000",
    "maxIndexNum": "400000",
}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workdir", type=Path, help="kubeconfig, logs, volumes (default: new)")
    parser.add_argument("--crds", type=Path, default=_CHECKOUT / "crds", help="CRDs to create")
    parser.add_argument("--demo", action="store_true", help="run a small BrokerCluster's objects")
    parser.add_argument("--groups", type=int, default=1, help="--demo broker groups")
    parser.add_argument("--replicas", type=int, default=2, help="--demo pods per group")
    parser.add_argument("--namespace", default="default", help="--demo namespace")
    parser.add_argument(
        "--probe-period-cap", type=float, metavar="SECONDS",
        help="shorten probe periods to at most this (default: as the templates say)",
    )  # fmt: skip
    return parser.parse_args(argv)


def create_crds(cluster: Cluster, folder: Path) -> list[str]:
    created = []
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if document and document.get("kind") == "CustomResourceDefinition":
                cluster.create_object(document)
                created.append(str(document["metadata"]["name"]))
    return created


def create_demo(cluster: Cluster, args: argparse.Namespace) -> None:
    if cluster.find_object("namespaces", args.namespace, "") is None:
        cluster.create_object(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": args.namespace}}
        )
    spec: dict[str, Any] = {
        "nameServers": {"replicas": 1},
        "brokers": {
            "groups": args.groups,
            "replicasPerGroup": args.replicas,
            "properties": _SMALL_STORE,
        },
    }
    for obj in render(spec, "demo", args.namespace):
        cluster.create_object(obj)


def watch(cluster: Cluster, stop: threading.Event) -> None:
    """Print each pod's line whenever it changes, until ``stop``."""
    shown: dict[str, str] = {}
    while not stop.wait(1.0):
        pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": describe(p)
                for p in cluster.list_objects("pods")}  # fmt: skip
        for key, line in sorted(pods.items()):
            if shown.get(key) != line:
                print(line, flush=True)
        for key in sorted(shown.keys() - pods.keys()):
            print(f"{key}: gone", flush=True)
        shown = pods


def banner(kubeconfig: Path, harness: RunningKubelet, workdir: Path, crds: list[str]) -> str:
    return "\n".join(
        [
            f"export KUBECONFIG={kubeconfig}",
            f"pods: {harness.subnet} on bridge {harness.bridge} (this host: {harness.host_ip})",
            f"logs: {workdir / 'kubelet' / 'logs'}   claims: {workdir / 'kubelet' / 'claims'}",
            f"CRDs: {', '.join(crds) or 'none'}",
            "Ctrl-C stops every pod and removes what the sandbox made.",
        ]
    )


def main(argv: list[str]) -> int:
    args = parse(argv)
    workdir: Path = args.workdir or Path(tempfile.mkdtemp(prefix="rocketkube-sandbox-"))
    workdir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with running_kube_api(workdir / "kubeconfig") as server:
        cluster = server.cluster
        crds = create_crds(cluster, args.crds)
        try:
            options = KubeletOptions(
                workdir=workdir / "kubelet",
                probe_period_cap=args.probe_period_cap,
                api_server=ApiServer(server.url, server.token),
            )
            with running_kubelet(cluster, options) as harness:
                print(banner(server.kubeconfig, harness, workdir, crds), flush=True)
                if args.demo:
                    create_demo(cluster, args)
                watch(cluster, stop)
                print("stopping every pod...", flush=True)
        except Unavailable as error:
            print(f"cannot run pods here: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
