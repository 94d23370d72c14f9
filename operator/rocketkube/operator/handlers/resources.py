"""Reading the operator's resources as kopf hands them over, and writing back what the
handlers found: the models, their status conditions, Events.

A pass writes only the status entries that changed (:func:`status_changes`): a timer
pass over a Topic or ConsumerGroup that finds everything as it was writes nothing, but
``lastChecked`` once its recorded time is ``refresh`` seconds old, so a thousand quiet
resources cost no write per tick.

A body that the CRD's schema let through but the models refuse is a
:class:`~rocketkube.operator.specs.base.InvalidSpec`, as one the specs cannot render.
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, cast

import kopf
import pydantic

from rocketkube.operator.api import models
from rocketkube.operator.api.conditions import ConditionType, Reason
from rocketkube.operator.handlers import context
from rocketkube.operator.plans import report
from rocketkube.operator.specs import base

__all__ = [
    "LAST_CHECKED",
    "WARNING",
    "conditions_of",
    "dumped",
    "event",
    "parse",
    "report_conditions",
    "report_invalid",
    "snapshot",
    "status_changes",
]

log = logging.getLogger(__name__)

M = TypeVar("M", bound=pydantic.BaseModel)
WARNING = "Warning"
LAST_CHECKED = "lastChecked"
"""A status entry holding when a pass last looked (Kubernetes' time format)."""


def snapshot(body: kopf.Body) -> kopf.Body:
    """A copy of ``body`` that stays as it is now. kopf hands timers a live view, which
    takes each newer version of the object as the watch delivers it, even in the middle
    of a pass: a pass that read the spec of one generation must not report its findings
    as another's (``observedGeneration``), so it works on a snapshot."""
    return kopf.Body(cast(kopf.RawBody, copy.deepcopy(dict(body))))


def parse(model: type[M], body: Mapping[str, Any]) -> M:
    """The resource as its model (status left out: kopf and older versions write there)."""
    raw = {key: body[key] for key in ("apiVersion", "kind", "metadata", "spec") if key in body}
    try:
        return model.model_validate(raw)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        raise base.InvalidSpec(problems) from None


def conditions_of(body: Mapping[str, Any]) -> list[models.Condition]:
    """The conditions in the resource's status (any that do not parse are dropped)."""
    found: list[models.Condition] = []
    for raw in (body.get("status") or {}).get("conditions") or ():
        try:
            found.append(models.Condition.model_validate(raw))
        except pydantic.ValidationError:
            log.warning("dropping a condition that does not parse: %r", raw)
    return found


def report_conditions(
    body: Mapping[str, Any],
    values: Iterable[report.ConditionValue],
    *,
    now: str,
) -> list[dict[str, Any]]:
    """The resource's conditions with ``values`` set, as the status takes them."""
    generation = (body.get("metadata") or {}).get("generation")
    merged = report.apply(conditions_of(body), values, now=now, generation=generation)
    return [dumped(condition) for condition in merged]


def dumped(model: pydantic.BaseModel) -> Any:
    """A model as JSON for the API: camelCase, unset optionals left out."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def event(body: kopf.Body, reason: str, message: str, type_: str = "Normal") -> None:
    """A Kubernetes Event on the resource (posted by kopf in the background)."""
    kopf.event(body, type=type_, reason=reason, message=message)


def report_invalid(
    body: kopf.Body, patch: kopf.Patch, problem: str, *, now: str, announce: bool
) -> None:
    """The spec cannot be reconciled: Degraded with the reason (and, when ``announce``, a
    warning Event: once per change, not once per timer tick)."""
    value = report.ConditionValue(ConditionType.DEGRADED, True, Reason.INVALID_SPEC, problem)
    patch.status["conditions"] = report_conditions(body, [value], now=now)
    if announce:
        event(body, str(Reason.INVALID_SPEC), problem, WARNING)


def status_changes(
    body: Mapping[str, Any], wanted: Mapping[str, Any], *, refresh: float
) -> dict[str, Any]:
    """The entries of ``wanted`` the resource's status does not already hold, as a merge
    patch of the status. :data:`LAST_CHECKED` goes in only along with another change, or
    once the recorded time is ``refresh`` seconds older than the wanted one."""
    current = body.get("status") or {}
    out = {key: value for key, value in wanted.items()
           if key != LAST_CHECKED and current.get(key) != value}  # fmt: skip
    checked = wanted.get(LAST_CHECKED)
    if checked is not None and (
        out or _seconds_between(current.get(LAST_CHECKED), checked) >= refresh
    ):
        out[LAST_CHECKED] = checked
    return out


def _seconds_between(earlier: Any, later: str) -> float:
    """Seconds from ``earlier`` to ``later`` (infinite when ``earlier`` is not a time)."""
    try:
        start = dt.datetime.strptime(str(earlier), context.TIME_FORMAT)
        end = dt.datetime.strptime(later, context.TIME_FORMAT)
    except ValueError:
        return math.inf
    return (end - start).total_seconds()
