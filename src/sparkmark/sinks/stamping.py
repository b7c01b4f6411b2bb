"""What every sink shares: the stamp columns, the staging folder name, and a one-pass row count.

    >>> stamped = stamp(df, run_id="0" * 32, snapshot_ts=1_700_000_000_000)
    >>> stamped.columns[-2:]
    ['sm_run_id', 'sm_snapshot_ts']
    >>> n = count_while(stamped, lambda d: d.write.parquet("/tmp/out"))   # rows written
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

from ..errors import SinkError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

STAGING_DIR = "_sparkmark_staging"
RUN_ID_COL = "sm_run_id"
SNAPSHOT_COL = "sm_snapshot_ts"
#: the prefix of every file a run publishes into a file target
FILE_PREFIX = "sm-"

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def stamp(df: "DataFrame", run_id: str, snapshot_ts: int) -> "DataFrame":
    """Add ``sm_run_id`` and ``sm_snapshot_ts`` (a UTC timestamp) to every row."""
    from pyspark.sql import functions as F
    # one projection (one analysis of the plan) for both columns, as two withColumn calls
    # would analyse it twice
    return df.withColumns({RUN_ID_COL: F.lit(run_id),
                           SNAPSHOT_COL: F.timestamp_millis(F.lit(int(snapshot_ts)))})


def count_while(df: "DataFrame", action: Callable[["DataFrame"], None]) -> int:
    """Run ``action(observed_df)`` and return the number of rows it processed (one pass)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F
    obs = Observation("sparkmark_rows")
    action(df.observe(obs, F.count(F.lit(1)).alias("rows")))
    return int(obs.get.get("rows", 0))


def checked_run_id(run_id: str) -> str:
    """``run_id`` if it is a run id (32 lower-case hex digits), else a :class:`SinkError`.

    Run ids go into SQL text and file names; this check is a real one (``python -O`` keeps it).
    """
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise SinkError(f"{run_id!r} is not a sparkmark run id (32 hex digits); the ledger row "
                        "is damaged — check it with 'sparkmark report'")
    return run_id


def published_prefix(run_id: str) -> str:
    """The file-name prefix of run ``run_id``'s published files: ``sm-<run_id>-``."""
    return f"{FILE_PREFIX}{checked_run_id(run_id)}-"
