"""The allocation strategies: Java's exact results, and a partition for any input."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketkube.client.consumer import allocation
from rocketkube.client.routing import MessageQueue


def _queues(n: int, topic: str = "T", broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def _ids(shares: list[list[MessageQueue]]) -> list[list[int]]:
    return [[q.queue_id for q in share] for share in shares]


def _shares(strategy: allocation.AllocateStrategy, n: int, cids: list[str]) -> list[list[int]]:
    queues = _queues(n)
    return _ids([strategy("g", cid, queues, cids) for cid in cids])


def test_averagely_gives_consecutive_blocks_as_java() -> None:
    cids = ["c1", "c2", "c3"]
    assert _shares(allocation.allocate_averagely, 8, cids) == [[0, 1, 2], [3, 4, 5], [6, 7]]
    assert _shares(allocation.allocate_averagely, 2, cids) == [[0], [1], []]
    assert _shares(allocation.allocate_averagely, 3, cids) == [[0], [1], [2]]


def test_by_circle_deals_queues_as_java() -> None:
    cids = ["c1", "c2", "c3"]
    assert _shares(allocation.allocate_averagely_by_circle, 8, cids) == [
        [0, 3, 6],
        [1, 4, 7],
        [2, 5],
    ]


def test_inputs_are_sorted_first() -> None:
    queues = list(reversed(_queues(4)))
    assert _ids([allocation.allocate_averagely("g", "b", queues, ["b", "a"])]) == [[2, 3]]


def test_unknown_client_gets_nothing() -> None:
    for strategy in (
        allocation.allocate_averagely,
        allocation.allocate_averagely_by_circle,
        allocation.allocate_by_consistent_hash,
    ):
        assert strategy("g", "stranger", _queues(4), ["c1", "c2"]) == []


def test_consistent_hash_is_stable_when_a_client_leaves() -> None:
    queues = _queues(32)
    cids = ["c1", "c2", "c3", "c4"]
    before = {
        cid: set(allocation.allocate_by_consistent_hash("g", cid, queues, cids)) for cid in cids
    }
    after = {
        cid: set(allocation.allocate_by_consistent_hash("g", cid, queues, cids[:-1]))
        for cid in cids[:-1]
    }
    for cid in cids[:-1]:
        assert before[cid] <= after[cid]  # survivors keep what they had


def test_consistent_hash_ring_keys_are_javas() -> None:
    # Java hashes "cid-index" and MessageQueue.toString() with MD5, first 4 bytes big-endian.
    assert allocation._md5_hash("c1-0") == 0xE7A7EB0B
    assert allocation._java_queue_string(MessageQueue("T", "b", 3)) == (
        "MessageQueue [topic=T, brokerName=b, queueId=3]"
    )


def test_by_config_ignores_the_group() -> None:
    mine = _queues(2)
    strategy = allocation.AllocateByConfig(reversed(mine))
    assert strategy("g", "c1", _queues(8), ["c1", "c2"]) == mine


STRATEGIES = st.sampled_from(
    [
        allocation.allocate_averagely,
        allocation.allocate_averagely_by_circle,
        allocation.allocate_by_consistent_hash,
    ]
)


@given(
    strategy=STRATEGIES,
    brokers=st.integers(1, 3),
    per_broker=st.integers(0, 9),
    cids=st.lists(
        st.text("abcdef0123456789@#.", min_size=1, max_size=8), min_size=1, max_size=7, unique=True
    ),
)
def test_every_queue_has_exactly_one_consumer(
    strategy: allocation.AllocateStrategy, brokers: int, per_broker: int, cids: list[str]
) -> None:
    queues = [q for b in range(brokers) for q in _queues(per_broker, broker=f"broker-{b}")]
    shares = [strategy("g", cid, list(reversed(queues)), cids) for cid in cids]
    flat = [q for share in shares for q in share]
    assert sorted(flat) == sorted(queues)
    if strategy is not allocation.allocate_by_consistent_hash:
        sizes = [len(share) for share in shares]
        assert max(sizes) - min(sizes) <= 1
