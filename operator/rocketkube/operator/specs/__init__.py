"""Pure builders: a BrokerCluster in, the Kubernetes objects it needs out, as plain dicts.

No I/O, no clock, no environment: the same spec always renders the same objects, so the
handlers can compare, apply and roll by them, and tests can read them field by field.
Every name comes from ``api.names``.

- ``base``          the cluster being rendered (name, namespace, spec), object metadata,
                    ``InvalidSpec`` for what the CRD's schema let through but cannot run
- ``config``        ``namesrv.conf`` and each group's ``broker.conf`` (RocketMQ's property
                    names), and the ConfigMaps holding them
- ``pods``          pod templates: the container, probes, ports, volumes, the user's
                    overrides merged in, metrics annotations, the template hash
- ``statefulsets``  the name servers' StatefulSet and one per broker group
- ``services``      headless Services (stable pod DNS names; the group's for clients)
- ``budgets``       PodDisruptionBudgets (one pod at a time per group, and name servers)
- ``monitoring``    the PodMonitor scraping every pod (when PodMonitors are served)
- ``cluster``       every object of a cluster, in the order to apply them

What the builders do not decide: ``paused`` (the handlers stop applying), the order of a
roll (``plans``). ``deleteClaim`` is rendered as the broker StatefulSets' claim retention
policy (``statefulsets``); scale-in also deletes a removed group's claims itself.
"""
