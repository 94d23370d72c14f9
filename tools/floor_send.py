"""The CPython floor of a pipelined send (not a test): run this file with the venv's python.

What does one stored 100 B send cost at the very least in pure Python, and how far is the
broker's send path from it? This times, on one core, in one run:

- **floor**: the least work a stored send needs, written as one flat loop over pre-built
  SEND_MESSAGE_V2 frames (the bench's): frame and JSON header decode, the header fields
  and properties, a commit-log record packed into an anonymous mapping with its body CRC,
  the message id, a consume-queue entry, one index slot and the JSON answer. Nothing else:
  no checks, no topic or permission lookup, no real index, no metrics, no event loop, no
  socket. A real broker cannot do less, so ``1e6 / floor`` msgs/s is a ceiling for a
  broker written in Python on this core;
- **broker**: the broker's own send path on the same frames (decode, checks, append,
  dispatch, index, answer), fed in process as ``instructions_send.py`` feeds it, without
  the socket.

A 2-core machine runs the benchmark's client on the other core, so the broker's figure
is what bounds ``rocketkube bench broker``'s pipelined sends.
"""

from __future__ import annotations

import argparse
import mmap
import struct
import time
import zlib

import orjson
from instructions_send import feed  # this folder, run as a script

from rocketkube.bench import pipeline
from rocketkube.common import runtime

_HEAD = struct.Struct(">ii")  # frame length, serialization and header length
_RECORD = struct.Struct(">iiiiiqqiqiqiqiqh")  # the 4.x record header, roughly
_CQ = struct.Struct(">qiq")
_INDEX = struct.Struct(">iqii")
_ANSWER = (
    b'{"code":0,"extFields":{"msgId":"%s","queueId":"%d","queueOffset":"%d",'
    b'"MSG_REGION":"DefaultRegion","TRACE_ON":"true"},"flag":1,"language":"JAVA",'
    b'"opaque":%d,"serializeTypeCurrentRPC":"JSON","version":0}'
)
_HOST = bytes([127, 0, 0, 1, 0, 0, 0x27, 0x1B])


def _java_hash(text: str) -> int:
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _frames(messages: int, chunk: int) -> list[bytes]:
    frames = pipeline.SendFrames("FloorT", b"b" * 100, 8, 1_700_000_000_000)
    chunks = []
    for first in range(0, messages, chunk):
        out: list[bytes] = []
        for seq in range(first, first + chunk):
            frames.add(out, seq + 1, seq)
        chunks.append(b"".join(out))
    return chunks


def floor(chunks: list[bytes]) -> float:
    """Seconds of CPU for the least work of every send in ``chunks``."""
    log, cq, idx = mmap.mmap(-1, 1 << 30), mmap.mmap(-1, 64 << 20), mmap.mmap(-1, 64 << 20)
    unpack, loads, pack, crc = _HEAD.unpack_from, orjson.loads, _RECORD.pack_into, zlib.crc32
    pos = cq_pos = index_pos = 0
    queue_offsets = [0] * 8
    tag_hashes: dict[str, int] = {}
    started = time.process_time()
    for data in chunks:
        view = memoryview(data)
        at, size = 0, len(view)
        answers: list[bytes] = []
        while at < size:
            length, header_length = unpack(view, at)
            header_length &= 0xFFFFFF
            header = loads(view[at + 8 : at + 8 + header_length])
            body = view[at + 8 + header_length : at + 4 + length]
            at += 4 + length
            ext = header["extFields"]
            queue_id = int(ext["e"])
            props = dict(p.split("\x01", 1) for p in ext["i"].split("\x02") if p)
            props.pop("WAIT", None)
            props["CLUSTER"] = "DefaultCluster"
            encoded_props = "\x02".join([f"{k}\x01{v}" for k, v in props.items()]).encode()
            tags = props.get("TAGS", "")
            tag_hash = tag_hashes.get(tags)
            if tag_hash is None:
                tag_hash = tag_hashes[tags] = _java_hash(tags)
            topic = ext["b"].encode()
            total = _RECORD.size + len(body) + 1 + len(topic) + 2 + len(encoded_props)
            queue_offset = queue_offsets[queue_id]
            queue_offsets[queue_id] = queue_offset + 1
            pack(log, pos, total, -626843481, crc(body), queue_id, int(ext["h"]), queue_offset,
                 pos, int(ext["f"]), int(ext["g"]), 0, 0, 0, 0, 0, 0, len(body))  # fmt: skip
            start = pos + _RECORD.size
            end = start + len(body)
            log[start:end] = body
            log[end] = len(topic)
            log[end + 1 : end + 1 + len(topic)] = topic
            msg_id = (_HOST + pos.to_bytes(8, "big")).hex().upper()
            _CQ.pack_into(cq, cq_pos, pos, total, tag_hash)
            _INDEX.pack_into(idx, index_pos, hash(props.get("UNIQ_KEY")) & 0x7FFFFFFF, pos, 0, 0)
            cq_pos += _CQ.size
            index_pos += _INDEX.size
            pos += total
            answers.append(_ANSWER % (msg_id.encode(), queue_id, queue_offset, header["opaque"]))
        b"".join(answers)
    return time.process_time() - started


def broker(messages: int, chunk: int) -> float:
    """Seconds of CPU the broker's send path takes for ``messages`` sends in process."""
    marks: dict[str, float] = {}

    def switch(state: str) -> None:
        marks[state] = time.process_time()

    runtime.run(feed(messages, chunk, 100, "async", switch))
    return marks["off"] - marks["on"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--messages", type=int, default=200_000)
    parser.add_argument("--chunk", type=int, default=32, help="sends per received chunk")
    args = parser.parse_args()
    chunks = _frames(args.messages, args.chunk)
    low = floor(chunks) / args.messages * 1e6
    path = broker(args.messages, args.chunk) / args.messages * 1e6
    print(f"floor:  {low:5.2f} us a send -> at most {1e6 / low:9,.0f} msgs/s on this core")
    print(f"broker: {path:5.2f} us a send -> at most {1e6 / path:9,.0f} msgs/s on this core")
    print(f"the broker's path costs {path / low:.1f}x the floor")


if __name__ == "__main__":
    main()
