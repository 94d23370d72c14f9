"""RocketMQ 4.x plain ACL on the broker (``aclEnable=true``; docs/protocol.md §15).

- ``permission``  perms, and what each request code needs, pure
- ``addresses``   white-listed remote address patterns, pure
- ``config``      the ``plain_acl.yml`` file, read and written
- ``validator``   :class:`Rules`: one request checked against the accounts
- ``guard``       :class:`AccessGuard`: the rules in force, reloaded when the file changes,
                  in front of the processor table
- ``admin``       the ACL admin requests (50-53)

The signature itself is shared with the SDK: :mod:`rocketkube.common.acl`.
"""

from __future__ import annotations

from rocketkube.broker.acl.config import Account, AclConfig, AclConfigError
from rocketkube.broker.acl.guard import AccessGuard
from rocketkube.broker.acl.validator import Rules

__all__ = ["AccessGuard", "Account", "AclConfig", "AclConfigError", "Rules"]
