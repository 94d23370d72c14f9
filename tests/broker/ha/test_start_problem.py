"""Where a master can start streaming to a slave, and what it logs when it cannot."""

from __future__ import annotations

from rocketkube.broker.ha.master import start_problem


def test_a_start_inside_the_log_is_fine() -> None:
    assert start_problem(0, 0, 0) is None
    assert start_problem(1024, 1024, 4096) is None
    assert start_problem(4096, 1024, 4096) is None  # the end: the slave is up to date


def test_a_slave_behind_retention_is_told_how_to_recover() -> None:
    problem = start_problem(512, 1024, 4096)
    assert problem is not None
    assert "no longer has (it keeps 1024..4096)" in problem
    assert "empty its store" in problem


def test_a_slave_past_the_end_is_no_copy() -> None:
    problem = start_problem(8192, 1024, 4096)
    assert problem is not None
    assert "past this master's 1024..4096" in problem
    assert "not a copy" in problem
