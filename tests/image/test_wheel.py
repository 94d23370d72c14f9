"""The wheel the image installs, built as its builder stage builds it (from the context
``.dockerignore`` admits) and installed as its final stage installs it (with the operator's
extra, into an empty venv): every entry point, every compiled module, every file of
the packages; the installed commands run; and a server started from that install as PID 1
of its own PID namespace, on a read-only install and working directory with HOME and TMPDIR
as the image sets them (volumes), serves, writes only there, and stops cleanly on SIGTERM.

One wheel build and one venv for the module (offline: ``image_build``).
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import tomllib
import zipfile
from pathlib import Path

import image_build
import pytest
from ports import free_port

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("image")]

CHECKOUT = image_build.CHECKOUT
PYPROJECT = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
PACKAGES: list[str] = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
START_SECONDS = 60.0
"""How long a server may take to listen (it needs well under a second)."""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uv = image_build.uv()
    if uv is None:
        pytest.skip("no uv (make install puts it in .venv)")
    root = tmp_path_factory.mktemp("image")
    return image_build.build_wheel(uv, root / "context", root / "dist")


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ folder of a fresh venv holding ``wheel[operator]``, as the image's."""
    uv = image_build.uv()
    assert uv is not None
    return image_build.install(uv, wheel, tmp_path_factory.mktemp("venv") / "venv", "operator")


