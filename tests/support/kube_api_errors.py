"""The emulated Kubernetes API server's errors, each answered as a ``meta/v1`` ``Status``.

The real server reports every failure as a ``Status`` object whose ``reason`` and ``code``
clients dispatch on (kopf on 404/409/422/410, kubectl on the message); these builders give
the same reasons, codes and message shapes::

    ApiError                     code  reason
    ├── not_found                404   NotFound          'configmaps "x" not found'
    ├── already_exists           409   AlreadyExists     'configmaps "x" already exists'
    ├── conflict                 409   Conflict          'Operation cannot be fulfilled on ...'
    ├── invalid                  422   Invalid           'ConfigMap "x" is invalid: field: ...'
    ├── unprocessable            422   (none)            a JSON patch that cannot be applied
    ├── gone                     410   Expired           'too old resource version: 1 (9)'
    ├── bad_request              400   BadRequest
    ├── forbidden                403   Forbidden
    ├── method_not_allowed       405   MethodNotAllowed
    ├── unsupported_media_type   415   UnsupportedMediaType
    └── unauthorized             401   Unauthorized
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ApiError",
    "Cause",
    "already_exists",
    "bad_request",
    "conflict",
    "forbidden",
    "gone",
    "invalid",
    "method_not_allowed",
    "not_found",
    "unauthorized",
    "unprocessable",
    "unsupported_media_type",
]


@dataclass(frozen=True)
class Cause:
    """One field's problem in an Invalid answer (``details.causes[]``)."""

    reason: str
    message: str
    field: str

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}

    def describe(self) -> str:
        """The cause as the real server words it inside the Status message."""
        return f"{self.field}: {self.message}" if self.field else self.message


@dataclass
class ApiError(Exception):
    """A failed request; :meth:`status` is the body the server answers with."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "code": self.code,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details:
            body["details"] = self.details
        return body


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    return details


def not_found(resource: str, group: str, name: str) -> ApiError:
    message = f'{_qualified(resource, group)} "{name}" not found'
    return ApiError(404, "NotFound", message, _details(name, group, resource))


def already_exists(resource: str, group: str, name: str) -> ApiError:
    message = f'{_qualified(resource, group)} "{name}" already exists'
    return ApiError(409, "AlreadyExists", message, _details(name, group, resource))


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    message = f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}'
    return ApiError(409, "Conflict", message, _details(name, group, resource))


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> ApiError:
    what = f"{kind}.{group}" if group else kind
    described = [cause.describe() for cause in causes]
    listed = described[0] if len(described) == 1 else "[" + ", ".join(described) + "]"
    details = _details(name, group, kind)
    details["causes"] = [cause.as_dict() for cause in causes]
    return ApiError(422, "Invalid", f'{what} "{name}" is invalid: {listed}', details)


def unprocessable(message: str) -> ApiError:
    return ApiError(422, "", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def method_not_allowed(message: str = "the server does not allow this method") -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown "
        f"format - accepted media types include: {content_type}",
    )


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")
