"""The Kubernetes operator: ``BrokerCluster``, ``Topic`` and ``ConsumerGroup`` resources
(group ``rocketkube.io``, version ``v1alpha1``) reconciled by kopf.

Layers, each importing only those below it:

- ``api``       the resources' pydantic models (the single source of the CRDs), derived
                names, condition types and reasons
- ``specs``     pure builders: a resource in, the Kubernetes objects it needs out
- ``handlers``  kopf handlers: read the resource, build, apply, report status

The operator imports only ``rocketkube.client`` and ``rocketkube.common``: it talks to
brokers through the SDK's admin API, never to their files or processes.
"""
