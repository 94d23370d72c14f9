"""The names RocketMQ gives topics, groups, broker groups and clusters, as their own types.

Each is a :func:`typing.NewType` over ``str``: at run time the plain string, to the type
checker a different type, so a signature says which name it holds
(``dict[TopicName, list[MessageQueue]]`` rather than ``dict[str, list[...]]``) and a broker
name cannot be passed where a topic is meant. A name is made one once, where it enters
(``TopicName(header.topic)``, a route decoded from JSON, a user's argument); functions keep
taking ``str`` for what a caller passes in, since each of these is one, and type with them
what they hold and return.

Nothing here checks a name: the broker refuses a topic it cannot store
(``rocketkube.broker.topics.validate_topic``, Java's ``TopicValidator``), and the rules
below say what it and RocketMQ's clients accept. docs/glossary.md has the words.
"""

from __future__ import annotations

from typing import NewType

__all__ = ["BrokerName", "ClientId", "ClusterName", "GroupName", "TopicName"]

TopicName = NewType("TopicName", str)
"""A topic: ``^[%|a-zA-Z0-9_-]+$``, at most 127 bytes (the broker's
``validate_topic``). ``%RETRY%<group>`` and ``%DLQ%<group>`` are a consumer group's retry
and dead-letter topics; ``TBW102``, ``SCHEDULE_TOPIC_XXXX`` and the ``RMQ_SYS_`` and
``rmq_sys_`` ones are the broker's own."""

GroupName = NewType("GroupName", str)
"""A producer group or a consumer group (the context says which): the characters of a
topic name, at most 255 (Java's ``Validators.checkGroup``); a consumer group's subscription
group on the broker has the same name."""

BrokerName = NewType("BrokerName", str)
"""A broker group (``brokerName``, e.g. ``broker-a``): a master and its slaves share it, and
a message queue is named by topic, broker name and queue id. Not a broker's address."""

ClusterName = NewType("ClusterName", str)
"""A cluster (``brokerClusterName``, ``DefaultCluster`` unless configured): the broker groups
that registered under it with the name servers."""

ClientId = NewType("ClientId", str)
"""A client instance (``clientID``): ``ip@instance`` in this SDK (the process id and a random
suffix), as the client sends it in its heartbeats; brokers key connected clients by it."""
