"""The ACL admin requests (RocketMQ 4.9's ``AdminBrokerProcessor`` ACL part), served when
``aclEnable=true``; an admin account's only (:data:`~rocketkube.broker.acl.permission.ADMIN_CODES`).

- UPDATE_AND_CREATE_ACL_CONFIG (50): header ``accessKey`` and any of ``secretKey``,
  ``whiteRemoteAddress``, ``admin``, ``defaultTopicPerm``, ``defaultGroupPerm``,
  ``topicPerms``, ``groupPerms`` (the last two comma-separated ``name=PERM``): creates
  the account, or changes the given fields of an existing one. Refused: 209.
- DELETE_ACL_CONFIG (51): header ``accessKey``. Refused: 210.
- UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): header ``globalWhiteAddrs``, comma-separated:
  the new global white list. Refused: 211.
- GET_BROKER_CLUSTER_ACL_INFO (52): header ``version`` (a DataVersion as JSON, its counter
  the number of rules taken into force), ``allAclFileVersion`` (the file's path -> that
  version), ``brokerName``, ``brokerAddr``, ``clusterName``.

Every change is written to the ACL file (RocketMQ rewrites ``plain_acl.yml`` too; comments
are lost) and is in force once answered.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping

from rocketkube.broker.acl.config import Account, AclConfig, AclConfigError
from rocketkube.broker.acl.guard import AccessGuard
from rocketkube.common.remoting.codes import RequestCode, ResponseCode
from rocketkube.common.remoting.command import RemotingCommand
from rocketkube.common.remoting.connection import Connection, Reply
from rocketkube.common.remoting.dispatch import Processor

__all__ = ["BrokerIdentity", "table"]

Change = Callable[[AclConfig], AclConfig]


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerIdentity:
    """What GET_BROKER_CLUSTER_ACL_INFO names besides the version."""

    broker_name: str
    broker_addr: str
    cluster_name: str


def table(guard: AccessGuard, identity: BrokerIdentity) -> dict[int, Processor]:
    def changing(parse: Callable[[Mapping[str, str]], Change], failed: int) -> Processor:
        def processor(conn: Connection, req: RemotingCommand) -> Reply:
            try:
                change = parse(req.ext_fields)
            except AclConfigError as exc:
                return RemotingCommand.response(failed, str(exc))
            return _apply(guard, change, failed)

        return processor

    def info(conn: Connection, req: RemotingCommand) -> Reply:
        version = json.dumps({"counter": guard.version, "timestamp": int(time.time() * 1000)})
        header = {
            "version": version,
            "allAclFileVersion": json.dumps({str(guard.path): json.loads(version)}),
            "brokerName": identity.broker_name,
            "brokerAddr": identity.broker_addr,
            "clusterName": identity.cluster_name,
        }
        return RemotingCommand.response(ResponseCode.SUCCESS, ext_fields=header)

    return {
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: changing(
            _account_change, ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        ),
        RequestCode.DELETE_ACL_CONFIG: changing(
            _delete_change, ResponseCode.DELETE_ACL_CONFIG_FAILED
        ),
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: changing(
            _white_change, ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        ),
        RequestCode.GET_BROKER_CLUSTER_ACL_INFO: info,
    }


async def _apply(guard: AccessGuard, change: Change, failed: int) -> RemotingCommand:
    try:
        await guard.update(change)
    except (AclConfigError, OSError) as exc:
        return RemotingCommand.response(failed, str(exc))
    return RemotingCommand.response(ResponseCode.SUCCESS)


def _access_key(fields: Mapping[str, str]) -> str:
    access_key = (fields.get("accessKey") or "").strip()
    if not access_key:
        raise AclConfigError("accessKey is required")
    return access_key


def _list(text: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())


def _account_change(fields: Mapping[str, str]) -> Change:
    access_key = _access_key(fields)
    given = {
        name: fields[key]
        for key, name in (
            ("secretKey", "secret_key"),
            ("whiteRemoteAddress", "white_remote_address"),
            ("defaultTopicPerm", "default_topic_perm"),
            ("defaultGroupPerm", "default_group_perm"),
        )
        if fields.get(key) is not None
    }
    updates: dict[str, object] = dict(given)
    if fields.get("admin") is not None:
        updates["admin"] = fields["admin"].strip().lower() == "true"
    for key, name in (("topicPerms", "topic_perms"), ("groupPerms", "group_perms")):
        if fields.get(key) is not None:
            updates[name] = _list(fields[key])

    def change(config: AclConfig) -> AclConfig:
        current = next((a for a in config.accounts if a.access_key == access_key), None)
        if current is None:
            if "secret_key" not in updates:
                raise AclConfigError(f"a new account needs a secretKey: {access_key}")
            account = Account(access_key, **updates)  # type: ignore[arg-type]
        else:
            account = dataclasses.replace(current, **updates)  # type: ignore[arg-type]
        return config.with_account(account)

    return change


def _delete_change(fields: Mapping[str, str]) -> Change:
    access_key = _access_key(fields)
    return lambda config: config.without_account(access_key)


def _white_change(fields: Mapping[str, str]) -> Change:
    addresses = _list(fields.get("globalWhiteAddrs"))
    return lambda config: dataclasses.replace(config, global_white_remote_addresses=addresses)
