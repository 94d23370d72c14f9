"""Whether the compiled accelerators may be used (``ROCKETKUBE_NO_EXTENSIONS``).

A hot loop may have a compiled twin (a ``_name.pyx`` beside it, built by the project's
build hook when Cython and a C compiler are there) that does the same work byte for byte.
The Python code imports the twin when :func:`wanted` and it was built, and runs its own
loop otherwise; ``ROCKETKUBE_NO_EXTENSIONS=1`` in the environment turns every twin off, as
``AIOHTTP_NO_EXTENSIONS`` does for aiohttp.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping

__all__ = ["compiled", "wanted"]

DISABLE_VARIABLE = "ROCKETKUBE_NO_EXTENSIONS"


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """False when the environment turns the compiled accelerators off."""
    return environ.get(DISABLE_VARIABLE, "") in ("", "0")


def compiled(module: str, name: str) -> object | None:
    """``name`` of the compiled ``module`` (a twin), or None: not built, or turned off.

    The caller says what it is (``typing.cast``): its stub (``_module.pyi``) types it."""
    if not wanted():
        return None
    loaded = sys.modules.get(module)  # each connection asks: no import machinery then
    if loaded is None:
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            return None
    return getattr(loaded, name)  # type: ignore[no-any-return]
