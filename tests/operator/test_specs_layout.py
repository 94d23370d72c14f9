"""The builders stay pure: no I/O, clock, environment or API client within reach.

Each module of ``specs/`` may import only what computes (the standard library's pure
modules, the operator's ``api`` and ``specs``, ``common``'s properties format); a new
import outside that list is a design change to make here, on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "operator" / "rocketkube" / "operator" / "specs"
ALLOWED = {
    "__future__",
    "collections.abc",
    "copy",
    "dataclasses",
    "hashlib",
    "json",
    "re",
    "typing",
    "rocketkube.common.properties_file",
    "rocketkube.operator.api",
    "rocketkube.operator.specs",
}


def imported(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            out.add(node.module or "")
    return out


def test_the_builders_import_only_what_computes() -> None:
    modules = sorted(SPECS.glob("*.py"))
    assert {m.name for m in modules} >= {"__init__.py", "base.py", "cluster.py"}
    for module in modules:
        assert imported(module) <= ALLOWED, module.name


def test_every_builder_module_says_what_it_owns() -> None:
    for module in SPECS.glob("*.py"):
        assert ast.get_docstring(ast.parse(module.read_text())), module.name
