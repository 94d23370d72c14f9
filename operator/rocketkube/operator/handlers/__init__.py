"""The kopf handlers: thin passes of observe -> plan -> act -> report over the three kinds.

- ``registry``        the handlers, registered on a registry built per operator
- ``context``         what handlers share through kopf's ``memo``: the Kubernetes client,
                      the name-server address of a cluster, timing, metrics
- ``outcomes``        a handler run's result counted and timed; failures as kopf retries
- ``cluster``         a BrokerCluster pass; ``cluster_steps`` what it writes: its objects
                      and the one plan step of a timer tick
- ``workloads``       pods, group objects and claims read from Kubernetes
- ``brokers``         readings and writes through the SDK's admin API
- ``topic``           a Topic pass and deletion; ``consumer_group`` a ConsumerGroup's
- ``metadata``        what those two share: their cluster, waiting, carrying out actions
- ``resources``       resources parsed into the models; conditions and Events written
"""
