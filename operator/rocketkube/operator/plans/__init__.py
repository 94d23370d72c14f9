"""The operator's decisions as pure functions: observed state in (plain frozen data),
decisions out (dataclasses and enums). No I/O and no clock: the kopf handlers observe,
call a plan, act on its answer, and call again on the next pass. Nothing is remembered
between calls, so an operator restarted mid-roll or mid-scale resumes where it was.

- ``observed``         what the handlers observe: pods, topic and group tables, lag
- ``roll``             the rolling update: the one pod to restart next, or why to wait
- ``scale_out``        groups to create; what a new group's master must hold first
- ``scale_in``         the phase of each retiring group: revoke writes, drain, remove
- ``topics``           a Topic's spec against the masters: actions, drift, queues kept
- ``consumer_groups``  a ConsumerGroup's settings against every master
- ``repair``           action kinds and drift, shared by the two above
- ``cluster_status``   a BrokerCluster's conditions and ``readyGroups``
- ``metadata_status``  a Topic's and a ConsumerGroup's conditions
- ``report``           a condition as a summary states it; setting it on a resource

Plans import ``api`` (names, models, condition types) and nothing that does I/O.
"""
