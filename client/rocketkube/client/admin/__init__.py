"""Administering a cluster: the typed admin client and the ``rocketkube admin`` command.

Module map:

- ``client``: :class:`~rocketkube.client.admin.client.AdminClient`, what ``mqadmin`` does,
  for programs (the operator, the Spark source); exported by :mod:`rocketkube.client`.
- ``settings``: :class:`~rocketkube.client.admin.settings.AdminSettings`, its options as
  one frozen value.
- ``base``: its plumbing (lifecycle, requests with error mapping, finding brokers);
  ``queues``: its messages, queue offsets, group offsets and plain pulls.
- ``cli``: ``rocketkube admin``, mqadmin's subcommands and flags over the admin client.
"""
