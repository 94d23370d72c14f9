"""Route table rules, tested directly on the pure tables."""

from __future__ import annotations

from rocketkube.common.protocol.topic_config import DataVersion, TopicConfig, TopicConfigWrapper
from rocketkube.namesrv.routes import BrokerRegistration, RouteTables


def wrapper(counter: int, *topics: TopicConfig) -> TopicConfigWrapper:
    return TopicConfigWrapper(DataVersion(1000, counter), {t.topic_name: t for t in topics})


def reg(addr: str, broker_id: int, name: str = "b1", cfg: TopicConfigWrapper | None = None,
        cluster: str = "C") -> BrokerRegistration:  # fmt: skip
    return BrokerRegistration(cluster, addr, name, broker_id, addr.replace(":1", ":2"), cfg)


def test_master_then_slave_slave_learns_master_and_ha_address() -> None:
    routes = RouteTables()
    routes.register_broker(reg("10.0.0.1:10911", 0, cfg=wrapper(1, TopicConfig("T", 4, 4))), 0)
    result = routes.register_broker(reg("10.0.0.2:10911", 1, cfg=wrapper(1)), 0)
    assert result.master_addr == "10.0.0.1:10911"
    assert result.ha_server_addr == "10.0.0.1:20911"
    route = routes.pickup_topic_route("T")
    assert route is not None
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}


def test_only_master_registrations_write_queue_data() -> None:
    routes = RouteTables()
    routes.register_broker(reg("10.0.0.2:10911", 1, cfg=wrapper(1, TopicConfig("S", 2, 2))), 0)
    assert routes.pickup_topic_route("S") is None
    assert routes.register_broker(reg("10.0.0.2:10911", 1), 0).master_addr is None


def test_queue_data_updated_only_when_data_version_changes() -> None:
    routes = RouteTables()
    routes.register_broker(reg("a:10911", 0, cfg=wrapper(1, TopicConfig("T", 4, 4))), 0)
    routes.register_broker(reg("a:10911", 0, cfg=wrapper(1, TopicConfig("T", 8, 8))), 1)
    assert routes.topic_queue_table["T"]["b1"].read_queue_nums == 4
    routes.register_broker(reg("a:10911", 0, cfg=wrapper(2, TopicConfig("T", 8, 8))), 2)
    assert routes.topic_queue_table["T"]["b1"].read_queue_nums == 8


def test_address_reregistered_under_new_id_drops_old_id() -> None:
    routes = RouteTables()
    routes.register_broker(reg("a:10911", 1), 0)
    routes.register_broker(reg("a:10911", 0), 0)
    assert routes.broker_addr_table["b1"].broker_addrs == {0: "a:10911"}


def test_expiry_uses_the_given_clock_and_removes_routes_of_last_broker() -> None:
    routes = RouteTables(broker_expired_ms=120_000)
    routes.register_broker(reg("a:10911", 0, cfg=wrapper(1, TopicConfig("T"))), 0)
    routes.register_broker(reg("s:10911", 1), 60_000)
    assert routes.expire(120_000) == []
    assert [addr for addr, _ in routes.expire(120_001)] == ["a:10911"]
    route = routes.pickup_topic_route("T")  # the slave still serves reads
    assert route is not None
    assert route.broker_datas[0].broker_addrs == {1: "s:10911"}
    assert [addr for addr, _ in routes.expire(180_001)] == ["s:10911"]
    assert routes.broker_addr_table == {}
    assert routes.topic_queue_table == {}
    assert routes.cluster_addr_table == {}


def test_closed_channel_removes_its_broker_at_once() -> None:
    routes = RouteTables()
    channel = object()
    routes.register_broker(reg("a:10911", 0, cfg=wrapper(1, TopicConfig("T"))), 0, channel)
    assert routes.on_channel_closed(object()) is None
    assert routes.on_channel_closed(channel) == "a:10911"
    assert routes.pickup_topic_route("T") is None


def test_unregister_keeps_routes_while_another_address_remains() -> None:
    routes = RouteTables()
    routes.register_broker(reg("a:10911", 0, cfg=wrapper(1, TopicConfig("T"))), 0)
    routes.register_broker(reg("s:10911", 1), 0)
    routes.unregister_broker("C", "s:10911", "b1", 1)
    assert routes.pickup_topic_route("T") is not None
    routes.unregister_broker("C", "a:10911", "b1", 0)
    assert routes.pickup_topic_route("T") is None
    assert "C" not in routes.cluster_addr_table


def test_write_perm_wipe_and_add_count_topics() -> None:
    routes = RouteTables()
    cfg = wrapper(1, TopicConfig("T", perm=6), TopicConfig("U", perm=6))
    routes.register_broker(reg("a:10911", 0, cfg=cfg), 0)
    assert routes.change_write_perm("b1", writable=False) == 2
    assert routes.topic_queue_table["T"]["b1"].perm == 4
    assert routes.change_write_perm("b1", writable=True) == 2
    assert routes.topic_queue_table["U"]["b1"].perm == 6
    assert routes.change_write_perm("nope", writable=True) == 0


def test_delete_topic_in_one_cluster_only() -> None:
    routes = RouteTables()
    routes.register_broker(reg("a:1", 0, "b1", wrapper(1, TopicConfig("T")), "C1"), 0)
    routes.register_broker(reg("b:1", 0, "b2", wrapper(1, TopicConfig("T")), "C2"), 0)
    assert routes.topics_of_cluster("C1") == ["T"]
    routes.delete_topic("T", "C1")
    assert set(routes.topic_queue_table["T"]) == {"b2"}
    routes.delete_topic("T")
    assert routes.all_topics() == []


def test_unit_topic_lists_follow_sys_flags() -> None:
    routes = RouteTables()
    cfg = wrapper(
        1,
        TopicConfig("unit", topic_sys_flag=1),
        TopicConfig("unitsub", topic_sys_flag=3),
        TopicConfig("sub", topic_sys_flag=2),
        TopicConfig("plain"),
    )
    routes.register_broker(reg("a:1", 0, cfg=cfg), 0)
    assert routes.unit_topics(unit=True, unit_sub=False) == ["unit", "unitsub"]
    assert routes.unit_topics(unit=None, unit_sub=True) == ["sub", "unitsub"]
    assert routes.unit_topics(unit=False, unit_sub=True) == ["sub"]
    topics, addr = routes.system_topics()
    assert topics == ["C", "b1"]
    assert addr == "a:1"
