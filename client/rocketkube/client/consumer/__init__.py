"""The consumer side of the SDK: pulling, rebalancing, running listeners, committing offsets.

Module map (the public names are exported by :mod:`rocketkube.client`):

- ``push``: :class:`~rocketkube.client.consumer.push.PushConsumer` (the SDK pulls, the
  listener is called), with ``rebalance``, ``allocation`` (pure strategies),
  ``process_queue``, ``consume_service`` (concurrent or orderly), ``queue_locks`` (orderly
  clustering), ``offset_store`` (broker or local file) and ``send_back`` (failed messages
  to the retry topic).
- ``lite_pull``: :class:`~rocketkube.client.consumer.lite_pull.LitePullConsumer` (the
  application polls).
- ``core``: what every consumer does on the wire; ``pull``: PULL_MESSAGE's header and
  answer without I/O (also the admin client's one-shot pull).
- ``listener``: what a listener is given and returns; ``selector``: TAG or SQL92
  subscriptions.
- ``settings``: :class:`~rocketkube.client.consumer.settings.ConsumerSettings`, the options
  both consumers share as one frozen value.
- ``running_info``, ``push_running_info`` and ``consume_stats``: what a consumer reports
  to GET_CONSUMER_RUNNING_INFO.

Nothing here imports :mod:`rocketkube.client.producer` or :mod:`rocketkube.client.admin`
(an import-linter contract).
"""
