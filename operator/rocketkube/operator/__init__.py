"""The Kubernetes operator: ``BrokerCluster``, ``Topic`` and ``ConsumerGroup`` resources
(group ``rocketkube.io``, version ``v1alpha1``) reconciled by kopf.

Layers, each importing only those below it:

- ``api``       the resources' pydantic models (the single source of the CRDs), derived
                names, condition types and reasons
- ``specs``     pure builders: a resource in, the Kubernetes objects it needs out
- ``plans``     pure decisions: observed state in; the pod to roll, the scale-in phase,
                the topic actions, the conditions out
- ``handlers``  kopf handlers: read the resource, build, apply, report status

The operator imports only ``rocketkube.client`` and ``rocketkube.common``: it talks to
brokers through the SDK's admin API, never to their files or processes.
"""
