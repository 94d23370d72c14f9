"""Build hook: build the optional compiled modules (Cython) beside their Python sources.

A compiled module is a ``_name.pyx`` next to the Python module it speeds up, whose Python
sibling serves when the compiled module is absent (``rocketkube.common.compiled``). So no
build fails for them: without Cython or a C compiler, or with
``ROCKETKUBE_NO_EXTENSIONS=1``, the distribution is pure Python and the build says so.
An editable install gets the compiled module in the source tree (where the dev-mode
directories expose it), a wheel gets it packed beside the Python modules.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: module -> (source, C libraries to link)
COMPILED_MODULES: dict[str, tuple[str, list[str]]] = {
    "rocketkube.common.remoting._frames": ("common/rocketkube/common/remoting/_frames.pyx", []),
    "rocketkube.broker.store._records": ("broker/rocketkube/broker/store/_records.pyx", ["z"]),
}


def compile_modules(root: Path) -> dict[str, Path]:
    """Compile every compiled module next to its source; their built files by module."""
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    with tempfile.TemporaryDirectory() as tmp:
        modules = cythonize(
            [
                Extension(name, [str(root / source)], libraries=libraries)
                for name, (source, libraries) in COMPILED_MODULES.items()
            ],
            build_dir=tmp,
            include_path=[str(root / "common" / "rocketkube" / "common")],  # *.pxi
            quiet=True,
            compiler_directives={"language_level": 3},
        )
        command = build_ext(Distribution({"ext_modules": modules}))
        command.build_lib = str(Path(tmp) / "lib")
        command.build_temp = str(Path(tmp) / "temp")
        command.ensure_finalized()
        command.run()
        built: dict[str, Path] = {}
        for name, (source, _) in COMPILED_MODULES.items():
            made = Path(command.get_ext_fullpath(name))
            target = (root / source).with_name(made.name)
            # A new file, then renamed: a process that has the old one loaded keeps its
            # mapping (rewriting it in place would crash that process).
            staged = target.with_name(f".{target.name}.new")
            shutil.copyfile(made, staged)
            os.replace(staged, target)
            built[name] = target
    return built


def remove_builds(root: Path) -> list[Path]:
    """Delete the compiled modules built earlier beside their sources: after a failed build an
    old one would be imported in place of the Python code it no longer matches."""
    removed: list[Path] = []
    for source, _ in COMPILED_MODULES.values():
        module = (root / source).with_suffix("")
        for built in module.parent.glob(f"{module.name}.*.so"):
            built.unlink()
            removed.append(built)
    return removed


class CompiledModulesHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        if os.environ.get("ROCKETKUBE_NO_EXTENSIONS", "") not in ("", "0"):
            remove_builds(Path(self.root))
            self.app.display_info("ROCKETKUBE_NO_EXTENSIONS is set: pure Python build")
            return
        try:
            built = compile_modules(Path(self.root))
        except Exception as exc:  # no Cython, no compiler: the pure-Python paths serve
            stale = remove_builds(Path(self.root))
            self.app.display_warning(
                f"compiled modules not built ({exc}): pure Python build"
                + (f"; removed {len(stale)} earlier builds" if stale else "")
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version != "editable":
            for name, path in built.items():
                package = name.rpartition(".")[0].replace(".", "/")
                build_data["force_include"][str(path)] = f"{package}/{path.name}"
