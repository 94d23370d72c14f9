"""Checking one request against the accounts (RocketMQ 4.9's
``PlainPermissionManager.validate``), in RocketMQ's order:

1. the remote host matches a global white address: allowed;
2. no ``AccessKey``, or one no account has: refused;
3. the host matches the account's white address: allowed;
4. the ``Signature`` is not the one the account's secret gives: refused;
5. an admin request from an account that is not admin: refused;
6. each resource the request needs (:func:`~rocketkube.broker.acl.permission.needs`)
   checked against the account's perm for it, else its default topic or group perm.

A refusal is the remark of the NO_PERMISSION answer, in RocketMQ's words with the
permission that was missing added.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from rocketkube.broker.acl import addresses, permission
from rocketkube.broker.acl.config import Account, AclConfig, resource_perms
from rocketkube.broker.acl.permission import Perm
from rocketkube.common import acl
from rocketkube.common.remoting.command import RemotingCommand

__all__ = ["Rules"]


@dataclass(frozen=True, slots=True)
class _Owned:
    """What one account may do, ready for checking."""

    account: Account
    white: addresses.AddressMatcher
    perms: Mapping[str, Perm]
    default_topic: Perm
    default_group: Perm

    @classmethod
    def of(cls, account: Account) -> _Owned:
        perms = resource_perms(account.topic_perms, "topic")
        groups = resource_perms(account.group_perms, "group")
        perms.update((permission.group_resource(name), perm) for name, perm in groups.items())
        return cls(
            account=account,
            white=addresses.matcher(account.white_remote_address),
            perms=perms,
            default_topic=permission.parse_perm(account.default_topic_perm),
            default_group=permission.parse_perm(account.default_group_perm),
        )


class Rules:
    """A config compiled for checking requests; immutable (a reload makes new rules)."""

    def __init__(self, config: AclConfig) -> None:
        self.config = config
        self._global = [addresses.matcher(p) for p in config.global_white_remote_addresses]
        self._owned = {a.access_key: _Owned.of(a) for a in config.accounts}

    def refusal(self, host: str, request: RemotingCommand) -> str | None:
        """Why ``request`` from ``host`` (no port) is refused, or None when allowed."""
        if any(white(host) for white in self._global):
            return None
        fields = request.ext_fields
        access_key = fields.get(acl.ACCESS_KEY)
        if not access_key:
            return "No accessKey is configured"
        owned = self._owned.get(access_key)
        if owned is None:
            return f"No acl config for {access_key}"
        if owned.white(host):
            return None
        expected = acl.signature(acl.request_content(request), owned.account.secret_key)
        if not hmac.compare_digest(expected, fields.get(acl.SIGNATURE) or ""):
            return f"Check signature failed for accessKey={access_key}"
        if request.code in permission.ADMIN_CODES and not owned.account.admin:
            return (
                f"Need admin permission for request code={request.code}, "
                f"but accessKey={access_key} is not"
            )
        if owned.account.admin and not owned.perms:
            return None  # an admin with no perms listed may do anything, as in RocketMQ
        try:
            needed = permission.needs(request)
        except (ValueError, KeyError, TypeError) as exc:
            return f"Cannot tell what request code={request.code} needs: {exc}"
        return _missing(owned, needed)


def _missing(owned: _Owned, needed: Mapping[str, Perm]) -> str | None:
    for resource, perm in needed.items():
        granted = owned.perms.get(resource)
        if granted is None:
            group = permission.is_group(resource)
            granted = owned.default_group if group else owned.default_topic
            words = "No default permission"
        else:
            words = "No permission"
        if not permission.check_permission(perm, granted):
            return (
                f"{words} for {permission.resource_name(resource)}: "
                f"{permission.perm_name(perm)} needed, accessKey={owned.account.access_key} "
                f"has {permission.perm_name(granted) or 'none'}"
            )
    return None
