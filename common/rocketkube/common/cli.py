"""What a component publishes to the ``rocketkube`` command: a :class:`Command`.

Each component's ``cli`` module exposes one as ``COMMAND``, registered in the
``rocketkube.commands`` entry-point group; the dispatcher (``rocketkube.launcher.cli``)
finds them there and imports a component only when its subcommand runs. The type lives in
``common`` because every component publishes one and the launcher may be imported by none.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """A subcommand: ``configure`` adds its flags, ``run`` executes it, returning the exit code."""

    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