def members(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def tracked(*paths: str) -> list[str]:
    done = subprocess.run(["git", "ls-files", *paths], cwd=CHECKOUT, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return done.stdout.split()


def in_wheel(source: str) -> str:
    """Where a file of a source root lands in the wheel: ``common/rocketkube/x`` is
    ``rocketkube/x``."""
    return source.split("/", 1)[1]


def outside_env() -> dict[str, str]:
    """This environment less what points Python at the test venv."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def run(installed: Path, *argv: str) -> str:
    done = subprocess.run([str(installed / argv[0]), *argv[1:]], capture_output=True,
                          text=True, check=False, env=outside_env())  # fmt: skip
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr}"
    return done.stdout


def test_the_wheel_holds_every_entry_point(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"rocketkube-{VERSION}.dist-info/entry_points.txt").decode()
    entry_points = configparser.ConfigParser(delimiters=("=",))
    entry_points.optionxform = str  # type: ignore[assignment,method-assign]
    entry_points.read_string(text)
    assert dict(entry_points["console_scripts"]) == PYPROJECT["project"]["scripts"]
    commands = PYPROJECT["project"]["entry-points"]["rocketkube.commands"]
    assert dict(entry_points["rocketkube.commands"]) == commands


@pytest.mark.compiled  # the pure-Python run turns them off, in the fresh install too
def test_every_compiled_module_is_in_the_wheel_and_loads(wheel: Path, installed: Path) -> None:
    sources = [path for path in tracked(*PACKAGES) if path.endswith(".pyx")]
    assert sources, "no .pyx sources found"
    held = members(wheel)
    modules = []
    for source in sources:
        stem = in_wheel(source).removesuffix(".pyx")
        built = [name for name in held if re.fullmatch(rf"{re.escape(stem)}\.[\w.-]+\.so", name)]
        assert built, f"{source} not compiled into the wheel"
        modules.append(stem.replace("/", "."))
    script = (
        "import importlib, sys\nfor m in sys.argv[1:]: print(importlib.import_module(m).__file__)"
    )
    loaded = run(installed, "python", "-c", script, *modules).split()
    assert all(path.endswith(".so") for path in loaded), loaded


def test_every_file_of_the_packages_is_in_the_wheel(wheel: Path) -> None:
    """Whatever code reads beside itself (``importlib.resources``, ``Path(__file__)``) is
    in its package, so in the wheel; none reaches outside its package."""
    held = members(wheel)
    missing = [path for path in tracked(*PACKAGES) if in_wheel(path) not in held]
    assert missing == []
    reaching_out = []
    for path in tracked(*PACKAGES):
        if not path.endswith(".py"):
            continue
        for number, line in enumerate((CHECKOUT / path).read_text(encoding="utf-8").splitlines()):
            reads = re.search(r"__file__|importlib\.resources|pkgutil\.get_data", line)
            if reads and re.search(r"parents\[|\.parent\.parent|\.\.[/\"']", line):
                reaching_out.append(f"{path}:{number + 1}: {line.strip()}")
    assert reaching_out == []


def test_the_installed_commands_run_from_the_install(installed: Path) -> None:
    listed = run(installed, "rocketkube", "--help")
    for command in PYPROJECT["project"]["entry-points"]["rocketkube.commands"]:
        assert re.search(rf"^\s+{command}\b", listed, re.MULTILINE), command
    assert run(installed, "rocketkube", "--version").strip() == f"rocketkube {VERSION}"
    assert "--namespace" in run(installed, "rocketkube", "operator", "--help")
    where = run(installed, "python", "-c", "import rocketkube.launcher.cli as m; print(m.__file__)")
    assert Path(where.strip()).is_relative_to(installed.parent)


def test_the_operator_prints_the_crds_from_the_install(installed: Path) -> None:
    printed = run(installed, "rocketkube", "operator", "--print-crds")
    documents = sorted(path.read_text(encoding="utf-8") for path in CHECKOUT.glob("crds/*.yaml"))
    assert sorted(printed.split("---\n")) == documents


SERVERS = {
    "namesrv": ["namesrv", "--http-port", "0"],
    "broker": ["broker", "--http-port", "0", "--broker-ip", "127.0.0.1", "--set", "haListenPort=0"],
}
SANDBOX = """set -e
for dir in "$VENV" "$WORKDIR"; do mount --bind "$dir" "$dir"; mount -o remount,bind,ro "$dir"; done
if touch "$VENV/.probe" 2>/dev/null; then echo "the install is writable" >&2; exit 90; fi
cd "$WORKDIR"
exec "$VENV/bin/rocketkube" "$@"
"""
"""Run in a mount namespace of its own: the install and the working directory bound
read-only onto themselves (those bind mounts only), then the server as PID 1."""


def pid_1_of(unshare: subprocess.Popen[bytes]) -> int:
    """The pid (as seen here) of the process ``unshare --fork`` started."""
    children = Path(f"/proc/{unshare.pid}/task/{unshare.pid}/children").read_text().split()
    (child,) = children
    return int(child)


def listening(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while True:
        assert server.poll() is None, f"exited with {server.returncode}:\n{log.read_text()}"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        assert time.monotonic() < deadline, f"not listening:\n{log.read_text()}"
        time.sleep(0.05)


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare (PID and mount namespaces)",
)
@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_server_as_pid_1_on_a_read_only_install_stops_on_sigterm(
    server: str, installed: Path, tmp_path: Path
) -> None:
    """As in a pod whose command is ``rocketkube`` (no tini): the kernel delivers SIGTERM to
    a PID namespace's first process only if it handles it, so a clean stop shows it does."""
    home, tmp, workdir = (tmp_path / name for name in ("home", "tmp", "workdir"))
    for folder in (home, tmp, workdir):
        folder.mkdir()
    script = tmp_path / "sandbox.sh"
    script.write_text(SANDBOX)
    env = {
        **outside_env(),
        "VENV": str(installed.parent),
        "WORKDIR": str(workdir),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    port = free_port()
    log = tmp_path / "server.log"
    argv = ["unshare", "--mount", "--pid", "--kill-child", "sh", str(script)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*argv, *SERVERS[server], "-p", str(port)], env=env, stdout=out, stderr=out
        )
    try:
        listening(port, process, log)
        pid = pid_1_of(process)
        namespaced = Path(f"/proc/{pid}/status").read_text()
        assert re.search(r"^NSpid:\s+\d+\s+1$", namespaced, re.MULTILINE), namespaced
        os.kill(pid, signal.SIGTERM)
        assert process.wait(timeout=START_SECONDS) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "shutting down" in log.read_text()
    assert list(workdir.iterdir()) == []
    if server == "broker":
        assert (home / "store" / "checkpoint").is_file()  # its default store: under HOME
