"""Spec and status of the operator's resources (group ``rocketkube.io``, ``v1alpha1``).

Fields use Kubernetes conventions (camelCase on the wire, ``spec``/``status``,
``conditions``); RocketMQ's own property names appear only inside the ``properties``
maps, passed to ``broker.conf``/``namesrv.conf`` as they are. Rules a single field can
state are JSON Schema keywords (``minimum``, ``pattern``, ``enum``); rules that span
fields or compare with the old object are CEL (``x-kubernetes-validations``), so the API
server refuses a bad spec before the operator sees it.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict, JsonValue

__all__ = [
    "GROUP",
    "VERSION",
    "BrokerCluster",
    "BrokerClusterSpec",
    "BrokerClusterStatus",
    "BrokerSpec",
    "Condition",
    "ConsumerGroup",
    "ConsumerGroupSpec",
    "ConsumerGroupStatus",
    "FlushDiskType",
    "GroupStatus",
    "MetricsSpec",
    "NameServerSpec",
    "PodStatus",
    "PodTemplateOverrides",
    "PullPolicy",
    "Replication",
    "ResourceRequirements",
    "StorageSpec",
    "Topic",
    "TopicGroupStatus",
    "TopicSpec",
    "TopicStatus",
]

GROUP: Final = "rocketkube.io"
VERSION: Final = "v1alpha1"

TOPIC_PATTERN: Final = r"^[a-zA-Z0-9_-]+$"
"""RocketMQ's topic and group characters, less ``%`` and ``|`` (system names only)."""
TOPIC_MAX_LENGTH: Final = 127
GROUP_MAX_LENGTH: Final = 255
DEFAULT_IMAGE: Final = "rocketkube/rocketkube:0.1.0"

Quantity = Annotated[int | str, Field(json_schema_extra={"x-kubernetes-int-or-string": True})]
"""A Kubernetes quantity: ``512Mi``, ``2``, ``500m``."""
FreeForm = Annotated[
    dict[str, Any], Field(json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})
]
"""A Kubernetes object passed through as it is (affinity, a toleration, ...)."""


def _rule(rule: str, message: str) -> JsonDict:
    return {"rule": rule, "message": message}


class _Model(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
    )


class PullPolicy(enum.StrEnum):
    ALWAYS = "Always"
    IF_NOT_PRESENT = "IfNotPresent"
    NEVER = "Never"


class Replication(enum.StrEnum):
    """How a master answers sends: after a slave has them (SYNC_MASTER) or at once."""

    ASYNC = "ASYNC"
    SYNC = "SYNC"


class FlushDiskType(enum.StrEnum):
    """``flushDiskType``: a send is answered once on disk (SYNC) or once in memory."""

    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class ResourceRequirements(_Model):
    """A container's ``resources``. The broker sizes its memory use from the container's
    limit (its cgroup), never from the node's memory."""

    limits: dict[str, Quantity] = Field(default_factory=dict)
    requests: dict[str, Quantity] = Field(default_factory=dict)


class PodTemplateOverrides(_Model):
    """What a user may add to the pods the operator renders."""

    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    affinity: FreeForm | None = None
    tolerations: list[FreeForm] = Field(default_factory=list)
    node_selector: dict[str, str] = Field(default_factory=dict)
    priority_class_name: str | None = None
    security_context: FreeForm | None = None
    """The pod's ``securityContext``."""
    topology_spread_constraints: list[FreeForm] = Field(default_factory=list)


class NameServerSpec(_Model):
    replicas: int = Field(default=2, ge=1, le=9)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    properties: dict[str, str] = Field(default_factory=dict)
    """Extra ``namesrv.conf`` entries, by RocketMQ's property names (not listenPort,
    httpPort or kvConfigPath, which the operator derives)."""
    template: PodTemplateOverrides = Field(default_factory=PodTemplateOverrides)


class StorageSpec(_Model):
    size: Quantity = "10Gi"
    storage_class_name: str | None = Field(
        default=None,
        json_schema_extra={
            "x-kubernetes-validations": [
                _rule("self == oldSelf", "storageClassName cannot be changed")
            ]
        },
    )
    delete_claim: bool = False
    """Delete a group's volume claims when the group or the cluster is deleted."""


