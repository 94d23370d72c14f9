"""The TLS flags of the client commands (``rocketkube admin``, ``rocketkube bench``) and
their environment variables, read into one
:class:`~rocketkube.common.remoting.tls.TlsConfig`.

    flag                        environment                      what
    --tls                       ROCKETKUBE_TLS=true              connect with TLS
    --tls-ca FILE               ROCKETKUBE_TLS_CA                PEM CAs to trust (else the
                                                                 system's)
    --tls-cert FILE             ROCKETKUBE_TLS_CERT              PEM client certificate
    --tls-key FILE              ROCKETKUBE_TLS_KEY               its PEM key
    --tls-no-hostname-check     ROCKETKUBE_TLS_NO_HOSTNAME_CHECK=true
                                                                 accept a certificate that
                                                                 does not name the host

A flag wins over its variable; any of the files (or the hostname switch) implies ``--tls``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from rocketkube.common.remoting.tls import TlsConfig

__all__ = ["add_arguments", "from_args"]

_TRUE = frozenset({"1", "true", "yes", "on"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("TLS (environment: ROCKETKUBE_TLS, ROCKETKUBE_TLS_CA...)")
    group.add_argument("--tls", action="store_true", default=None, help="connect with TLS")
    group.add_argument("--tls-ca", metavar="FILE", help="PEM CA certificates to trust")
    group.add_argument("--tls-cert", metavar="FILE", help="PEM client certificate")
    group.add_argument("--tls-key", metavar="FILE", help="PEM key of --tls-cert")
    group.add_argument(
        "--tls-no-hostname-check",
        action="store_true",
        default=None,
        help="accept a server certificate that does not name the host connected to",
    )


def from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> TlsConfig | None:
    """The TLS the flags (else the environment) ask for; None: plain TCP."""
    ca = args.tls_ca or environ.get("ROCKETKUBE_TLS_CA")
    cert = args.tls_cert or environ.get("ROCKETKUBE_TLS_CERT")
    key = args.tls_key or environ.get("ROCKETKUBE_TLS_KEY")
    unchecked = _switch(args.tls_no_hostname_check, environ, "ROCKETKUBE_TLS_NO_HOSTNAME_CHECK")
    if not (_switch(args.tls, environ, "ROCKETKUBE_TLS") or ca or cert or key or unchecked):
        return None
    return TlsConfig(ca_file=ca, cert_file=cert, key_file=key, check_hostname=not unchecked)


def _switch(flag: bool | None, environ: Mapping[str, str], name: str) -> bool:
    if flag is not None:
        return flag
    return environ.get(name, "").strip().lower() in _TRUE
