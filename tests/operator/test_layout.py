"""The operator's source root must never shadow the standard library's ``operator``."""

from __future__ import annotations

import importlib
import operator
import sys
from pathlib import Path


def test_operator_is_the_standard_librarys() -> None:
    assert hasattr(operator, "itemgetter")
    stdlib = sys.modules["os"].__file__
    assert operator.__file__ is not None
    assert stdlib is not None
    assert Path(operator.__file__).parent == Path(stdlib).parent


def test_the_operator_package_is_ours() -> None:
    ours = importlib.import_module("rocketkube.operator")
    assert ours.__file__ is not None
    assert Path(ours.__file__).parts[-4:] == ("operator", "rocketkube", "operator", "__init__.py")


def test_no_init_module_shadows_a_source_root() -> None:
    root = Path(__file__).resolve().parents[2]
    for source_root in ("common", "namesrv", "broker", "client", "bench", "operator"):
        assert not (root / source_root / "__init__.py").exists()
        assert not (root / source_root / "rocketkube" / "__init__.py").exists()
    assert not list((root / "tests").rglob("__init__.py"))
