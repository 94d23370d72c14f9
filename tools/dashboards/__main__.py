"""Writes every rocketkube Grafana dashboard as JSON: ``python -m dashboards OUT_DIR``
(``make dashboards`` writes ``charts/rocketkube/dashboards``, which the Helm chart turns into
ConfigMaps for Grafana's sidecar). ``--check`` writes nothing and fails when a file there
differs from what the builders make now.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dashboards import catalog


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dashboards", description=__doc__)
    parser.add_argument("out", type=Path, help="the folder of the JSON files")
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = parser.parse_args(argv)
    rendered = catalog.render_all()
    if args.check:
        stale = [name for name, text in rendered.items() if _read(args.out / name) != text]
        for name in stale:
            print(f"{args.out / name} is stale: run make dashboards", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in rendered.items():
        (args.out / name).write_text(text, encoding="utf-8")
    return 0


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


if __name__ == "__main__":
    sys.exit(main())
