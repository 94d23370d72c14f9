"""The operator's benchmark script (``tools/bench_operator.py``), run for real with
a handful of Topics: it prints every figure it promises, as JSON and as lines for a
person, and leaves no process behind. Behaviour only, never speed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bench_operator import request_key

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl")

CHECKOUT = Path(__file__).resolve().parents[2]
SCRIPT = CHECKOUT / "tools" / "bench_operator.py"
TOPICS = 5
API = "/apis/rocketkube.io/v1alpha1"


@pytest.mark.parametrize(
    ("method", "path", "watch", "key"),
    [
        ("GET", f"{API}/namespaces/default/topics", False, ("LIST", "topics")),
        ("GET", f"{API}/topics", True, ("WATCH", "topics")),
        ("PATCH", f"{API}/namespaces/ns/topics/t/status", False, ("PATCH", "topics/status")),
        ("GET", "/api/v1/namespaces/default/pods/demo-0", False, ("GET", "pods")),
        ("POST", "/api/v1/namespaces/default/events", False, ("POST", "events")),
        ("GET", "/api/v1/namespaces/default", False, ("GET", "namespaces")),
        ("GET", "/apis", False, ("GET", "")),
    ],
)  # fmt: skip
def test_requests_are_counted_by_verb_and_resource(
    method: str, path: str, watch: bool, key: tuple[str, str]
) -> None:
    assert request_key(method, path, watch) == key


@pytest.mark.slow
def test_a_small_run_prints_every_figure() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--topics", str(TOPICS), "--steady", "1", "--json",
         "--timeout", "300"],
        capture_output=True, text=True, timeout=420, check=False,
        env={**os.environ, "PYTHONPATH": str(CHECKOUT / "tests" / "support")},  # as make runs it
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert (figures["benchmark"], figures["topic_count"]) == ("operator", TOPICS)
    cluster, topics, steady = figures["cluster"], figures["topics"], figures["steady"]
    assert cluster["objects"] == 12  # name servers and 2 groups: 4 kinds each
    assert 0 < cluster["create_to_objects_s"] <= cluster["apply_to_objects_s"]
    assert cluster["apply_to_objects_s"] <= cluster["apply_to_ready_s"]
    assert cluster["requests"]["POST statefulsets"] >= 3  # one per StatefulSet, or a retry
    assert topics["create_to_ready_s"] > 0
    assert topics["topics_per_s"] == pytest.approx(TOPICS / topics["create_to_ready_s"])
    assert topics["requests"]["PATCH topics/status"] >= TOPICS
    assert steady["seconds"] == 1
    for phase in ("idle", "cluster", "topics", "steady"):
        assert 0 < figures[phase]["rss_mib"] <= figures[phase]["hwm_mib"], phase
    lines = done.stderr
    assert "operator pid" in lines
    assert f"{TOPICS} Topics -> Ready:" in lines
    assert f"RSS with {TOPICS} Topics:" in lines
    assert "kubectl apply -> 12 objects" in lines
    pid = int(lines.split("operator pid ", 1)[1].split()[0])
    assert not running_operator(pid), "the operator was left running"


def running_operator(pid: int) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"rocketkube.launcher" in command and b"operator" in command
