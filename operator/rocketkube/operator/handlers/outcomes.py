"""How a handler run ends, counted and timed, with failures turned into kopf's retries.

::

    returns                     ok
    kopf.TemporaryError         retry     (raised by the handler: waiting on something)
    InvalidSpec                 invalid   kopf.PermanentError: no retries until the spec
                                          changes (the handler already reported it)
    ApiError 409                retry     kopf.TemporaryError after ``conflict_delay``:
                                          someone wrote the object meanwhile
    other ApiError              retry     kopf.TemporaryError with a growing delay
    an admin API failure        retry     kopf.TemporaryError with a growing delay
    anything else               error     re-raised: kopf logs it and retries with its backoff

kopf posts its log of each failure (warning and above) as an Event on the resource.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import kopf

from rocketkube.operator.handlers import brokers
from rocketkube.operator.handlers.context import Context
from rocketkube.operator.kube.client import ApiError
from rocketkube.operator.metrics import Result
from rocketkube.operator.specs import base

__all__ = ["guarded"]

T = TypeVar("T")


async def guarded(ctx: Context, kind: str, retry: int, run: Awaitable[T]) -> T:
    """Await ``run`` (a handler's work on a ``kind`` resource), counting how it ended."""
    timing = ctx.timing
    with ctx.metrics.timed(kind):
        try:
            result = await run
        except kopf.TemporaryError:
            ctx.metrics.count(kind, Result.RETRY)
            raise
        except (kopf.PermanentError, base.InvalidSpec) as exc:
            ctx.metrics.count(kind, Result.INVALID)
            raise kopf.PermanentError(str(exc)) from exc
        except ApiError as exc:
            ctx.metrics.count(kind, Result.RETRY)
            delay = timing.conflict_delay if exc.conflict else timing.backoff(retry)
            raise kopf.TemporaryError(str(exc), delay=delay) from exc
        except brokers.ADMIN_ERRORS as exc:
            ctx.metrics.count(kind, Result.RETRY)
            raise kopf.TemporaryError(f"admin API: {exc}", delay=timing.backoff(retry)) from exc
        except Exception:
            ctx.metrics.count(kind, Result.ERROR)
            raise
    ctx.metrics.count(kind, Result.OK)
    return result