class BrokerSpec(_Model):
    groups: int = Field(default=1, ge=1, le=64)
    """Broker groups (brokerNames), each a master and its slaves."""
    replicas_per_group: int = Field(default=2, ge=1, le=4)
    """1 master + n-1 slaves."""
    replication: Replication = Replication.ASYNC
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    storage: StorageSpec = Field(default_factory=StorageSpec)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    properties: dict[str, str] = Field(default_factory=dict)
    """Extra ``broker.conf`` entries, by RocketMQ's property names. Those the operator
    derives (brokerClusterName, brokerName, brokerId, brokerRole, namesrvAddr, brokerIP1,
    listenPort, httpPort, haListenPort, storePathRootDir) cannot be set here."""
    template: PodTemplateOverrides = Field(default_factory=PodTemplateOverrides)


class MetricsSpec(_Model):
    enabled: bool = True
    """Have Prometheus scrape every pod at /metrics: through a PodMonitor where the
    Prometheus operator's CRDs are installed, else through prometheus.io annotations."""


_DERIVED_PROPERTIES: Final = (
    "brokerClusterName", "brokerName", "brokerId", "brokerRole", "namesrvAddr", "brokerIP1",
    "listenPort", "httpPort", "haListenPort", "storePathRootDir",
)  # fmt: skip
_DERIVED_NAMESRV_PROPERTIES: Final = ("listenPort", "httpPort", "kvConfigPath")


class BrokerClusterSpec(_Model):
    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                _rule(
                    "!has(self.brokers.properties) || !self.brokers.properties.exists(k, k in "
                    f"{list(_DERIVED_PROPERTIES)!r})",
                    "brokers.properties cannot set what the operator derives: "
                    + ", ".join(_DERIVED_PROPERTIES),
                ),
                _rule(
                    "!has(self.nameServers.properties) || !self.nameServers.properties.exists("
                    f"k, k in {list(_DERIVED_NAMESRV_PROPERTIES)!r})",
                    "nameServers.properties cannot set what the operator derives: "
                    + ", ".join(_DERIVED_NAMESRV_PROPERTIES),
                ),
                _rule(
                    "self.brokers.replication != 'SYNC' || self.brokers.replicasPerGroup >= 2",
                    "SYNC replication needs replicasPerGroup >= 2 (a master and a slave)",
                ),
            ]
        }
    )

    image: str = Field(default=DEFAULT_IMAGE, min_length=1)
    image_pull_policy: PullPolicy = PullPolicy.IF_NOT_PRESENT
    name_servers: NameServerSpec = Field(default_factory=NameServerSpec)
    brokers: BrokerSpec = Field(default_factory=BrokerSpec)
    metrics: MetricsSpec = Field(default_factory=MetricsSpec)
    paused: bool = False
    """Stop reconciling (a human is working on the cluster); status still reported."""


class Condition(_Model):
    """A standard Kubernetes condition (``metav1.Condition``)."""

    type: str
    status: str = Field(pattern="^(True|False|Unknown)$")
    reason: str
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None


class PodStatus(_Model):
    name: str
    role: str
    """MASTER or SLAVE."""
    broker_id: int
    ready: bool = False


class GroupStatus(_Model):
    broker_name: str
    pods: list[PodStatus] = Field(default_factory=list)
    writable: bool = True
    """False once the group's write permission is revoked (scale-in)."""
    provisioned: bool = False
    """Its master has held every managed Topic and ConsumerGroup: from then on their own
    handlers keep them there (and report drift); until then the cluster creates them."""


_CONDITIONS: Final[JsonDict] = {
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
}


class BrokerClusterStatus(_Model):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=_CONDITIONS)
    name_server_address: str | None = None
    """What clients set as their name server address (``a;b;c``)."""
    image: str | None = None
    ready_groups: str | None = None
    """``ready/total`` broker groups, for ``kubectl get``."""
    groups: list[GroupStatus] = Field(default_factory=list)
    restart_handled: str | None = None
    """The value of the ``rocketkube.io/restart`` annotation the last finished roll
    handled: a different value asks for a roll of every broker pod."""


