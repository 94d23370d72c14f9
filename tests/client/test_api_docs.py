"""The public SDK is documented: every exported class and function, and every public method
and property of the exported classes, has a docstring (the API reference is built from them).
"""

from __future__ import annotations

import inspect

import rocketkube.client
import rocketkube.client.sync

MODULES = [rocketkube.client, rocketkube.client.sync]


def _undocumented() -> list[str]:
    missing: list[str] = []
    for module in MODULES:
        if not inspect.getdoc(module):
            missing.append(module.__name__)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if not obj.__doc__:
                missing.append(f"{module.__name__}.{name}")
            if not inspect.isclass(obj) or issubclass(obj, BaseException):
                continue
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                target = member.fget if isinstance(member, property) else member
                documentable = callable(target) or isinstance(member, property)
                if documentable and not getattr(target, "__doc__", None):
                    missing.append(f"{module.__name__}.{name}.{attr}")
    return missing


def test_public_api_has_docstrings() -> None:
    assert _undocumented() == []
