"""Building server settings from RocketMQ-style properties, flags and environment.

Settings are pydantic models whose aliases are RocketMQ's own property names
(``listenPort``, ``kvConfigPath``...), so existing config files work unchanged.
Unknown keys are reported, not fatal: RocketMQ ignores them too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, TypeVar

import pydantic

from rocketkube.common.properties_file import format_properties

log = logging.getLogger(__name__)

M = TypeVar("M", bound=pydantic.BaseModel)


class SettingsError(ValueError):
    """A config value does not fit its property; the message names the property."""


def build(model: type[M], *layers: Mapping[str, Any]) -> M:
    """Merge layers (later wins) keyed by RocketMQ names or field names, then validate."""
    known = {name for name in model.model_fields}
    known |= {f.alias for f in model.model_fields.values() if f.alias}
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if value is None:
                continue
            if key not in known:
                log.warning("ignoring unknown property %r", key)
                continue
            merged[_alias(model, key)] = value
    try:
        return model.model_validate(merged)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise SettingsError(f"invalid configuration: {problems}") from None


def _alias(model: type[pydantic.BaseModel], key: str) -> str:
    field = model.model_fields.get(key)
    return field.alias if field is not None and field.alias else key


def to_properties(settings: pydantic.BaseModel) -> str:
    """The settings as a properties text under their RocketMQ names; unset ones left out."""
    return format_properties(
        {k: v for k, v in settings.model_dump(by_alias=True).items() if v is not None}
    )
