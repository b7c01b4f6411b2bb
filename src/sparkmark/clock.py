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

    from .errors import ConfigError
    try:
        zone = ZoneInfo(tz.strip())
    except Exception:  # noqa: BLE001 - ZoneInfoNotFoundError, ValueError
        raise ConfigError(f"unknown timezone {tz!r}; use an IANA name such as "
                          "'UTC' or 'Europe/Berlin'") from None
    dt = datetime.fromtimestamp(ts_ms / 1000, tz=_tz.utc).astimezone(zone)
    return dt.isoformat(sep=" ", timespec="milliseconds")
