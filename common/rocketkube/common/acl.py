"""Request signatures of RocketMQ 4.x plain ACL, shared by the broker that checks them and
the SDK that makes them (Java's ``AclClientRPCHook``, ``AclUtils``, ``SessionCredentials``).

A signed request carries, in its extFields::

    AccessKey      the account
    SecurityToken  optional; signed like any other field
    Signature      Base64(HMAC-SHA1(key = secretKey, data = content))

where the content is the values of every other extField (``Signature`` left out), in the
order of their keys as Java's ``String.compareTo`` sorts them (UTF-16 code units), joined
as one UTF-8 string, followed by the body bytes. Java clients up to 4.9.3 add
``_UNIQUE_KEY_QUERY`` after signing: the broker leaves it out of the content of requests of
those versions (:func:`request_content`). See docs/protocol.md §15.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from rocketkube.common.remoting.command import Body, RemotingCommand

__all__ = [
    "ACCESS_KEY",
    "SECURITY_TOKEN",
    "SIGNATURE",
    "Credentials",
    "CredentialsLike",
    "content",
    "credentials_of",
    "request_content",
    "sign",
    "signature",
]

ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"

#: Java clients add this flag after signing up to this version (V4_9_3).
_UNSIGNED_UNIQUE_QUERY_UP_TO = 399
_UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"


@dataclass(frozen=True, slots=True)
class Credentials:
    """An account of a broker's ``plain_acl.yml``; ``security_token``: sent and signed
    when given (RocketMQ's plain ACL does not check it)."""

    access_key: str
    secret_key: str
    security_token: str | None = None

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise ValueError("credentials need an access key and a secret key")

    def __repr__(self) -> str:  # never print the secret
        return f"Credentials(access_key={self.access_key!r})"


#: What the SDK's clients take as ``credentials``: the dataclass or ``(access_key,
#: secret_key)``.
CredentialsLike = Credentials | tuple[str, str]


def credentials_of(value: CredentialsLike | None) -> Credentials | None:
    if value is None or isinstance(value, Credentials):
        return value
    access_key, secret_key = value
    return Credentials(access_key, secret_key)


def _java_order(key: str) -> bytes:
    """A sort key ordering strings as Java's ``String.compareTo`` (UTF-16 code units)."""
    return key.encode("utf-16-be", "surrogatepass")


def content(fields: Mapping[str, str], body: Body = b"") -> bytes:
    """What is signed: the values of ``fields`` but ``Signature``, by sorted key, then
    ``body``."""
    text = "".join(fields[key] for key in sorted(fields, key=_java_order) if key != SIGNATURE)
    return text.encode("utf-8", "surrogatepass") + bytes(body)


def request_content(request: RemotingCommand) -> bytes:
    """The content the broker checks a received request's signature against."""
    fields = request.ext_fields
    if request.version <= _UNSIGNED_UNIQUE_QUERY_UP_TO and _UNIQUE_KEY_QUERY in fields:
        fields = {k: v for k, v in fields.items() if k != _UNIQUE_KEY_QUERY}
    return content(fields, request.body)


def signature(data: bytes, secret_key: str) -> str:
    """Base64 of the HMAC-SHA1 of ``data`` under ``secret_key`` (``AclUtils.calSignature``)."""
    digest = hmac.new(secret_key.encode("utf-8"), data, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def sign(request: RemotingCommand, credentials: Credentials) -> None:
    """Add ``AccessKey`` (and ``SecurityToken``) to ``request``, then its ``Signature``:
    in a dict of its own, as callers may share one extFields dict between requests."""
    fields = {k: v for k, v in request.ext_fields.items() if k != SIGNATURE}
    request.ext_fields = fields
    fields[ACCESS_KEY] = credentials.access_key
    if credentials.security_token is not None:
        fields[SECURITY_TOKEN] = credentials.security_token
    fields[SIGNATURE] = signature(content(fields, request.body), credentials.secret_key)
