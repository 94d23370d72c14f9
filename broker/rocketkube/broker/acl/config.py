"""``plain_acl.yml``: RocketMQ 4.x's plain ACL file, read and written (Java's
``PlainAccessConfig`` and the YAML ``PlainPermissionManager`` loads)::

    globalWhiteRemoteAddresses:        # these hosts need no signature at all
      - 10.10.103.*
    accounts:
      - accessKey: RocketMQ            # 6 characters or more, as RocketMQ requires
        secretKey: 12345678
        whiteRemoteAddress:            # this account's hosts need no signature
        admin: false                   # UPDATE_AND_CREATE_TOPIC and the other admin codes
        defaultTopicPerm: DENY         # topics not listed below (absent: DENY)
        defaultGroupPerm: SUB          # groups not listed below (absent: DENY)
        topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB]
        groupPerms: [groupA=DENY, groupB=PUB|SUB]

Reading checks everything the broker will rely on (keys, perms, address patterns) and
raises :class:`AclConfigError` naming the fault, so a bad edit is refused as a whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from rocketkube.broker.acl import addresses
from rocketkube.broker.acl.permission import Perm, parse_perm

__all__ = ["Account", "AclConfig", "AclConfigError", "dump", "load", "parse", "resource_perms"]

#: RocketMQ refuses shorter access and secret keys.
MIN_KEY_LENGTH: Final = 6


class AclConfigError(ValueError):
    """The ACL file (or an ACL admin request) says something the broker cannot use."""


@dataclass(frozen=True, slots=True)
class Account:
    """One entry of ``accounts``, as written (perms as their strings)."""

    access_key: str
    secret_key: str
    white_remote_address: str = ""
    admin: bool = False
    default_topic_perm: str = "DENY"
    default_group_perm: str = "DENY"
    topic_perms: tuple[str, ...] = ()
    group_perms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, key in (("accessKey", self.access_key), ("secretKey", self.secret_key)):
            if len(key) < MIN_KEY_LENGTH:
                raise AclConfigError(
                    f"The {name} of account {self.access_key!r} cannot be null and its "
                    f"length should be at least {MIN_KEY_LENGTH}"
                )
        _check_pattern(self.white_remote_address)
        resource_perms(self.topic_perms, "topic")
        resource_perms(self.group_perms, "group")

    def __repr__(self) -> str:  # never print the secret
        return f"Account(access_key={self.access_key!r}, admin={self.admin})"

    def to_yaml(self) -> dict[str, Any]:
        return {
            "accessKey": self.access_key,
            "secretKey": self.secret_key,
            "whiteRemoteAddress": self.white_remote_address or None,
            "admin": self.admin,
            "defaultTopicPerm": self.default_topic_perm,
            "defaultGroupPerm": self.default_group_perm,
            "topicPerms": list(self.topic_perms),
            "groupPerms": list(self.group_perms),
        }


@dataclass(frozen=True, slots=True)
class AclConfig:
    global_white_remote_addresses: tuple[str, ...] = ()
    accounts: tuple[Account, ...] = ()

    def __post_init__(self) -> None:
        for pattern in self.global_white_remote_addresses:
            _check_pattern(pattern)
        seen: set[str] = set()
        for account in self.accounts:
            if account.access_key in seen:
                raise AclConfigError(f"accessKey {account.access_key!r} is listed twice")
            seen.add(account.access_key)

    def with_account(self, account: Account) -> AclConfig:
        """This config with ``account`` added, or replacing the one of its access key."""
        others = tuple(a for a in self.accounts if a.access_key != account.access_key)
        return dataclasses.replace(self, accounts=(*others, account))

    def without_account(self, access_key: str) -> AclConfig:
        if all(a.access_key != access_key for a in self.accounts):
            raise AclConfigError(f"No acl config for {access_key}")
        kept = tuple(a for a in self.accounts if a.access_key != access_key)
        return dataclasses.replace(self, accounts=kept)


def _check_pattern(pattern: str) -> None:
    try:
        addresses.matcher(pattern)
    except addresses.AddressPatternError as exc:
        raise AclConfigError(str(exc)) from None


def resource_perms(entries: Sequence[str], kind: str) -> dict[str, Perm]:
    """``["topicA=PUB", ...]`` -> ``{"topicA": PUB}``; ``kind`` names the entries in the
    error (``Permission.parseResourcePerms``)."""
    out: dict[str, Perm] = {}
    for entry in entries:
        name, sep, perm = entry.partition("=")
        if not sep or not name.strip() or not perm.strip() or "=" in perm:
            raise AclConfigError(f"Parse resource permission failed for {kind}:{entry}")
        out[name.strip()] = parse_perm(perm)
    return out


def parse(data: object) -> AclConfig:
    """The config of a parsed YAML document."""
    if not isinstance(data, Mapping) or not data:
        raise AclConfigError("the ACL file holds no data")
    accounts = data.get("accounts") or []
    if not isinstance(accounts, list):
        raise AclConfigError("accounts must be a list")
    return AclConfig(
        global_white_remote_addresses=_strings(data.get("globalWhiteRemoteAddresses")),
        accounts=tuple(_account(entry) for entry in accounts),
    )


def load(path: Path) -> AclConfig:
    """Read ``path``; AclConfigError (or OSError) when it cannot be used."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise AclConfigError(f"{path} is not YAML: {exc}") from None
    try:
        return parse(data)
    except AclConfigError as exc:
        raise AclConfigError(f"{path}: {exc}") from None


def dump(config: AclConfig) -> bytes:
    document = {
        "globalWhiteRemoteAddresses": list(config.global_white_remote_addresses),
        "accounts": [account.to_yaml() for account in config.accounts],
    }
    return yaml.safe_dump(document, sort_keys=False).encode("utf-8")


def _account(entry: object) -> Account:
    if not isinstance(entry, Mapping):
        raise AclConfigError(f"an account must be a mapping, not {entry!r}")
    return Account(
        access_key=_text(entry.get("accessKey")),
        secret_key=_text(entry.get("secretKey")),
        white_remote_address=_text(entry.get("whiteRemoteAddress")),
        admin=_flag(entry.get("admin")),
        default_topic_perm=_text(entry.get("defaultTopicPerm")) or "DENY",
        default_group_perm=_text(entry.get("defaultGroupPerm")) or "DENY",
        topic_perms=_strings(entry.get("topicPerms")),
        group_perms=_strings(entry.get("groupPerms")),
    )


def _text(value: object) -> str:
    """A YAML scalar as its text (``secretKey: 12345678`` is an int to YAML)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value).strip()
    raise AclConfigError(f"expected a single value, got {value!r}")


def _flag(value: object) -> bool:
    return value is True or _text(value).lower() == "true"


def _strings(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise AclConfigError(f"expected a list, got {value!r}")
    return tuple(text for text in map(_text, value) if text)
