"""The consumer side of the broker: who consumes what, from where, and what waits for it.

- ``groups``        :class:`SubscriptionGroupManager`: subscription group configs, persisted
- ``offsets``       :class:`ConsumerOffsetManager`: committed offsets per group and queue
- ``clients``       :class:`ClientManager`: connected consumers (and producers) per group,
                    from heartbeats; tells when a consumer group changes
- ``locks``         :class:`QueueLockTable`: queue locks of orderly consumers, pure
- ``filters``       SQL92 property filters applied on the pull path
- ``long_polling``  :class:`PullRequestHoldService`: pulls that found nothing, held until
                    messages arrive

These modules use the store and ``common`` only; processors reach them through the
broker's context.
"""
