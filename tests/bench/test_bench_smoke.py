"""``rocketkube bench broker``: the frames it sends, and a tiny run against real brokers.

Behaviour only (numbers are positive, the summary has its fields), never speed.
"""

from __future__ import annotations

import json

import pytest

from rocketkube.bench import broker, cli, pipeline
from rocketkube.common.protocol.send_headers import SendMessageRequestHeaderV2
from rocketkube.common.remoting import frame


def test_pre_encoded_send_frames_are_what_the_encoder_writes() -> None:
    frames = pipeline.SendFrames("BenchTopic", b"0123456789", 4, 1_700_000_000_000)
    for opaque, seq in ((1, 0), (9, 7), (123_456, 0xABCDEF)):
        request = pipeline.send_request(
            "BenchTopic", seq % 4, b"0123456789", frames.uniq_key(seq), 1_700_000_000_000
        )
        request.opaque = opaque
        assert frames.build(opaque, seq) == frame.encode_bytes(request)

    (decoded,) = frame.FrameDecoder().feed(frames.build(5, 6))
    header = SendMessageRequestHeaderV2.decode(decoded.ext_fields)
    assert (decoded.code, decoded.opaque, bytes(decoded.body)) == (310, 5, b"0123456789")
    assert (header.topic, header.queue_id, header.batch) == ("BenchTopic", 2, False)
    uniq_key = f"{frames.prefix}000000000006"
    assert header.properties == f"UNIQ_KEY\x01{uniq_key}\x02WAIT\x01true\x02TAGS\x01TagA"


def test_pull_plan_covers_every_queue_in_turns() -> None:
    plan = pipeline.pull_plan({0: (0, 70), 1: (5, 37), 2: (0, 0)}, 32)
    assert plan == [(0, 0, 32), (1, 5, 37), (0, 32, 64), (0, 64, 70)]


def test_window_rates_cut_the_run_into_equal_message_counts() -> None:
    progress = pipeline.Progress()
    progress.started = 10.0
    progress.events = [(10.5, 50), (11.0, 50), (13.0, 100)]
    assert progress.window_rates(windows=2) == [100 / 1.0, 100 / 2.0]
    assert pipeline.Progress().window_rates() == []


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert broker.percentile(values, 0.5) == 50.0
    assert broker.percentile(values, 0.99) == 99.0
    assert broker.percentile([], 0.99) == 0.0


@pytest.mark.slow
def test_bench_broker_against_child_brokers(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        ["broker", "--messages", "300", "--warmup", "50", "--latency-count", "20",
         "--body-sizes", "100,1024", "--window", "64", "--connections", "2", "--json"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    assert summary["benchmark"] == "broker"
    assert {"cpus", "load_before", "load_after", "calibration_ms", "compiled_modules"} <= (
        summary["machine"].keys()
    )
    results = summary["results"]
    seen = {(r["kind"], r["flush"], r["body_size"]) for r in results}
    assert seen == {
        (kind, flush, size)
        for kind in ("send", "pull", "latency")
        for flush in ("ASYNC_FLUSH", "SYNC_FLUSH")
        for size in (100, 1024)
    }
    for r in results:
        assert r["failed"] == 0
        assert r["seconds"] > 0
        assert r["msgs_per_s"] > 0
        if r["kind"] == "latency":
            assert r["messages"] == 20
            assert 0 < r["p50_us"] <= r["p99_us"] <= r["max_us"]
        else:
            assert r["messages"] == r["expected"] == 300
            assert r["mb_per_s"] > 0
            assert r["broker_cpu_pct"] is not None
    sends = [r for r in results if r["kind"] == "send"]
    assert all(r["connections"] == 2 and r["codes"] == {"0": 300} for r in sends)
    assert {t["target"] for t in summary["targets"]} >= {
        "pipelined 100 B sends, ASYNC_FLUSH",
        "pipelined 100 B sends, SYNC_FLUSH (group commit)",
    }
    assert "scenario" in err  # the human table went to stderr
