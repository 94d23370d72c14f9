"""Pure tests of the client's routing helpers and its error mapping."""

from __future__ import annotations

import pytest

import rocketkube.client
from rocketkube.client import errors, routing
from rocketkube.common.names import BrokerName, ClusterName, TopicName
from rocketkube.common.protocol.route import BrokerData, QueueData, TopicRouteData
from rocketkube.common.remoting.codes import ResponseCode


def _queues(*spec: tuple[str, int]) -> list[routing.MessageQueue]:
    return [routing.MessageQueue("T", name, i) for name, count in spec for i in range(count)]


def test_select_queue_round_robin_without_failure() -> None:
    queues = _queues(("a", 2), ("b", 2))
    picked = [routing.select_queue(queues, None, counter) for counter in range(5)]
    assert picked == [*queues, queues[0]]


def test_select_queue_skips_last_failed_broker() -> None:
    queues = _queues(("a", 2), ("b", 2))
    for counter in range(8):
        assert routing.select_queue(queues, "a", counter).broker_name == "b"
    assert routing.select_queue(queues, "b", 2) == queues[0]  # scans forward, wrapping


def test_select_queue_single_broker_still_answers() -> None:
    queues = _queues(("a", 3))
    assert routing.select_queue(queues, "a", 4) == queues[1]


def test_select_queue_empty() -> None:
    with pytest.raises(ValueError, match="no queue"):
        routing.select_queue([], None, 0)


def _route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[
            QueueData(BrokerName("b"), 8, 8, 6),
            QueueData(BrokerName("a"), 8, 2, 6),
            QueueData(BrokerName("ro"), 4, 4, 4),  # read only
            QueueData(BrokerName("nomaster"), 4, 4, 6),
        ],
        broker_datas=[
            BrokerData(ClusterName("c"), BrokerName("a"), {0: "10.0.0.1:10911"}),
            BrokerData(
                ClusterName("c"), BrokerName("b"), {0: "10.0.0.2:10911", 1: "10.0.0.3:10911"}
            ),
            BrokerData(ClusterName("c"), BrokerName("ro"), {0: "10.0.0.4:10911"}),
            BrokerData(ClusterName("c"), BrokerName("nomaster"), {1: "10.0.0.5:10911"}),
        ],
    )


def test_writable_queues_need_write_perm_and_master() -> None:
    queues = routing.writable_queues("T", _route())
    assert queues == _queues(("a", 2), ("b", 8))


def test_clamp_default_route() -> None:
    clamped = routing.clamp_default_route(_route(), 4)
    assert [
        (q.broker_name, q.read_queue_nums, q.write_queue_nums) for q in clamped.queue_datas
    ] == [
        ("b", 4, 4),
        ("a", 4, 2),
        ("ro", 4, 4),
        ("nomaster", 4, 4),
    ]
    assert _route().queue_datas[0].write_queue_nums == 8  # the input is left alone


def test_publish_info_master_addr_and_counter() -> None:
    info = routing.TopicPublishInfo(
        TopicName("T"), _route(), routing.writable_queues("T", _route())
    )
    assert info.master_addr("b") == "10.0.0.2:10911"
    assert info.master_addr("nomaster") is None
    assert info.master_addr("zzz") is None
    assert [info.next_index() for _ in range(3)] == [0, 1, 2]


@pytest.mark.parametrize(
    ("code", "cls", "retriable"),
    [
        (ResponseCode.SYSTEM_BUSY, errors.BrokerBusyError, True),
        (ResponseCode.FLOW_CONTROL, errors.BrokerBusyError, True),
        (ResponseCode.SERVICE_NOT_AVAILABLE, errors.ServiceNotAvailableError, True),
        (ResponseCode.TOPIC_NOT_EXIST, errors.TopicNotExistError, True),
        (ResponseCode.NO_PERMISSION, errors.NoPermissionError, True),
        (ResponseCode.MESSAGE_ILLEGAL, errors.MessageIllegalError, False),
        (ResponseCode.SYSTEM_ERROR, errors.MQBrokerError, True),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, errors.MQBrokerError, False),
        (999, errors.MQBrokerError, False),
    ],
)
def test_for_code(code: int, cls: type[errors.MQBrokerError], retriable: bool) -> None:
    error = errors.for_code(code, "why", "broker-a")
    assert type(error) is cls
    assert error.retriable is retriable
    assert (error.code, error.remark, error.broker) == (code, "why", "broker-a")
    assert "why" in str(error)
    assert "broker-a" in str(error)
    assert isinstance(error, errors.MQClientError)
    assert isinstance(error, rocketkube.client.RocketKubeError)


def test_page_cache_busy_is_busy() -> None:
    error = errors.for_code(ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy")
    assert isinstance(error, errors.BrokerBusyError)
    assert error.retriable


def test_client_errors_retriable_flags() -> None:
    assert errors.RouteNotFoundError("x").retriable
    assert not errors.ClientStateError("x").retriable
    assert isinstance(errors.MessageValidationError("x"), ValueError)
    assert rocketkube.client.RemotingTimeoutError("x").retriable


def test_public_api_is_exported() -> None:
    for name in rocketkube.client.__all__:
        assert getattr(rocketkube.client, name) is not None
    assert sorted(rocketkube.client.__all__) == rocketkube.client.__all__
