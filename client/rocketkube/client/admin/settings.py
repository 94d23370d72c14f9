"""What an admin client is configured with, as one frozen value: :class:`AdminSettings`.

``AdminClient(settings=AdminSettings(namesrv_addr=addr, timeout=10.0))`` and the keyword
form ``AdminClient(addr, timeout=10.0)`` are the same client: the keyword form builds an
:class:`AdminSettings`, whose field defaults are the constructor's defaults.
``rocketkube admin`` builds its own from its flags, and the Spark source from its options.
"""

from __future__ import annotations

import dataclasses

from rocketkube.common import acl
from rocketkube.common.remoting.tls import TlsConfig

__all__ = ["AdminSettings"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class AdminSettings:
    """Every option of an :class:`~rocketkube.client.admin.client.AdminClient` (which
    refuses a ``namesrv_addr`` naming no address)."""

    namesrv_addr: str
    """Name servers, separated by ``;``."""
    timeout: float = 5.0
    """Bounds every request and each connect (seconds)."""
    tls: TlsConfig | bool | None = None
    """``True`` (the system's CAs) or a :class:`TlsConfig`: connect with TLS."""
    credentials: acl.CredentialsLike | None = None
    """``(access_key, secret_key)`` or :class:`~rocketkube.common.acl.Credentials`: sign
    every request (a broker with ``aclEnable=true``)."""
