"""The name server's request processors: one method per request code, and their table."""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable

from rocketkube.common import errors, fastjson, properties_file
from rocketkube.common.protocol import namesrv_headers as h
from rocketkube.common.protocol import route
from rocketkube.common.protocol.topic_config import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfigWrapper,
)
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor
from rocketkube.common.remoting.replies import ok_once_saved
from rocketkube.namesrv import settings as settings_mod
from rocketkube.namesrv.kvconfig import ORDER_TOPIC_CONFIG, KVConfig
from rocketkube.namesrv.routes import BrokerRegistration, RouteTables

log = logging.getLogger(__name__)

#: Below V3_0_11 a REGISTER_BROKER body is a bare TopicConfigSerializeWrapper.
V3_0_11 = 37

Clock = Callable[[], int]


def ok(body: bytes = b"", ext_fields: dict[str, str] | None = None) -> RemotingCommand:
    return RemotingCommand.response(ResponseCode.SUCCESS, None, ext_fields, body)


def fail(code: int, remark: str) -> RemotingCommand:
    return RemotingCommand.response(code, remark)


class NamesrvProcessors:
    """Answers brokers, clients and admin tools from the route tables and KV config."""

    def __init__(
        self,
        routes: RouteTables,
        kv: KVConfig,
        settings: settings_mod.NamesrvSettings,
        clock: Clock,
    ) -> None:
        self.routes = routes
        self.kv = kv
        self.settings = settings
        self.clock = clock

    def table(self) -> dict[int, Processor]:
        c = RequestCode
        return {
            c.REGISTER_BROKER: self.register_broker,
            c.UNREGISTER_BROKER: self.unregister_broker,
            c.QUERY_DATA_VERSION: self.query_data_version,
            c.GET_ROUTEINFO_BY_TOPIC: self.get_route_info,
            c.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            c.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm,
            c.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm,
            c.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            c.DELETE_TOPIC_IN_NAMESRV: self.delete_topic,
            c.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            c.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            c.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            c.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            c.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_ununit_topic_list,
            c.PUT_KV_CONFIG: self.put_kv_config,
            c.GET_KV_CONFIG: self.get_kv_config,
            c.DELETE_KV_CONFIG: self.delete_kv_config,
            c.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            c.UPDATE_NAMESRV_CONFIG: self.update_config,
            c.GET_NAMESRV_CONFIG: self.get_config,
        }

    # -- brokers ----------------------------------------------------------------------

    def register_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.RegisterBrokerRequestHeader.decode(req.ext_fields)
        body = req.body
        if header.body_crc32 != 0 and zlib.crc32(body) & 0x7FFFFFFF != header.body_crc32:
            log.warning("register from %s: body crc32 does not match", conn.remote_address)
            return fail(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        topic_config: TopicConfigWrapper | None = None
        filter_servers: list[str] = []
        if len(body):
            try:
                if req.version >= V3_0_11:
                    parsed = RegisterBrokerBody.decode(
                        body,
                        compressed=header.compressed,
                        max_inflated=self.settings.max_register_body_inflated_size,
                    )
                    topic_config, filter_servers = parsed.topic_config, parsed.filter_server_list
                else:
                    topic_config = TopicConfigWrapper.from_json(fastjson.loads(body))
            except errors.InflateLimitError as exc:
                log.warning("register of %s from %s refused: its body %s",
                            header.broker_addr, conn.remote_address, exc)  # fmt: skip
                return fail(
                    ResponseCode.SYSTEM_ERROR,
                    f"register body {exc} (maxRegisterBodyInflatedSize)",
                )
            except (errors.ProtocolError, ValueError, KeyError, TypeError) as exc:
                return fail(ResponseCode.SYSTEM_ERROR, f"malformed register body: {exc}")
        result = self.routes.register_broker(
            BrokerRegistration(
                cluster_name=header.cluster_name,
                broker_addr=header.broker_addr,
                broker_name=header.broker_name,
                broker_id=header.broker_id,
                ha_server_addr=header.ha_server_addr,
                topic_config=topic_config,
                filter_server_list=filter_servers,
            ),
            self.clock(),
            conn,
        )
        order_conf = self.kv.namespace(ORDER_TOPIC_CONFIG)
        return ok(
            route.encode_kv_table(order_conf) if order_conf else b"",
            h.RegisterBrokerResponseHeader(result.ha_server_addr, result.master_addr).encode(),
        )

    def unregister_broker(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.UnregisterBrokerRequestHeader.decode(req.ext_fields)
        self.routes.unregister_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id
        )
        return ok()

    def query_data_version(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.QueryDataVersionRequestHeader.decode(req.ext_fields)
        try:
            version = DataVersion.from_json(fastjson.loads(req.body) if len(req.body) else {})
        except (ValueError, TypeError, AttributeError) as exc:
            return fail(ResponseCode.SYSTEM_ERROR, f"malformed DataVersion: {exc}")
        changed = self.routes.is_topic_config_changed(header.broker_addr, version)
        if not changed:
            self.routes.touch(header.broker_addr, self.clock())
        current = self.routes.data_version(header.broker_addr)
        return ok(
            fastjson.dumps(current.to_json()) if current is not None else b"",
            h.QueryDataVersionResponseHeader(changed).encode(),
        )

    def wipe_write_perm(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.BrokerNameRequestHeader.decode(req.ext_fields)
        count = self.routes.change_write_perm(header.broker_name, writable=False)
        log.info("wiped write perm of broker %s on %d topics", header.broker_name, count)
        return ok(ext_fields=h.WipeWritePermResponseHeader(count).encode())

    def add_write_perm(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.BrokerNameRequestHeader.decode(req.ext_fields)
        count = self.routes.change_write_perm(header.broker_name, writable=True)
        log.info("added write perm of broker %s on %d topics", header.broker_name, count)
        return ok(ext_fields=h.AddWritePermResponseHeader(count).encode())

    # -- routes -----------------------------------------------------------------------

    def get_route_info(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.GetRouteInfoRequestHeader.decode(req.ext_fields)
        data = self.routes.pickup_topic_route(header.topic)
        if data is None:
            return fail(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {header.topic}",
            )
        if self.settings.order_message_enable:
            data.order_topic_conf = self.kv.get(ORDER_TOPIC_CONFIG, header.topic)
        return ok(data.encode())

    def get_broker_cluster_info(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        info = route.ClusterInfo(
            broker_addr_table=self.routes.broker_addr_table,
            cluster_addr_table=self.routes.cluster_addr_table,
        )
        return ok(info.encode())

    def get_all_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return ok(route.encode_topic_list(self.routes.all_topics()))

    def delete_topic(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.DeleteTopicFromNamesrvRequestHeader.decode(req.ext_fields)
        self.routes.delete_topic(header.topic, header.cluster_name or None)
        return ok()

    def get_topics_by_cluster(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.GetTopicsByClusterRequestHeader.decode(req.ext_fields)
        return ok(route.encode_topic_list(self.routes.topics_of_cluster(header.cluster)))

    def get_system_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        topics, addr = self.routes.system_topics()
        return ok(route.encode_topic_list(topics, addr))

    def get_unit_topic_list(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        return ok(route.encode_topic_list(self.routes.unit_topics(unit=True, unit_sub=False)))

    def get_has_unit_sub_topic_list(
        self, conn: Connection, req: RemotingCommand
    ) -> RemotingCommand:
        return ok(route.encode_topic_list(self.routes.unit_topics(unit=None, unit_sub=True)))

    def get_has_unit_sub_ununit_topic_list(
        self, conn: Connection, req: RemotingCommand
    ) -> RemotingCommand:
        return ok(route.encode_topic_list(self.routes.unit_topics(unit=False, unit_sub=True)))

    # -- KV config --------------------------------------------------------------------

    async def put_kv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.PutKVConfigRequestHeader.decode(req.ext_fields)
        self.kv.put(header.namespace, header.key, header.value)
        return await ok_once_saved(
            self.kv.saver.flush, f"KV config {header.namespace}/{header.key}"
        )

    def get_kv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.KVConfigKeyRequestHeader.decode(req.ext_fields)
        value = self.kv.get(header.namespace, header.key)
        if value is None:
            return fail(
                ResponseCode.QUERY_NOT_FOUND,
                f"No config item, Namespace: {header.namespace} Key: {header.key}",
            )
        return ok(ext_fields=h.GetKVConfigResponseHeader(value).encode())

    async def delete_kv_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.KVConfigKeyRequestHeader.decode(req.ext_fields)
        self.kv.delete(header.namespace, header.key)
        return await ok_once_saved(
            self.kv.saver.flush, f"KV config {header.namespace}/{header.key}"
        )

    def get_kv_list_by_namespace(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.GetKVListByNamespaceRequestHeader.decode(req.ext_fields)
        table = self.kv.namespace(header.namespace)
        if table is None:
            return fail(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}"
            )
        return ok(route.encode_kv_table(table))

    # -- name server config -------------------------------------------------------------

    def update_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        try:
            changes = properties_file.parse_properties(bytes(req.body).decode("utf-8"))
        except UnicodeDecodeError:
            return fail(ResponseCode.SYSTEM_ERROR, "config body is not UTF-8")
        if changes.keys() & self.settings.black_listed():
            return fail(ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        fixed = sorted(k for k in changes if k.startswith("tls."))  # the listener's, at start
        if fixed:
            remark = f"config key(s) {', '.join(fixed)} cannot change at runtime: edit the "
            return fail(ResponseCode.SYSTEM_ERROR, remark + "configuration and restart")
        current = self.settings.model_dump(by_alias=True)
        unknown = sorted(k for k in changes if k not in current)
        if unknown:
            return fail(ResponseCode.SYSTEM_ERROR, f"unknown config keys: {', '.join(unknown)}")
        try:
            updated = settings_mod.NamesrvSettings.model_validate({**current, **changes})
        except ValueError as exc:
            return fail(ResponseCode.SYSTEM_ERROR, f"invalid config: {exc}")
        self.settings = updated
        self.routes.broker_expired_ms = updated.broker_channel_expired_time
        log.info("name server config updated from %s: %s", conn.remote_address, changes)
        return ok()

    def get_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        text = properties_file.format_properties(self.settings.model_dump(by_alias=True))
        return ok(text.encode())
