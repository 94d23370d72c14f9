"""The CRDs: generated from the models and current, structural, with CEL rules that
refuse what the models promise to refuse; the examples are valid resources."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import celpy
import celpy.adapter
import pytest
import yaml

from rocketkube.operator.api import crds, models

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "kubernetes").glob("*.yaml"))
MODELS: dict[str, type[models.BrokerCluster | models.Topic | models.ConsumerGroup]] = {
    "BrokerCluster": models.BrokerCluster,
    "Topic": models.Topic,
    "ConsumerGroup": models.ConsumerGroup,
}


def test_crds_folder_is_what_make_crds_writes() -> None:
    rendered = crds.render_all()
    on_disk = {path.name: path.read_text() for path in (ROOT / "crds").glob("*.yaml")}
    assert on_disk == rendered, "crds/ is stale: run `make crds`"


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from nodes(child, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from nodes(schema["additionalProperties"], f"{path}[*]")
    if "items" in schema:
        yield from nodes(schema["items"], f"{path}[]")


@pytest.mark.parametrize("kind", crds.KINDS, ids=lambda k: k.kind)
def test_every_schema_node_is_structural(kind: crds.CrdKind) -> None:
    """What the API server demands of a CRD's schema (no $ref, a type or an escape on
    every node, no null types, maps without properties)."""
    version = crds.crd(kind)["spec"]["versions"][0]
    for path, node in nodes(version["schema"]["openAPIV3Schema"]):
        assert "$ref" not in node, path
        assert "title" not in node, path
        typed = "type" in node
        escaped = node.get("x-kubernetes-int-or-string") or node.get(
            "x-kubernetes-preserve-unknown-fields"
        )
        assert typed or escaped, path
        assert node.get("type") != "null", path
        assert not ("properties" in node and "additionalProperties" in node), path
        for choice in node.get("anyOf", ()):
            assert choice.get("type") != "null", path


def test_printer_columns_and_names() -> None:
    cluster = crds.crd(crds.KINDS[0])
    assert cluster["metadata"]["name"] == "brokerclusters.rocketkube.io"
    assert cluster["spec"]["names"]["shortNames"] == ["rkc", "rocketmq"]
    version = cluster["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Groups", "Replicas", "Ready Groups", "Ready", "Image", "Name Servers", "Age",
    ]  # fmt: skip
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert status["x-kubernetes-preserve-unknown-fields"]  # kopf keeps its progress there


def test_nested_objects_default_so_their_fields_default() -> None:
    schema = crds.crd(crds.KINDS[0])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    assert spec["default"] == {}
    assert spec["properties"]["brokers"]["default"] == {}
    assert spec["properties"]["brokers"]["properties"]["groups"]["default"] == 1
    assert spec["properties"]["brokers"]["properties"]["storage"]["default"] == {}


# -- CEL rules --------------------------------------------------------------------------


def rules(kind: str) -> list[tuple[str, dict[str, str]]]:
    """Every ``x-kubernetes-validations`` rule of ``kind``'s schema, with its path."""
    found = next(k for k in crds.KINDS if k.kind == kind)
    schema = crds.crd(found)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return [(path, rule) for path, node in nodes(schema)
            for rule in node.get("x-kubernetes-validations", ())]  # fmt: skip


def at(obj: Any, path: str) -> Any:
    for part in path.strip(".").split(".") if path else ():
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def violations(kind: str, new: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    """The messages of the rules ``new`` breaks (as an update of ``old`` when given), as
    the API server evaluates them: a rule on a field runs where the field is set, a
    transition rule (one naming ``oldSelf``) only on update where both are set."""
    env = celpy.Environment()
    broken = []
    for path, rule in rules(kind):
        value = at(new, path)
        previous = at(old, path) if old is not None else None
        transition = "oldSelf" in rule["rule"]
        if value is None or (transition and previous is None):
            continue
        activation = {"self": celpy.adapter.json_to_cel(value)}
        if transition:
            activation["oldSelf"] = celpy.adapter.json_to_cel(previous)
        if not env.program(env.compile(rule["rule"])).evaluate(activation):
            broken.append(rule["message"])
    return broken


def topic(name: str = "orders", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"cluster": "demo", **spec}}


