"""Time in sparkmark is epoch milliseconds, UTC.  Jobs and pipelines take an injectable clock.

    job = Job(spark, clock=lambda: 1_700_000_000_000)   # a fixed clock, e.g. in a test
"""
from __future__ import annotations

import time
from typing import Callable

Clock = Callable[[], int]


def system_clock() -> int:
    """The current time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


#: Plausible epoch milliseconds: 2000-01-01 .. 2200-01-01 UTC.
PLAUSIBLE_MS = (946_684_800_000, 7_258_118_400_000)


def checked_now(clock: Clock) -> int:
    """Call ``clock`` and return its time, or raise :class:`ConfigError` when it is not epoch
    milliseconds as an int (a ``datetime``, a float, seconds or nanoseconds would silently
    poison every bookmark).

    >>> checked_now(lambda: 1_700_000_000_000)
    1700000000000
    """
    from sparkmark.core.errors import ConfigError
    value = clock()
    if isinstance(value, bool) or not isinstance(value, int):
        kind = type(value).__name__
        hint = (" (e.g. datetime.now)" if hasattr(value, "timestamp") else "")
        raise ConfigError(
            f"the clock returned a {kind}{hint}, not epoch milliseconds as an int; pass a "
            "function such as lambda: time.time_ns() // 1_000_000, or leave clock unset")
    lo, hi = PLAUSIBLE_MS
    if not lo <= value <= hi:
        unit = ("seconds" if 946_684_800 <= value <= 7_258_118_400 else
                "microseconds" if lo * 1000 <= value <= hi * 1000 else
                "nanoseconds" if lo * 1_000_000 <= value <= hi * 1_000_000 else None)
        what = f"looks like epoch {unit}" if unit else "is not a time between 2000 and 2200"
        raise ConfigError(
            f"the clock returned {value}, which {what}; sparkmark's clock must return epoch "
            "milliseconds (e.g. lambda: time.time_ns() // 1_000_000)")
    return value


def format_ts(ts_ms: int | None, tz: str = "UTC") -> str | None:
    """Epoch ms shown in the IANA time zone ``tz`` as ISO 8601 with milliseconds and the offset.

    The one formatter of times for people (CLI, ledger, pipelines)::

        >>> format_ts(1_609_459_200_000, "Europe/Paris")
        '2021-01-01 01:00:00.000+01:00'
        >>> format_ts(None) is None
        True
    """
    if ts_ms is None:
        return None
    from datetime import datetime, timezone as _tz
    from zoneinfo import ZoneInfo

    from sparkmark.core.errors import ConfigError
    try:
        zone = ZoneInfo(tz.strip())
    except Exception:  # noqa: BLE001 - ZoneInfoNotFoundError, ValueError
        raise ConfigError(f"unknown timezone {tz!r}; use an IANA name such as "
                          "'UTC' or 'Europe/Berlin'") from None
    dt = datetime.fromtimestamp(ts_ms / 1000, tz=_tz.utc).astimezone(zone)
    return dt.isoformat(sep=" ", timespec="milliseconds")
