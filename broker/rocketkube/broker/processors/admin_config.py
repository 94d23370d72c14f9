"""Admin requests, part three: the broker's configuration.

- GET_BROKER_CONFIG (26): every setting as a properties text under RocketMQ's names;
  header ``version`` is the configuration's DataVersion as JSON.
- UPDATE_BROKER_CONFIG (25): a properties text of changes, validated as a whole with the
  current settings. Settings fixed at start (identity, addresses and ports, store
  layout, tasks scheduled at start) are refused, so an update never claims an effect it
  cannot have. Applied by replacing ``ctx.settings`` (plus the copies the topic and group
  managers hold, and ``ctx.permission`` for ``brokerPermission``), in memory only.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pydantic

from rocketkube.broker.context import BrokerContext
from rocketkube.broker.settings import BrokerSettings
from rocketkube.broker.store import StoreConfig
from rocketkube.common import fastjson, properties_file
from rocketkube.common.protocol import admin_headers as h
from rocketkube.common.protocol.topic_config import DataVersion
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["FIXED_AT_START", "BrokerConfigProcessors", "properties_text", "table"]

log = logging.getLogger(__name__)

_FIELDS = BrokerSettings.model_fields
_ALIAS = {name: f.alias or name for name, f in _FIELDS.items()}
_FIELD_OF = {**{name: name for name in _FIELDS}, **{alias: name for name, alias in _ALIAS.items()}}

#: Settings (field names) read once at start: changing them needs a restart.
_FIXED_NAMES = (
    # identity and role
    "broker_cluster_name broker_name broker_id broker_role "
    # addresses, ports, the server and registration built from them
    "listen_port bind_address broker_ip1 broker_ip2 ha_listen_port http_port "
    "server_channel_max_idle_time_seconds namesrv_addr register_name_server_period "
    "register_broker_timeout_mills "
    # replication, set up at start
    "ha_master_address ha_send_heartbeat_interval ha_housekeeping_interval "
    "ha_transfer_batch_size ha_slave_fallbehind_max slave_timeout "
    # system topics created at start, periodic tasks scheduled at start
    "cluster_topic_enable broker_topic_enable channel_expired_timeout "
    "flush_consumer_offset_interval "
    # TLS: the listeners and outbound connections are set up at start
    "tls_server_mode tls_server_cert_path tls_server_key_path tls_server_trust_cert_path "
    "tls_server_need_client_auth tls_enable tls_client_cert_path tls_client_key_path "
    "tls_client_trust_cert_path tls_client_auth_server "
    # ACL: the guard is put in front of the processors at start
    "acl_enable acl_plain_file"
)
FIXED_AT_START = frozenset(_FIXED_NAMES.split()) | {
    # the message store's configuration is frozen when the store opens
    f.name
    for f in dataclasses.fields(StoreConfig)
    if f.name in _FIELDS
}


def properties_text(settings: BrokerSettings) -> str:
    """The settings as properties under RocketMQ names; unset (None) values are left out,
    as Java's ``properties2String`` does, so the text can be sent back as an update."""
    values = settings.model_dump(by_alias=True)
    return properties_file.format_properties({k: v for k, v in values.items() if v is not None})


def _validation_problems(exc: pydantic.ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
    )


def _fail(remark: str) -> RemotingCommand:
    return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, remark)


class BrokerConfigProcessors:
    def __init__(self, ctx: BrokerContext) -> None:
        self.ctx = ctx
        self.data_version = DataVersion(ctx.clock(), 0)

    def table(self) -> dict[int, Processor]:
        return {
            RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
        }

    def get_broker_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        header = h.GetBrokerConfigResponseHeader(
            fastjson.dumps(self.data_version.to_json()).decode()
        )
        return RemotingCommand.response(
            ResponseCode.SUCCESS, None, header.encode(), properties_text(self.ctx.settings).encode()
        )

    def update_broker_config(self, conn: Connection, req: RemotingCommand) -> RemotingCommand:
        try:
            text = bytes(req.body).decode("utf-8")
        except UnicodeDecodeError as exc:
            return _fail(f"broker config update is not UTF-8: {exc}")
        raw = properties_file.parse_properties(text)
        if not raw:
            return RemotingCommand.response()
        unknown = sorted(k for k in raw if k not in _FIELD_OF)
        if unknown:
            return _fail(f"unknown broker config key(s): {', '.join(unknown)}")
        changes: dict[str, Any] = {}
        for key, value in raw.items():
            name = _FIELD_OF[key]
            # "key=" clears an optional setting
            changes[_ALIAS[name]] = None if value == "" and _FIELDS[name].default is None else value
        old = self.ctx.settings
        try:
            new = BrokerSettings.model_validate({**old.model_dump(by_alias=True), **changes})
        except pydantic.ValidationError as exc:
            return _fail(f"invalid broker config: {_validation_problems(exc)}")
        changed = sorted(
            name
            for name in {_FIELD_OF[k] for k in changes}
            if getattr(new, name) != getattr(old, name)
        )
        fixed = [_ALIAS[name] for name in changed if name in FIXED_AT_START]
        if fixed:
            return _fail(
                f"broker config key(s) {', '.join(fixed)} cannot change at runtime: "
                "edit the broker's configuration and restart it"
            )
        if changed:
            self._apply(new, changed)
            log.info("broker config updated by %s: %s", conn.remote_address,
                     ", ".join(f"{_ALIAS[n]}={getattr(new, n)}" for n in changed))  # fmt: skip
        return RemotingCommand.response()

    def _apply(self, new: BrokerSettings, changed: list[str]) -> None:
        ctx = self.ctx
        ctx.settings = new
        ctx.topics.settings = new
        ctx.groups.auto_create = new.auto_create_subscription_group
        self.data_version = self.data_version.next(ctx.clock())
        if "broker_permission" in changed:
            ctx.permission = new.broker_permission
            # A new topic data version makes the name servers take the new permission.
            ctx.topics.data_version = ctx.topics.data_version.next(ctx.clock())
            if ctx.topics.on_change is not None:
                ctx.topics.on_change()


def table(ctx: BrokerContext) -> dict[int, Processor]:
    return BrokerConfigProcessors(ctx).table()
