"""The options saying how the source's SDK clients connect: an ACL account and TLS.

Every client the source makes (planning's admin lookups, the executors' pulls, the writers'
producers, a stream's group commits) gets the same :class:`Security`, so a cluster with
``aclEnable=true`` or TLS is read and written like any other. Names as the SDK's arguments
(:class:`~rocketkube.common.acl.Credentials`, :class:`~rocketkube.common.remoting.tls.TlsConfig`):

======================  ==========================================================================
``accessKey``           the account of the brokers' ``plain_acl.yml`` (with ``secretKey``)
``secretKey``           its secret; never printed (``repr``), and Spark redacts it in plans
``tls``                 ``true``: connect with TLS (implied by any option below)
``tlsCaFile``           PEM CAs the servers' certificates must chain to (else the system's)
``tlsCertFile``         PEM client certificate, for servers that ask for one
``tlsKeyFile``          its PEM key (else in ``tlsCertFile``)
``tlsCheckHostname``    ``false`` accepts a server certificate that does not name the host
======================  ==========================================================================

The files are read where each client connects: on the executors too, so they must be there
at the same path (``spark-submit --files`` or a mounted secret).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Final

from rocketkube.common.acl import Credentials
from rocketkube.common.remoting.tls import TlsConfig

__all__ = ["NAMES", "PLAIN", "Security", "parse"]

#: The option names this module reads.
NAMES: Final = (
    "accessKey",
    "secretKey",
    "tls",
    "tlsCaFile",
    "tlsCertFile",
    "tlsKeyFile",
    "tlsCheckHostname",
)


@dataclasses.dataclass(frozen=True, slots=True)
class Security:
    """How to connect: signed as ``credentials`` (None: unsigned), over ``tls`` (None:
    plain TCP). Plain data, so it pickles to executors; its ``repr`` hides the secret."""

    credentials: Credentials | None = None
    tls: TlsConfig | None = None


#: Unsigned requests over plain TCP: what no option asks for.
PLAIN: Final = Security()

#: ``error(name, value, accepted)``: raises the caller's option error.
Refuse = Callable[[str, str | None, str], Exception]


def parse(known: Mapping[str, str], refuse: Refuse) -> Security:
    """The :class:`Security` of the options (keyed by their documented names)."""
    return Security(_credentials(known, refuse), _tls(known, refuse))


def _credentials(known: Mapping[str, str], refuse: Refuse) -> Credentials | None:
    access_key = known.get("accessKey", "").strip()
    secret_key = known.get("secretKey", "")
    if not access_key and not secret_key:
        return None
    if not access_key:
        raise refuse("accessKey", None, "an access key beside secretKey (they go together)")
    if not secret_key:
        raise refuse("secretKey", None, "a secret key beside accessKey (they go together)")
    return Credentials(access_key, secret_key)


def _tls(known: Mapping[str, str], refuse: Refuse) -> TlsConfig | None:
    files = {name: known.get(name, "").strip() or None for name in NAMES[3:6]}
    switch = _boolean("tls", known.get("tls"), refuse)
    check = _boolean("tlsCheckHostname", known.get("tlsCheckHostname"), refuse)
    if switch is False and (any(files.values()) or check is not None):
        raise refuse("tls", known["tls"], "true (or no tls option) beside the other tls options")
    if not (switch or any(files.values()) or check is not None):
        return None
    if files["tlsKeyFile"] and not files["tlsCertFile"]:
        raise refuse("tlsKeyFile", files["tlsKeyFile"], "a key beside tlsCertFile")
    return TlsConfig(
        ca_file=files["tlsCaFile"],
        cert_file=files["tlsCertFile"],
        key_file=files["tlsKeyFile"],
        check_hostname=check is not False,
    )


def _boolean(name: str, value: str | None, refuse: Refuse) -> bool | None:
    if value is None:
        return None
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise refuse(name, value, "true or false")
    return text == "true"
