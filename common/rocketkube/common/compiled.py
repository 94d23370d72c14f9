"""Whether compiled modules may be used (``ROCKETKUBE_NO_EXTENSIONS``), and loading them.

A compiled module (a ``_name.pyx`` beside the Python module it speeds up, built by the
project's build hook when Cython and a C compiler are there) does what its Python sibling
does, byte for byte and error for error. The Python code takes what :func:`load` gives
and runs the Python sibling when it gives None; ``ROCKETKUBE_NO_EXTENSIONS=1`` in the
environment turns every compiled module off, as ``AIOHTTP_NO_EXTENSIONS`` does for
aiohttp.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping

__all__ = ["enabled", "load"]

DISABLE_VARIABLE = "ROCKETKUBE_NO_EXTENSIONS"


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """False when the environment turns the compiled modules off."""
    return environ.get(DISABLE_VARIABLE, "") in ("", "0")


def load(module: str, name: str) -> object | None:
    """``name`` of the compiled ``module``, or None: not built, or turned off.

    The caller says what it is (``typing.cast``): its stub (``_module.pyi``) types it."""
    if not enabled():
        return None
    loaded = sys.modules.get(module)  # each connection asks: no import machinery then
    if loaded is None:
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            return None
    return getattr(loaded, name)  # type: ignore[no-any-return]
