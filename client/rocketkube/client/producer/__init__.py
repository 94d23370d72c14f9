"""The producer side of the SDK: sending messages to the brokers a topic's route names.

Module map (the public names are exported by :mod:`rocketkube.client`):

- ``producer``: :class:`~rocketkube.client.producer.producer.Producer`, the asyncio producer
  (sync, async, oneway, batch and ordered sends, retries to another broker).
- ``transaction``: the transactional producer and its broker-side state checks.
- ``settings``: :class:`~rocketkube.client.producer.settings.ProducerSettings`, every
  option of a producer as one frozen value.
- ``outgoing``: a message made ready to send (validated, compressed, properties encoded).
- ``send_result``: what a send returns, read from SEND_MESSAGE's response.
- ``queue_selectors``: queue selectors for ordered sends.
- ``latency_fault``: brokers that answered slowly or failed, avoided for a while (pure).
- ``links``: heartbeats to the brokers sent to, and UNREGISTER_CLIENT on close.
- ``accumulator`` and ``auto_batch``: auto-batching of sends (RocketMQ 5's
  ``ProduceAccumulator``): the batching itself, then the producer's side of it.

Nothing here imports :mod:`rocketkube.client.consumer` or :mod:`rocketkube.client.admin`
(an import-linter contract).
"""
