"""The container image's inputs, as tests without a Docker engine can check them: its
``Dockerfile`` parsed, its build context as ``.dockerignore`` cuts it, the wheel its builder
stage makes from that context, and that wheel installed into a fresh virtual environment.

- :func:`dockerfile` parses the Dockerfile (PyPI ``dockerfile-parse``) into
  :class:`Stage` objects: each stage's base, instructions and arguments.
- :func:`context_files` lists what ``docker build .`` would send: every file of the
  checkout that ``.dockerignore`` admits, with Docker's rules (patterns in order, the last
  match wins, ``!`` admits again, ``**`` spans folders, a folder matched covers its files).
- :func:`build_wheel` copies that context to a folder and builds the wheel from it, as the
  builder stage's ``pip wheel`` does; :func:`install` puts it in a fresh venv with its
  extras. Both use ``uv`` offline: the dependencies come from the cache ``make install``
  filled, so nothing is downloaded and the cost stays a wheel build and a link-install.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dockerfile_parse import DockerfileParser

__all__ = [
    "CHECKOUT",
    "IgnorePattern",
    "Instruction",
    "Stage",
    "build_wheel",
    "context_files",
    "dockerfile",
    "ignore_patterns",
    "ignored",
    "install",
    "uv",
]

CHECKOUT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Instruction:
    """One instruction: ``RUN``, ``COPY``... and its value with ``ARG`` defaults expanded."""

    name: str
    value: str


@dataclass
class Stage:
    """One ``FROM`` and what follows it, up to the next."""

    base: str
    alias: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def values(self, name: str) -> list[str]:
        """The values of every instruction called ``name`` in this stage, in order."""
        return [i.value for i in self.instructions if i.name == name]


def dockerfile(path: Path = CHECKOUT / "Dockerfile") -> list[Stage]:
    """The Dockerfile's stages, ``ARG`` defaults (global and per stage) expanded."""
    parser = DockerfileParser(str(path))
    stages: list[Stage] = []
    args: dict[str, str] = {}
    for item in parser.structure:
        name, value = item["instruction"], _expand(item["value"], args)
        if name == "ARG":
            key, _, default = value.partition("=")
            if default or key not in args:
                args[key] = default
        if name == "FROM":
            base, _, alias = value.partition(" AS ")
            stages.append(Stage(base=base.strip(), alias=alias.strip() or None))
        elif name != "COMMENT" and stages:
            stages[-1].instructions.append(Instruction(name, value))
    return stages


def _expand(value: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), value)


@dataclass(frozen=True)
class IgnorePattern:
    """One line of ``.dockerignore``: the pattern, and whether ``!`` made it admit."""

    text: str
    admits: bool

    def matches(self, relative: str) -> bool:
        """Whether it names ``relative`` or a folder holding it."""
        parts = relative.split("/")
        regex = _regex(self.text)
        return any(re.match(regex, "/".join(parts[: n + 1])) for n in range(len(parts)))


def ignore_patterns(path: Path = CHECKOUT / ".dockerignore") -> list[IgnorePattern]:
    """``.dockerignore``'s patterns, in order."""
    patterns: list[IgnorePattern] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            admits = line.startswith("!")
            patterns.append(IgnorePattern(line.lstrip("!").strip().strip("/"), admits))
    return patterns


def _regex(pattern: str) -> str:
    parts = re.split(r"(\*\*/|\*\*|\*|\?)", pattern)
    wild = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}
    return "".join(wild.get(part, re.escape(part)) for part in parts) + r"\Z"


def ignored(relative: str, patterns: list[IgnorePattern]) -> bool:
    """Whether Docker leaves ``relative`` (a path in the context) out: the last pattern
    that names it or a folder holding it decides."""
    out = False
    for pattern in patterns:
        if pattern.matches(relative):
            out = not pattern.admits
    return out


def context_files(root: Path = CHECKOUT) -> Iterator[str]:
    """The files (relative paths) ``docker build`` sends from ``root``."""
    patterns = ignore_patterns(root / ".dockerignore")

    def walked(folder: str) -> bool:
        """Not left out, or a later pattern may admit something inside."""
        inside = (p.text.startswith(f"{folder}/") for p in patterns if p.admits)
        return not ignored(folder, patterns) or any(inside)

    for here, dirs, files in os.walk(root):
        relative = Path(here).relative_to(root).as_posix()
        prefix = "" if relative == "." else f"{relative}/"
        dirs[:] = [d for d in dirs if walked(prefix + d)]
        yield from (prefix + f for f in files if not ignored(prefix + f, patterns))


def uv() -> str | None:
    """The ``uv`` that ``make install`` put beside this interpreter, or one on PATH."""
    beside = Path(sys.executable).with_name("uv")
    return str(beside) if beside.exists() else shutil.which("uv")


def build_wheel(uv_path: str, context: Path, out: Path) -> Path:
    """Copy the build context to ``context``, build the wheel there into ``out``."""
    for relative in context_files():
        target = context / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CHECKOUT / relative, target)
    _run(uv_path, "build", "--wheel", "--offline", "--python", sys.executable,
         "--out-dir", str(out), str(context))  # fmt: skip
    (wheel,) = out.glob("rocketkube-*.whl")
    return wheel


def install(uv_path: str, wheel: Path, venv: Path, extras: str) -> Path:
    """A fresh venv at ``venv`` with ``wheel[extras]`` and its dependencies; its bin/."""
    _run(uv_path, "venv", "--quiet", "--python", sys.executable, str(venv))
    _run(uv_path, "pip", "install", "--quiet", "--offline", "--python",
         str(venv / "bin" / "python"), f"{wheel}[{extras}]")  # fmt: skip
    return venv / "bin"


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
