"""The pod-template hash: stable for a spec, changed by whatever a pod runs."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from rendering import find, render

from rocketkube.operator.specs import pods

HASH = "rocketkube.io/template-hash"
BASE: dict[str, Any] = {
    "image": "rocketkube/rocketkube:1.0.0",
    "nameServers": {"replicas": 2, "properties": {"a": "1", "b": "2"}},
    "brokers": {
        "groups": 2,
        "resources": {"limits": {"memory": "2Gi"}},
        "properties": {"fileReservedTime": "48", "deleteWhen": "04"},
        "template": {"labels": {"team": "payments"}},
    },
}


def hashes(spec: dict[str, Any]) -> dict[str, str]:
    return {
        o["metadata"]["name"]: o["spec"]["template"]["metadata"]["annotations"][HASH]
        for o in render(spec)
        if o["kind"] == "StatefulSet"
    }


def changed(path: str, value: object) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node = spec
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return spec


def test_the_hash_is_sha256_of_the_canonical_template_and_its_config() -> None:
    objects = render(BASE)
    template = copy.deepcopy(find(objects, "StatefulSet", "demo-broker-1")["spec"]["template"])
    stored = template["metadata"]["annotations"].pop(HASH)
    config = find(objects, "ConfigMap", "demo-broker-1")["data"]
    canonical = json.dumps(
        {"template": template, "config": config}, sort_keys=True, separators=(",", ":")
    )
    assert stored == hashlib.sha256(canonical.encode()).hexdigest()[:16]
    rendered = find(objects, "StatefulSet", "demo-broker-1")["spec"]["template"]
    assert pods.template_hash(rendered, config) == stored


def test_rendering_the_same_spec_again_gives_the_same_hashes() -> None:
    assert hashes(BASE) == hashes(copy.deepcopy(BASE))
    reordered = copy.deepcopy(BASE)
    reordered["brokers"]["properties"] = {"deleteWhen": "04", "fileReservedTime": "48"}
    reordered["nameServers"]["properties"] = {"b": "2", "a": "1"}
    assert hashes(reordered) == hashes(BASE)


def test_another_process_renders_the_same_hashes() -> None:
    """Nothing process-bound (string hashing, set order) reaches the hash."""
    script = (
        "import json, sys\n"
        "from rendering import render\n"
        "spec = json.loads(sys.argv[1])\n"
        "print(json.dumps({o['metadata']['name']: o['spec']['template']['metadata']"
        "['annotations']['rocketkube.io/template-hash'] for o in render(spec)"
        " if o['kind'] == 'StatefulSet'}))\n"
    )
    support = os.path.join(os.path.dirname(__file__), os.pardir, "support")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": os.path.abspath(support)}
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(BASE)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert json.loads(proc.stdout) == hashes(BASE)


def test_the_groups_hashes_differ() -> None:
    found = hashes(BASE)
    assert len(set(found.values())) == 3
    assert all(len(h) == 16 and int(h, 16) >= 0 for h in found.values())


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("image", "rocketkube/rocketkube:1.0.1"),
        ("imagePullPolicy", "Always"),
        ("brokers.resources", {"limits": {"memory": "4Gi"}}),
        ("brokers.properties", {"fileReservedTime": "72", "deleteWhen": "04"}),
        ("brokers.flushDiskType", "SYNC_FLUSH"),
        ("brokers.template", {"labels": {"team": "billing"}}),
        ("brokers.template", {"labels": {"team": "payments"}, "nodeSelector": {"disk": "ssd"}}),
        ("brokers.template", {"labels": {"team": "payments"}, "annotations": {"a": "b"}}),
        ("metrics", {"enabled": False}),
        # the brokers' namesrvAddr lists every name server
        ("nameServers.replicas", 3),
    ],
)
def test_what_a_broker_runs_changes_its_hash(path: str, value: object) -> None:
    before, after = hashes(BASE), hashes(changed(path, value))
    assert after["demo-broker-0"] != before["demo-broker-0"]
    assert after["demo-broker-1"] != before["demo-broker-1"]


@pytest.mark.parametrize(
    ("path", "value", "rolled"),
    [
        ("nameServers.properties", {"a": "1", "b": "3"}, True),
        ("nameServers.resources", {"requests": {"cpu": "1"}}, True),
        ("nameServers.template", {"tolerations": [{"operator": "Exists"}]}, True),
        ("nameServers.replicas", 3, False),
        ("brokers.properties", {"fileReservedTime": "72"}, False),
        ("brokers.groups", 3, False),
    ],
)
def test_what_a_name_server_runs_changes_its_hash(path: str, value: object, rolled: bool) -> None:
    before, after = hashes(BASE), hashes(changed(path, value))
    assert (after["demo-namesrv"] != before["demo-namesrv"]) is rolled


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("brokers.replicasPerGroup", 3),  # a new slave, nothing to roll
        ("brokers.groups", 3),
        ("brokers.storage", {"size": "50Gi"}),  # claims, not the pod template
        ("nameServers.properties", {"a": "2"}),
        ("paused", True),
    ],
)
def test_what_a_broker_does_not_run_leaves_its_hash(path: str, value: object) -> None:
    before, after = hashes(BASE), hashes(changed(path, value))
    assert after["demo-broker-0"] == before["demo-broker-0"]
