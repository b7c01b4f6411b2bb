"""Time in sparkmark is epoch milliseconds, UTC.  Jobs and pipelines take an injectable clock."""
from __future__ import annotations

import time
from typing import Callable

Clock = Callable[[], int]


def system_clock() -> int:
    """The current time in epoch milliseconds."""
    return time.time_ns() // 1_000_000
