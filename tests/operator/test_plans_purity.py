"""The plans are pure: they import no I/O, no clock and no randomness (only the standard
library's data modules and the operator's ``api``), and the package's module map lists
every module it has."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PLANS = Path(importlib.import_module("rocketkube.operator.plans").__file__ or "").parent
MODULES = sorted(path for path in PLANS.glob("*.py") if path.name != "__init__.py")
ALLOWED = {"__future__", "collections.abc", "dataclasses", "enum", "typing"}
OURS = ("rocketkube.operator.api", "rocketkube.operator.plans")


def imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(node.module or "")
    return found


@pytest.mark.parametrize("path", MODULES, ids=[path.stem for path in MODULES])
def test_a_plan_module_imports_only_data_modules_and_the_api(path: Path) -> None:
    strays = {name for name in imported(path) if name not in ALLOWED and not name.startswith(OURS)}
    assert strays == set()


def test_the_module_map_lists_every_module() -> None:
    doc = importlib.import_module("rocketkube.operator.plans").__doc__ or ""
    listed = {line.split("``")[1] for line in doc.splitlines() if line.startswith("- ``")}
    assert listed == {path.stem for path in MODULES}
