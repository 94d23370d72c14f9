"""The CPU a frame arriving in small pieces costs to reassemble (not a test): run this file
with the venv's python.

A 15 MiB SEND_MESSAGE_V2 frame is fed to a :class:`FrameDecoder` in 4 KiB pieces (what a
slow peer's socket delivers), with each scan (Python and compiled when built); the CPU
seconds of the whole feed are printed. Gathering the pieces costs about what copying the
frame a few times does; a decoder that copied its buffer again for each piece took seconds.
"""

from __future__ import annotations

import argparse
import time

from rocketkube.common.remoting import frame
from rocketkube.common.remoting.command import RemotingCommand


def reassemble(scan: frame.Scan, stream: bytes, piece: int) -> float:
    """CPU seconds to feed ``stream`` in pieces of ``piece`` bytes."""
    decoder = frame.FrameDecoder(scan=scan)
    started = time.process_time()
    decoded = []
    for start in range(0, len(stream), piece):
        decoded += decoder.feed(stream[start : start + piece])
    seconds = time.process_time() - started
    if len(decoded) != 1 or decoder.buffered:
        raise RuntimeError("the frame did not come out whole")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=15, help="frame size in MiB (default 15)")
    parser.add_argument("--piece", type=int, default=4096, help="piece size (default 4096)")
    args = parser.parse_args()
    request = RemotingCommand.request(310, {"a": "group", "b": "Topic"}, b"x" * (args.mib << 20))
    stream = frame.encode_bytes(request)
    scans = {"python": frame.FrameDecoder.scan, "compiled": frame.compiled_scan()}
    for name, scan in scans.items():
        if scan is None:
            print(f"{name}: not built or turned off")
            continue
        seconds = reassemble(scan, stream, args.piece)
        print(f"{name}: {len(stream) / 2**20:.1f} MiB in {args.piece} B pieces: "
              f"{seconds:.3f} s of CPU")  # fmt: skip


if __name__ == "__main__":
    main()
