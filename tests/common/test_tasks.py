"""Stopping background tasks."""

from __future__ import annotations

import asyncio

import pytest

from rocketkube.common.tasks import cancel_and_wait


async def test_cancels_running_tasks_and_logs_failed_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def forever() -> None:
        await asyncio.sleep(3600)

    async def fail() -> None:
        raise RuntimeError("broken")

    running = asyncio.create_task(forever(), name="forever")
    failed = asyncio.create_task(fail(), name="failing")
    await asyncio.sleep(0)
    await cancel_and_wait(running, None, failed)
    assert running.cancelled()
    assert "task failing failed: RuntimeError('broken')" in caplog.text


async def test_a_task_that_will_not_stop_is_logged_and_left(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue

    task = asyncio.create_task(stubborn(), name="stubborn")
    await asyncio.sleep(0)
    await cancel_and_wait(task, timeout=0.05)
    assert "task stubborn did not stop within 0 s" in caplog.text
    assert not task.done()
    release.set()
    await task
