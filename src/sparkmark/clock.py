"""Time in sparkmark is epoch milliseconds, UTC.  Jobs and pipelines take an injectable clock."""
from __future__ import annotations

import time
from typing import Callable

Clock = Callable[[], int]


def system_clock() -> int:
    """The current time in epoch milliseconds."""
    return time.time_ns() // 1_000_000


def format_ts(ts_ms: int | None, timezone: str = "UTC") -> str:
    """Epoch ms shown as ``YYYY-MM-DD HH:MM:SS.mmm`` in ``timezone`` (an IANA name)."""
    if ts_ms is None:
        return ""
    from datetime import datetime, timezone as _tz
    from zoneinfo import ZoneInfo

    from .errors import ConfigError
    try:
        zone = ZoneInfo(timezone)
    except Exception:  # noqa: BLE001 - ZoneInfoNotFoundError, ValueError
        raise ConfigError(f"unknown timezone {timezone!r}; use an IANA name such as "
                          "'UTC' or 'Europe/Berlin'") from None
    dt = datetime.fromtimestamp(ts_ms / 1000, tz=_tz.utc).astimezone(zone)
    return dt.strftime("%Y-%m-%d %H:%M:%S.") + f"{int(ts_ms) % 1000:03d}"
