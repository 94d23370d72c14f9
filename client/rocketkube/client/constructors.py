"""How a client's constructor reads its options: one settings object, or keyword arguments.

Every client takes either ``settings=`` (a frozen dataclass such as
:class:`~rocketkube.client.producer.settings.ProducerSettings`, built once, from flags or a
file, and passed around) or the keyword form (``Producer("group", addr, send_timeout=5)``),
which builds the same object. Mixing the two would leave one of them silently ignored, so
it is refused.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["pick_settings"]

S = TypeVar("S")


def pick_settings(
    settings: S | None,
    group: str | None,
    from_keywords: S,
    defaults: S,
    *,
    needs: str = "a group",
) -> S:
    """The settings a client runs with: ``settings`` when given, else ``from_keywords``.

    ``from_keywords`` is what the keyword form built (with ``group or ""``), ``defaults``
    what it builds when no keyword is given. TypeError when a group is missing (neither
    ``group`` nor ``settings``) or when keywords other than the defaults come with
    ``settings``. ``group`` is what the client cannot do without, which ``needs`` names in
    the error (an admin client's is its name server address).
    """
    if settings is None:
        if group is None:
            raise TypeError(f"a client needs {needs}, or settings holding one")
        return from_keywords
    if group is not None or from_keywords != defaults:
        raise TypeError("pass settings or the group and keyword options, not both")
    return settings