class TopicSpec(_Model):
    cluster: str = Field(
        min_length=1,
        json_schema_extra={
            "x-kubernetes-validations": [_rule("self == oldSelf", "cluster cannot be changed")]
        },
    )
    """The BrokerCluster, in the Topic's namespace."""
    topic_name: str | None = Field(
        default=None,
        pattern=TOPIC_PATTERN,
        max_length=TOPIC_MAX_LENGTH,
        json_schema_extra={
            "x-kubernetes-validations": [
                _rule("self == oldSelf", "topicName cannot be changed"),
            ]
        },
    )
    """The RocketMQ topic; the resource's name when absent."""
    queues: int = Field(
        default=8,
        ge=1,
        le=1024,
        json_schema_extra={
            "x-kubernetes-validations": [
                _rule("self >= oldSelf", "queues may grow but never shrink")
            ]
        },
    )
    """Read and write queues on each broker group."""
    perm: int = Field(default=6, json_schema_extra={"enum": [2, 4, 6]})
    """RocketMQ's permission bits: 6 read and write, 4 read only, 2 write only."""
    order: bool = False
    broker_groups: list[Annotated[int, Field(ge=0)]] | None = None
    """Group indexes the topic lives on; all groups when absent."""
    managed: bool = True
    """False: stop managing the topic, leave it on the brokers."""


class TopicGroupStatus(_Model):
    broker_name: str
    read_queues: int
    write_queues: int


class TopicStatus(_Model):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=_CONDITIONS)
    topic_name: str | None = None
    queues: int | None = None
    groups: list[TopicGroupStatus] = Field(default_factory=list)
    last_checked: str | None = None


class ConsumerGroupSpec(_Model):
    cluster: str = Field(
        min_length=1,
        json_schema_extra={
            "x-kubernetes-validations": [_rule("self == oldSelf", "cluster cannot be changed")]
        },
    )
    group_name: str | None = Field(
        default=None,
        pattern=TOPIC_PATTERN,
        max_length=GROUP_MAX_LENGTH,
        json_schema_extra={
            "x-kubernetes-validations": [_rule("self == oldSelf", "groupName cannot be changed")]
        },
    )
    """The RocketMQ consumer group; the resource's name when absent."""
    retry_max_times: int = Field(default=16, ge=-1)
    consume_broadcast_enable: bool = True
    consume_from_min_enable: bool = True
    retry_queue_nums: int = Field(default=1, ge=1, le=64)
    which_broker_when_consume_slowly: int = Field(default=1, ge=0)
    managed: bool = True


class TopicLag(_Model):
    topic: str
    lag: int


class ConsumerGroupStatus(_Model):
    observed_generation: int | None = None
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=_CONDITIONS)
    group_name: str | None = None
    brokers: list[str] = Field(default_factory=list)
    """The masters (brokerNames) last seen holding the group as specified."""
    total_lag: int | None = None
    lag: list[TopicLag] = Field(default_factory=list)
    last_checked: str | None = None


def _name_rules(field: str, limit: int) -> list[JsonValue]:
    """The resource's name stands for ``spec.<field>`` when that is absent: then it must
    be a valid RocketMQ name too (a Kubernetes name may hold dots); and the field can be
    neither added nor removed later (either would rename what the resource manages)."""
    return [
        _rule(
            f"has(self.spec.{field}) || (self.metadata.name.matches('{TOPIC_PATTERN}')"
            f" && size(self.metadata.name) <= {limit})",
            f"without spec.{field}, metadata.name must match {TOPIC_PATTERN}",
        ),
        _rule(
            f"has(self.spec.{field}) == has(oldSelf.spec.{field})",
            f"spec.{field} cannot be added or removed",
        ),
    ]


class _Resource(_Model):
    api_version: str = f"{GROUP}/{VERSION}"
    kind: str
    metadata: FreeForm = Field(default_factory=dict)


class BrokerCluster(_Resource):
    """A RocketMQ cluster: name servers and broker groups (a master and its slaves each)."""

    kind: str = "BrokerCluster"
    spec: BrokerClusterSpec = Field(default_factory=BrokerClusterSpec)
    status: BrokerClusterStatus | None = None


class Topic(_Resource):
    """A topic on a BrokerCluster's broker groups, created and kept as specified."""

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": _name_rules("topicName", TOPIC_MAX_LENGTH)}
    )

    kind: str = "Topic"
    spec: TopicSpec
    status: TopicStatus | None = None


class ConsumerGroup(_Resource):
    """A consumer group (subscription group) on every master of a BrokerCluster."""

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": _name_rules("groupName", GROUP_MAX_LENGTH)}
    )

    kind: str = "ConsumerGroup"
    spec: ConsumerGroupSpec
    status: ConsumerGroupStatus | None = None
