"""A long fuzz run of every decoder a peer can reach (``tests/support/decoder_targets.py``):
many hypothesis examples each, arbitrary bytes and mutated valid encodings. Not a test: it
prints, per decoder, the inputs tried, the undeclared exceptions found (none is the rule)
and the slowest input's time, and exits 1 when anything leaked.

    make fuzz FUZZ_ARGS='--examples 5000'
    PYTHONPATH=tests/support .venv/bin/python tools/fuzz_decoders.py --examples 2000 \
        --only frame. --json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import decoder_targets
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st


@dataclass(slots=True)
class Figures:
    """One decoder's run."""

    name: str
    tried: int = 0
    leaks: dict[str, str] = field(default_factory=dict)
    """Exception type -> one input that raised it (repr, cut)."""
    slowest_ms: float = 0.0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"decoder": self.name, "tried": self.tried, "failures": len(self.leaks),
                "leaks": self.leaks, "slowest_ms": round(self.slowest_ms, 3),
                "seconds": round(self.seconds, 2)}  # fmt: skip


def fuzz(target: decoder_targets.Target, examples: int) -> Figures:
    """``examples`` inputs of ``target``; leaks are recorded, not raised, so that the run
    goes on exploring instead of shrinking the first one."""
    figures = Figures(target.name)
    clock = time.perf_counter

    @settings(max_examples=examples, deadline=None, database=None,
              phases=(Phase.generate,), suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        value = data.draw(target.inputs)
        begun = clock()
        leaked = decoder_targets.leak(target, value)
        figures.slowest_ms = max(figures.slowest_ms, 1000 * (clock() - begun))
        figures.tried += 1
        if leaked is not None:
            figures.leaks.setdefault(type(leaked).__name__, repr(value)[:200])

    started = clock()
    run()
    figures.seconds = clock() - started
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="inputs per decoder")
    parser.add_argument("--only", default="", help="decoders whose name starts with this")
    parser.add_argument("--json", action="store_true", help="one JSON line per decoder")
    args = parser.parse_args(argv)
    targets = [t for t in decoder_targets.all_targets() if t.name.startswith(args.only)]
    total = Figures("all")
    for target in targets:
        figures = fuzz(target, args.examples)
        total.tried += figures.tried
        total.seconds += figures.seconds
        total.slowest_ms = max(total.slowest_ms, figures.slowest_ms)
        for kind, value in figures.leaks.items():
            total.leaks[f"{target.name}: {kind}"] = value
        if args.json:
            print(json.dumps(figures.as_dict()), flush=True)
        else:
            print(f"{figures.name:<58} {figures.tried:>8,} tried  {len(figures.leaks)} failures"
                  f"  slowest {figures.slowest_ms:7.2f} ms", flush=True)  # fmt: skip
            for kind, value in figures.leaks.items():
                print(f"    {kind}: {value}", flush=True)
    print(f"{len(targets)} decoders, {total.tried:,} inputs tried in {total.seconds:.0f} s, "
          f"{len(total.leaks)} failures, slowest input {total.slowest_ms:.1f} ms")  # fmt: skip
    return 1 if total.leaks else 0


if __name__ == "__main__":
    sys.exit(main())
