"""``rocketkube bench flood``: the frames it floods with, its bounds, and a tiny run against
a name server and a broker of its own. Behaviour only, never speed."""

from __future__ import annotations

import json

import pytest

from rocketkube.bench import cli, flooder
from rocketkube.common import errors
from rocketkube.common.remoting import frame


@pytest.mark.parametrize("address", ["127.0.0.1:9876", "127.0.0.2:1", "[::1]:9876", "localhost:1"])
def test_loopback_addresses_are_accepted(address: str) -> None:
    assert flooder.loopback_address(address) == address


@pytest.mark.parametrize("address", ["10.0.0.1:9876", "[2001:db8::1]:1", "example.com:80"])
def test_other_addresses_are_refused(address: str) -> None:
    with pytest.raises(ValueError, match=r"loopback|does not appear"):
        flooder.loopback_address(address)


def test_every_garbage_frame_is_refused_by_both_decoders() -> None:
    for scan in {frame.FrameDecoder.scan, frame.compiled_scan()} - {None}:
        for garbage in flooder.garbage_frames():
            with pytest.raises(errors.ProtocolError):
                frame.FrameDecoder(scan=scan).feed(garbage)


def test_a_flood_to_ipv4_loopback_comes_from_other_loopback_hosts() -> None:
    assert flooder.source_host("127.0.0.1:9876", 0) == "127.0.0.2"
    assert flooder.source_host("localhost:9876", 9) == "127.0.0.3"
    assert flooder.source_host("[::1]:9876", 0) is None


def test_truncated_frames_are_requests_cut_short() -> None:
    for scan in {frame.FrameDecoder.scan, frame.compiled_scan()} - {None}:
        for truncated in flooder.truncated_frames():
            decoder = frame.FrameDecoder(scan=scan)
            assert decoder.feed(truncated) == []
            assert decoder.buffered == len(truncated)


@pytest.mark.parametrize("target", ["broker", "namesrv"])
def test_malformed_requests_are_well_framed(target: str) -> None:
    requests = flooder.malformed_requests(target)  # type: ignore[arg-type]
    stream = b"".join(frame.encode_bytes(r) for r in requests)
    decoded = frame.FrameDecoder().feed(stream)
    assert [c.code for c in decoded] == [r.code for r in requests]


def test_the_plan_mixes_garbage_and_malformed_over_both_servers() -> None:
    plan = flooder.plan(24, "b:1", "n:2")
    assert sum(role == "garbage" for _, role in plan) == 3
    assert sum(role == "truncated" for _, role in plan) == 3
    assert sum(address == "n:2" for address, _ in plan) == 8
    assert {role for address, role in plan if address == "n:2"} == {
        "garbage",
        "truncated",
        "malformed",
    }
    assert {address for address, _ in flooder.plan(4, "b:1", None)} == {"b:1"}


def test_bench_flood_refuses_servers_elsewhere(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["flood", "-n", "127.0.0.1:9876;10.0.0.1:9876", "--duration", "1"]) == 2
    assert cli.main(["flood", "-n", "127.0.0.1:9876", "--broker", "10.0.0.2:10911"]) == 2
    assert "loopback addresses only" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_flood_against_child_servers(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["flood", "--baseline", "0.5", "--duration", "30", "--connections", "8",
                     "--frames", "2000", "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    assert summary["benchmark"] == "flood"
    for phase in ("baseline", "flood"):
        assert summary[phase]["failed"] == 0
        assert summary[phase]["messages"] > 0
        assert summary[phase]["broker_cpu_pct"] is not None
    counts = summary["flood_counts"]
    assert counts["taken"] >= 2000  # a few seconds: the servers throttle the flood's hosts
    assert counts["frames"] >= counts["taken"]
    assert counts["garbage"] > 0
    assert counts["truncated"] > 0
    assert summary["kept"] > 0
    messages = summary["messages"]
    assert messages["acknowledged"] > 0
    assert messages["lost"] == 0
    assert summary["rss_mib"]["broker"]["peak"] > 0
    assert "kept:" in err  # the lines for a person go to stderr with --json
