"""Scale-in: a phase machine per retiring broker group (those at or past the desired
count), the phase derived each time from observed state, never remembered::

    objects gone (and claims, when deleteClaim)           DONE
    objects gone, claims left with deleteClaim            to the last two rows
    write permission or consumer lag unknown              UNKNOWN   wait
    write permission not revoked                          REVOKE_WRITE  (WIPE_WRITE_PERM)
    a consumer group has lag on it                        DRAINING  wait: ScaleDownBlocked
    a higher retiring group not DONE yet                  DRAINED   wait: highest first
    otherwise                                             REMOVE    delete the StatefulSet,
                                                          Services, ConfigMap, PDB; the
                                                          claims only with deleteClaim

Every retiring group's write permission is revoked at once, so they drain side by side;
they are removed one by one from the highest index down, so the remaining groups stay
numbered 0..n-1 at every moment. Lag counts every consumer group with offsets on the
group (retry topics included); messages of topics no group consumes are not waited for.

Why observed and not remembered: WIPE_WRITE_PERM_OF_BROKER changes the name servers'
routes only, and a master that restarts registers afresh with its topics writable, so a
drain can silently lose its revocation; the next pass sees it and revokes again.

A desired group whose write permission is revoked (a scale-in undone by scaling out again
before its removal) gets it back: :attr:`ScaleIn.restore_write`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from rocketkube.operator.api import names
from rocketkube.operator.plans import observed

__all__ = ["BLOCKING_SHOWN", "GroupState", "Phase", "ScaleIn", "Step", "plan"]

BLOCKING_SHOWN: Final = 3
"""How many of the largest lags a message names."""


@dataclass(frozen=True, slots=True)
class GroupState:
    """A broker group that exists in any form (objects or claims)."""

    group: int
    objects: bool
    """Its StatefulSet, Services, ConfigMap or PodDisruptionBudget still exist."""
    claims: int = 0
    """Its PersistentVolumeClaims."""
    write_revoked: bool | None = False
    """None: the name servers did not answer."""
    lag: Sequence[observed.Lag] | None = ()
    """Consumer lag on the group (read for retiring groups); None: unknown."""


class Phase(enum.StrEnum):
    UNKNOWN = "Unknown"
    REVOKE_WRITE = "RevokeWrite"
    DRAINING = "Draining"
    DRAINED = "Drained"
    REMOVE = "Remove"
    DONE = "Done"


@dataclass(frozen=True, slots=True)
class Step:
    group: int
    broker: str
    phase: Phase
    blocking: tuple[observed.Lag, ...] = ()
    """For DRAINING: the lag that holds the removal, largest first."""
    delete_claims: bool = False
    """For REMOVE: delete the group's claims too."""

    @property
    def blocked(self) -> bool:
        return self.phase in (Phase.DRAINING, Phase.UNKNOWN)

    @property
    def message(self) -> str:
        return f"{self.broker}: {_PHASE_TEXT[self.phase]}{self._lag()}"

    def _lag(self) -> str:
        if not self.blocking:
            return ""
        shown = "; ".join(lag.describe() for lag in self.blocking[:BLOCKING_SHOWN])
        more = len(self.blocking) - BLOCKING_SHOWN
        return f": {shown}" + (f"; and {more} more" if more > 0 else "")


_PHASE_TEXT: Final = {
    Phase.UNKNOWN: "waiting for its write permission and consumer lag to be known",
    Phase.REVOKE_WRITE: "revoking write permission",
    Phase.DRAINING: "waiting for consumers to drain it (messages left)",
    Phase.DRAINED: "drained, removed after the groups above it",
    Phase.REMOVE: "removing",
    Phase.DONE: "removed",
}


@dataclass(frozen=True, slots=True)
class ScaleIn:
    steps: tuple[Step, ...]
    """One per retiring group, highest index first."""
    restore_write: tuple[int, ...] = ()
    """Desired groups whose write permission is revoked: give it back."""

    @property
    def active(self) -> tuple[Step, ...]:
        return tuple(step for step in self.steps if step.phase is not Phase.DONE)

    @property
    def blocked(self) -> tuple[Step, ...]:
        return tuple(step for step in self.steps if step.blocked)


def plan(cluster: str, groups: int, states: Iterable[GroupState], delete_claim: bool) -> ScaleIn:
    """Scale-in towards ``groups`` broker groups, from the groups that exist."""
    ordered = sorted(states, key=lambda state: -state.group)
    steps: list[Step] = []
    for state in ordered:
        if state.group < groups:
            continue
        higher_done = all(step.phase is Phase.DONE for step in steps)
        steps.append(_step(cluster, state, delete_claim, higher_done))
    restore = tuple(
        state.group for state in reversed(ordered) if state.group < groups and state.write_revoked
    )
    return ScaleIn(tuple(steps), restore)


def _step(cluster: str, state: GroupState, delete_claim: bool, higher_done: bool) -> Step:
    broker = names.broker_name(cluster, state.group)
    claims = delete_claim and state.claims > 0
    if not state.objects and not claims:
        return Step(state.group, broker, Phase.DONE)
    if not state.objects:
        return _remove(state.group, broker, claims, higher_done)
    if state.write_revoked is None or (state.write_revoked and state.lag is None):
        return Step(state.group, broker, Phase.UNKNOWN)
    if not state.write_revoked:
        return Step(state.group, broker, Phase.REVOKE_WRITE)
    blocking = sorted(
        (lag for lag in state.lag or () if lag.messages > 0),
        key=lambda lag: (-lag.messages, lag.consumer_group, lag.topic),
    )
    if blocking:
        return Step(state.group, broker, Phase.DRAINING, tuple(blocking))
    return _remove(state.group, broker, claims, higher_done)


def _remove(group: int, broker: str, claims: bool, higher_done: bool) -> Step:
    if not higher_done:
        return Step(group, broker, Phase.DRAINED)
    return Step(group, broker, Phase.REMOVE, delete_claims=claims)
