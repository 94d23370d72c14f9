"""Typed custom headers: one frozen dataclass per request/response header.

A header class declares its fields in snake_case; the wire name is the
camelCase form unless the field's metadata names it (``wire("a")``). Fields
without a default are required (Java's ``@CFNotNull``). Values travel as strings:
ints as decimals, booleans as ``"true"``/``"false"`` and are parsed the way
Java parses them (``Boolean.parseBoolean``: anything but "true" is false; an
integer must fit a Java ``long``, as ``Long.parseLong`` wants).

    @dataclass(frozen=True, slots=True)
    class GetRouteInfoRequestHeader(CommandHeader):
        topic: str
        accept_standard_json_only: bool | None = None

    header = GetRouteInfoRequestHeader.decode(cmd.ext_fields)
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

from rocketkube.common import errors


def wire(name: str) -> dict[str, str]:
    """Field metadata giving the wire name explicitly."""
    return {"wire": name}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _parse_bool(text: str) -> bool:
    return text.lower() == "true"


def _parse_long(text: str) -> int:
    """An integer within Java's ``long``; ValueError for any other text."""
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"{text} is out of range")
    return value


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldSpec:
    attr: str
    wire: str
    parse: Callable[[str], Any]
    required: bool


def _parser_for(annotation: Any) -> Callable[[str], Any]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"unsupported header field type {annotation!r}")
        annotation = inner[0]
    if annotation is bool:
        return _parse_bool
    if annotation is int:
        return _parse_long
    if annotation is str:
        return str
    raise TypeError(f"unsupported header field type {annotation!r}")


class CommandHeader:
    """Base of typed headers; subclasses are frozen dataclasses."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @classmethod
    @functools.cache
    def _specs(cls) -> tuple[_FieldSpec, ...]:
        hints = typing.get_type_hints(cls)
        specs = []
        for f in dataclasses.fields(cls):
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            specs.append(
                _FieldSpec(
                    attr=f.name,
                    wire=f.metadata.get("wire", _camel(f.name)),
                    parse=_parser_for(hints[f.name]),
                    required=required,
                )
            )
        return tuple(specs)

    @classmethod
    def decode(cls, ext: Mapping[str, str]) -> Self:
        """Build the header from a command's extFields; HeaderError names a bad field."""
        values: dict[str, Any] = {}
        for spec in cls._specs():
            text = ext.get(spec.wire)
            if text is None:
                if spec.required:
                    raise errors.HeaderError(f"the custom field <{spec.wire}> is null")
                continue
            try:
                values[spec.attr] = spec.parse(text)
            except ValueError:
                raise errors.HeaderError(
                    f"the custom field <{spec.wire}> has an invalid value {text!r}"
                ) from None
        return cls(**values)

    def encode(self) -> dict[str, str]:
        """The header as extFields: every value a string, None fields omitted."""
        out: dict[str, str] = {}
        for spec in self._specs():
            value = getattr(self, spec.attr)
            if value is not None:
                out[spec.wire] = _format(value)
        return out
