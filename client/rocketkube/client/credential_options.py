"""The ACL flags of the client commands (``rocketkube admin``, ``rocketkube bench``) and
their environment variables, read into one :class:`~rocketkube.common.acl.Credentials`.

    flag                 environment               what
    --access-key KEY     ROCKETKUBE_ACCESS_KEY     the account of the broker's plain_acl.yml
    --secret-key SECRET  ROCKETKUBE_SECRET_KEY     its secret (the variable keeps it out of
                                                   the process list)

A flag wins over its variable; neither: requests go unsigned; only one of the two is an
error.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from rocketkube.common.acl import Credentials

__all__ = ["add_arguments", "from_args"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "ACL (environment: ROCKETKUBE_ACCESS_KEY, ROCKETKUBE_SECRET_KEY)"
    )
    group.add_argument("--access-key", metavar="KEY", help="sign requests as this account")
    group.add_argument("--secret-key", metavar="SECRET", help="the account's secret key")


def from_args(args: argparse.Namespace, environ: Mapping[str, str]) -> Credentials | None:
    """The credentials the flags (else the environment) give; None: unsigned. ValueError
    when only one of the two keys is given."""
    access_key = args.access_key or environ.get("ROCKETKUBE_ACCESS_KEY")
    secret_key = args.secret_key or environ.get("ROCKETKUBE_SECRET_KEY")
    if not access_key and not secret_key:
        return None
    if not (access_key and secret_key):
        raise ValueError("an access key and a secret key go together (--access-key, --secret-key)")
    return Credentials(access_key, secret_key)