def test_queues_may_grow_but_never_shrink() -> None:
    assert violations("Topic", topic(queues=16), topic(queues=8)) == []
    assert violations("Topic", topic(queues=4), topic(queues=8)) == [
        "queues may grow but never shrink"
    ]


def test_a_topic_keeps_its_cluster_and_name() -> None:
    assert violations("Topic", topic(cluster="other"), topic()) == ["cluster cannot be changed"]
    renamed = violations("Topic", topic(topicName="B"), topic(topicName="A"))
    assert renamed == ["topicName cannot be changed"]
    added = violations("Topic", topic(topicName="B"), topic())
    assert added == ["spec.topicName cannot be added or removed"]


def test_a_resource_name_that_is_no_topic_name_needs_topic_name() -> None:
    assert violations("Topic", topic("orders.eu")) == [
        "without spec.topicName, metadata.name must match ^[a-zA-Z0-9_-]+$"
    ]
    assert violations("Topic", topic("orders.eu", topicName="OrdersEU")) == []
    group = {"metadata": {"name": "a.b"}, "spec": {"cluster": "demo"}}
    assert len(violations("ConsumerGroup", group)) == 1


def cluster_spec(**brokers: Any) -> dict[str, Any]:
    defaults = models.BrokerClusterSpec().model_dump(by_alias=True, mode="json")
    defaults["brokers"].update(brokers)
    return {"metadata": {"name": "demo"}, "spec": defaults}


def test_derived_broker_properties_cannot_be_set() -> None:
    assert violations("BrokerCluster", cluster_spec(properties={"fileReservedTime": "48"})) == []
    (message,) = violations("BrokerCluster", cluster_spec(properties={"brokerId": "3"}))
    assert message.startswith("brokers.properties cannot set what the operator derives")


def test_ports_and_paths_the_probes_and_services_rely_on_cannot_be_set() -> None:
    for key in ("httpPort", "haListenPort", "listenPort"):
        (message,) = violations("BrokerCluster", cluster_spec(properties={key: "1"}))
        assert key in message
    spec = cluster_spec()
    spec["spec"]["nameServers"]["properties"] = {"kvConfigPath": "/tmp/kv.json"}
    (message,) = violations("BrokerCluster", spec)
    assert message.startswith("nameServers.properties cannot set what the operator derives")
    spec["spec"]["nameServers"]["properties"] = {"orderMessageEnable": "true"}
    assert violations("BrokerCluster", spec) == []


def test_sync_replication_needs_a_slave() -> None:
    (message,) = violations("BrokerCluster", cluster_spec(replication="SYNC", replicasPerGroup=1))
    assert "SYNC replication needs replicasPerGroup >= 2" in message
    assert violations("BrokerCluster", cluster_spec(replication="SYNC")) == []


def test_storage_class_cannot_change() -> None:
    old = cluster_spec(storage={"size": "1Gi", "storageClassName": "fast"})
    new = cluster_spec(storage={"size": "1Gi", "storageClassName": "slow"})
    assert violations("BrokerCluster", new, old) == ["storageClassName cannot be changed"]


# -- examples -----------------------------------------------------------------------------


def test_there_are_examples_of_every_kind() -> None:
    kinds = {yaml.safe_load(path.read_text())["kind"] for path in EXAMPLES}
    assert kinds == set(MODELS)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_are_valid_resources(path: Path) -> None:
    document = yaml.safe_load(path.read_text())
    resource = MODELS[document["kind"]].model_validate(document)
    assert resource.metadata["name"]
    assert violations(document["kind"], document) == []


def test_the_cluster_example_is_two_groups_of_master_and_slave() -> None:
    document = yaml.safe_load((ROOT / "examples" / "kubernetes" / "cluster.yaml").read_text())
    spec = models.BrokerCluster.model_validate(document).spec
    assert (spec.brokers.groups, spec.brokers.replicas_per_group) == (2, 2)
    assert spec.brokers.storage.delete_claim is False
    assert spec.name_servers.replicas == 2


def test_unknown_spec_fields_are_refused_by_the_models() -> None:
    with pytest.raises(ValueError, match="brokerz"):
        models.BrokerClusterSpec.model_validate({"brokerz": {}})
