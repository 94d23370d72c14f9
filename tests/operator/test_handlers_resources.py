"""What the handlers read from the objects kopf hands them: a timer's pass works on a
snapshot, never on kopf's live view, which takes each newer version of the object as the
watch delivers it (a pass that read the spec of one generation once reported its
findings as the next one's). What they write back: only the status that changed."""

from __future__ import annotations

from typing import Any

import kopf

from rocketkube.operator.handlers import resources


def test_a_snapshot_keeps_the_object_a_pass_began_with() -> None:
    raw: Any = {
        "apiVersion": "rocketkube.io/v1alpha1",
        "kind": "Topic",
        "metadata": {"name": "orders", "generation": 1},
        "spec": {"cluster": "demo", "queues": 8},
    }
    live = kopf.Body(raw)
    taken = resources.snapshot(live)
    raw["metadata"]["generation"] = 2  # the watch delivers the next version
    raw["spec"]["queues"] = 16
    assert (live.metadata["generation"], live.spec["queues"]) == (2, 16)
    assert (taken.metadata["generation"], taken.spec["queues"]) == (1, 8)
    assert taken.metadata.name == "orders"


def test_a_pass_that_finds_nothing_new_writes_nothing_until_a_minute_passed() -> None:
    status = {"topicName": "Orders", "queues": 8, "lastChecked": "2030-01-01T10:00:00Z"}
    body = {"status": status}

    def changes(**wanted: Any) -> dict[str, Any]:
        return resources.status_changes(body, wanted, refresh=60)

    same = {"topicName": "Orders", "queues": 8}
    assert changes(**same, lastChecked="2030-01-01T10:00:59Z") == {}
    assert changes(**same, lastChecked="2030-01-01T10:01:00Z") == {
        "lastChecked": "2030-01-01T10:01:00Z"
    }
    assert changes(topicName="Orders", queues=16, lastChecked="2030-01-01T10:00:10Z") == {
        "queues": 16,
        "lastChecked": "2030-01-01T10:00:10Z",
    }
    fresh = resources.status_changes({}, {"lastChecked": "2030-01-01T10:00:00Z"}, refresh=60)
    assert fresh == {"lastChecked": "2030-01-01T10:00:00Z"}
