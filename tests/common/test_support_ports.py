"""The test harness's ports (``tests/support/ports.py``): below the ephemeral range, bindable,
and from a slice of the range of their own for each pytest-xdist worker, so that tests
running at once never pick the same port."""

from __future__ import annotations

import socket

import pytest
from ports import ephemeral_start, free_port, free_ports


def test_a_port_is_below_the_ephemeral_range_and_bindable() -> None:
    port = free_port()
    assert 10_000 <= port < ephemeral_start()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))


@pytest.mark.parametrize("worker", [0, 1, 2])
def test_each_worker_draws_from_its_own_slice(monkeypatch: pytest.MonkeyPatch, worker: int) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{worker}")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    size = (ephemeral_start() - 2 - 10_000) // 3
    low = 10_000 + worker * size
    for _ in range(20):
        port = free_ports((0, 1))
        assert low <= port < low + size
