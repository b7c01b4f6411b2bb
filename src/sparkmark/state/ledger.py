"""The run ledger (Overwatch's pipeline report): rows for the CLI, or a Spark DataFrame.

    report_rows(store, pipeline="overwatch", last=10)     # list of dicts, times formatted
    report_dataframe(spark, store, pipeline="overwatch")  # the same as a Spark DataFrame

Times are stored in UTC epoch ms.  They are shown in ``timezone``; by default (``None``) in the
timezone of the pipeline that wrote each row (recorded in the row's config), UTC for plain jobs.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable

from sparkmark.core.errors import ConfigError, PipelineError, UnknownJobError
from sparkmark.core.clock import format_ts, system_clock
from sparkmark.core.status import parse_statuses
from sparkmark.planning.windows import get_zone
from sparkmark.state import StateStore, open_store
from sparkmark.state.store_base import cap

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# (shown name, stored column)
TIME_COLUMNS = (("run_start", "run_start_ts"), ("run_end", "run_end_ts"), ("from", "from_ts"),
                ("until", "until_ts"), ("snapshot", "snapshot_ts"))
COLUMNS = ("pipeline", "module_id", "module_name", "layer", "job_name", "run_id",
           "pipeline_run_id", "run_number", "attempt", "status", "error", "run_start", "run_end",
           "duration_s", "from", "until", "snapshot", "files_read", "records_read",
           "records_written", "timezone", "config")


def _store(store: StateStore | str | None) -> StateStore:
    # reading the ledger creates nothing: a mistyped path is an error, not a new empty store
    return store if isinstance(store, StateStore) else open_store(store, create=False)


def _module_id(module: Any) -> int:
    text = str(module).strip()
    if isinstance(module, bool) or not text.lstrip("-").isdigit():
        raise PipelineError(f"bad module id {module!r}: module ids are integers such as 2011")
    return int(text)


#: relative spans ``--since`` takes: a whole number and one of these units
SPAN_UNITS_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def parse_since(value: str, now: int, tz: str = "UTC") -> int:
    """A ``--since`` value -> epoch ms: an ISO date (the start of that day in ``tz``) or
    date-time (in ``tz`` unless it has an offset), or a span back from ``now`` (epoch ms): a
    whole number with ``s``, ``m``, ``h``, ``d`` or ``w``.  Anything else is a
    :class:`~sparkmark.core.errors.ConfigError` saying what to give.

    >>> parse_since("24h", now=1_700_000_000_000)
    1699913600000
    >>> parse_since("2024-05-01", now=0)
    1714521600000
    >>> parse_since("2024-05-01T12:00:00+02:00", now=0)
    1714557600000
    """
    import re

    from sparkmark.core.errors import ConfigError
    text = str(value).strip()
    span = re.fullmatch(r"(\d{1,9})\s*([smhdw])", text.lower())
    if span:
        return now - int(span.group(1)) * SPAN_UNITS_MS[span.group(2)]
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}([T ].+)?", text):
        from sparkmark.planning.windows import parse_time
        try:
            return parse_time(text, tz, what="--since")
        except PipelineError:
            pass
    raise ConfigError(f"cannot read --since {cap(text, 40)!r}: give an ISO date or date-time "
                      "(2024-05-01, 2024-05-01T12:00:00Z) or a span back from now such as "
                      "30m, 24h or 7d")


def _run_filters(pipeline: str | None, module: Any, job: str | None,
                 statuses: Any, since: int | str | None) -> dict[str, Any]:
    """The checked filters of a ledger read, as :meth:`StateStore.list_runs` takes them."""
    module_id: int | list[int] | None = None
    if isinstance(module, (list, tuple)):  # several modules
        module_id = [_module_id(m) for m in module]
    elif module is not None:
        module_id = _module_id(module)
    started_from: int | None = None
    if isinstance(since, str):
        started_from = parse_since(since, system_clock())
    elif since is not None:
        if isinstance(since, bool) or not isinstance(since, int):
            raise ConfigError(f"since={since!r}: give epoch ms (an int) or text such as "
                              "'2024-05-01' or '7d'")
        started_from = since
    return {"job_name": job, "pipeline": pipeline, "module_id": module_id,
            "statuses": parse_statuses(statuses), "started_from": started_from}


def ledger_rows(store: StateStore | str | None, pipeline: str | None = None,
                module: int | str | list[int] | None = None, job: str | None = None,
                last: int | None = None, *, statuses: Iterable[str] | str | None = None,
                since: int | str | None = None) -> list[dict[str, Any]]:
    """The raw ledger rows (times in epoch ms), oldest first; ``last`` keeps the newest N;
    ``statuses`` (any case, comma-separated text or a list): only runs in these; ``since``
    (epoch ms, or text for :func:`parse_since`): only runs that started then or later.  The
    filters and the limit are applied in the store's query.

    Example: ``ledger_rows(store, job="orders", statuses="failed", since="7d", last=20)``
    """
    st = _store(store)
    if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 1):
        try:
            last = int(str(last))
            if last < 1:
                raise ValueError
        except ValueError:
            raise PipelineError(f"--last must be a whole number >= 1, not {last!r}") from None
    filters = _run_filters(pipeline, module, job, statuses, since)
    rows = st.list_runs(last=last, **filters)
    if not rows and (pipeline is not None or job is not None):
        if job is not None and st.job_row(job) is None:
            raise UnknownJobError(f"no job named {job!r} in state store {st.display_url}; "
                                  "'sparkmark report' lists every run")
        if pipeline is not None and not st.list_runs(pipeline=pipeline, last=1):
            raise UnknownJobError(f"no runs of pipeline {pipeline!r} in state store "
                                  f"{st.display_url}; 'sparkmark report' lists every run")
    return rows


def ledger_count(store: StateStore | str | None, pipeline: str | None = None,
                 module: int | str | list[int] | None = None, job: str | None = None, *,
                 statuses: Iterable[str] | str | None = None,
                 since: int | str | None = None) -> int:
    """How many runs :func:`ledger_rows` finds with these filters and no ``last`` (one
    ``COUNT`` query): ``ledger_count(store, job="orders", statuses="FAILED")``."""
    st = _store(store)
    return st.count_runs(**_run_filters(pipeline, module, job, statuses, since))


#: the newest runs ``sparkmark report`` shows when given neither ``--limit`` nor ``--all``,
#: per output (JSON and CSV: every run, as ``sparkmark files`` does)
REPORT_LIMITS = {"table": 100, "html": 10_000}


def report_limit(fmt: str, limit: int | None = None, every: bool = False) -> int | None:
    """How many of the newest runs ``sparkmark report --format fmt`` shows: ``limit`` when
    given, none (all) with ``every`` (``--all``), else :data:`REPORT_LIMITS`.

    >>> report_limit("table"), report_limit("json"), report_limit("table", 5)
    (100, None, 5)
    """
    if every and limit is not None:
        raise ConfigError("give --limit N or --all, not both")
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise ConfigError(f"--limit/--last must be a positive number of runs, not {limit!r}")
    return None if every else limit if limit is not None else REPORT_LIMITS.get(fmt)


def runs_left_out(store: StateStore | str | None, shown: int, last: int | None,
                  pipeline: str | None = None, module: int | str | list[int] | None = None,
                  job: str | None = None, *, statuses: Iterable[str] | str | None = None,
                  since: int | str | None = None) -> int:
    """How many older runs matching the filters a read limited to ``last`` left out (a COUNT
    only when the limit was reached): ``runs_left_out(store, len(rows), 100, job="orders")``."""
    if last is None or shown < last:
        return 0
    return max(0, ledger_count(store, pipeline=pipeline, module=module, job=job,
                               statuses=statuses, since=since) - shown)


def _row_timezone(row: dict[str, Any]) -> str:
    try:
        tz = (json.loads(row.get("config") or "{}").get("pipeline") or {}).get("timezone")
    except (ValueError, AttributeError):
        tz = None
    return tz or "UTC"


def report_rows(store: StateStore | str | None, pipeline: str | None = None,
                module: int | str | list[int] | None = None, job: str | None = None,
                last: int | None = None, timezone: str | None = None, *,
                statuses: Iterable[str] | str | None = None,
                since: int | str | None = None) -> list[dict[str, Any]]:
    """Ledger rows formatted for a table, JSON or CSV: the report's columns, times shown in
    ``timezone`` (default: each row's pipeline timezone) as ``YYYY-MM-DD HH:MM:SS.mmm+HH:MM``,
    plus ``duration_s`` (run end - start, seconds; None while running) and ``files_read``
    (the files its sources read, from the row's config; None when it records none).  Filters
    as in :func:`ledger_rows`.

    Example: ``report_rows(store, statuses=["FAILED"], since="24h", last=100)``
    """
    if timezone is not None:
        get_zone(timezone)
    out = []
    for r in ledger_rows(store, pipeline=pipeline, module=module, job=job, last=last,
                         statuses=statuses, since=since):
        tz = timezone or _row_timezone(r)
        row = {c: r.get(c) for c in COLUMNS if c in r}
        for shown, stored in TIME_COLUMNS:
            row[shown] = format_ts(r.get(stored), tz)
        row["timezone"] = tz
        row["duration_s"] = duration_s(r)
        row["files_read"] = run_markers(r)["files"]
        out.append({c: row.get(c) for c in COLUMNS})
    return out


def duration_s(row: dict[str, Any]) -> float | None:
    """A ledger row's run time in seconds (ms precision); None while it runs.

    >>> duration_s({"run_start_ts": 1_000, "run_end_ts": 3_500})
    2.5
    """
    start, end = row.get("run_start_ts"), row.get("run_end_ts")
    if start is None or end is None:
        return None
    return round((end - start) / 1000, 3)


def report_dataframe(spark: "SparkSession", store: StateStore | str | None,
                     pipeline: str | None = None, module: int | str | None = None,
                     job: str | None = None, last: int | None = None,
                     timezone: str | None = None, *,
                     statuses: Iterable[str] | str | None = None,
                     since: int | str | None = None) -> "DataFrame":
    """The ledger as a Spark DataFrame: the stored columns (times as epoch-ms longs
    ``*_ts``) plus the times formatted in the timezone (``run_start``, ``from``, ...)."""
    from pyspark.sql.types import (IntegerType, LongType, StringType, StructField,
                                   StructType)
    if timezone is not None:
        get_zone(timezone)
    raw = ledger_rows(store, pipeline=pipeline, module=module, job=job, last=last,
                      statuses=statuses, since=since)
    fields = [("pipeline", StringType()), ("module_id", IntegerType()),
              ("module_name", StringType()), ("layer", StringType()), ("job_name", StringType()),
              ("run_id", StringType()), ("pipeline_run_id", StringType()),
              ("run_number", IntegerType()), ("attempt", IntegerType()),
              ("status", StringType()), ("error", StringType()),
              ("run_start_ts", LongType()), ("run_end_ts", LongType()), ("from_ts", LongType()),
              ("until_ts", LongType()), ("snapshot_ts", LongType()),
              ("records_read", LongType()), ("records_written", LongType()),
              ("config", StringType()), ("timezone", StringType())]
    fields += [(shown, StringType()) for shown, _ in TIME_COLUMNS]
    schema = StructType([StructField(n, t, True) for n, t in fields])
    data = []
    for r in raw:
        tz = timezone or _row_timezone(r)
        values = {n: r.get(n) for n, _ in fields}
        values["timezone"] = tz
        for shown, stored in TIME_COLUMNS:
            values[shown] = format_ts(r.get(stored), tz)
        data.append(tuple(values[n] for n, _ in fields))
    return spark.createDataFrame(data, schema)


def jdbc_targets(store: StateStore | str | None, job: str) -> list[str]:
    """The JDBC target tables a job's runs wrote to (from the ledger's ``outputs``)."""
    found: set[str] = set()
    for r in _store(store).list_runs(job_name=job):
        for o in json.loads(r.get("outputs") or "[]"):
            if o.get("kind") == "jdbc":
                found.add(o["target"])
    return sorted(found)


def _count(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple, dict)):
        return len(value)
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def run_markers(row: dict[str, Any]) -> dict[str, Any]:
    """What a ledger row's config says about files read, late files and notes:
    ``{"files": n|None, "late_files": n|None, "note": text|None}``.

    Read from ``config.sources[ctx].files`` / ``.late_files`` (a count or a list) and
    ``config.note`` / ``config.sources[ctx].note`` (e.g. a "not committed" marker)::

        run_markers({"config": '{"sources": {"s": {"files": 3, "late_files": 1}}}'})
        # {'files': 3, 'late_files': 1, 'note': None}
    """
    try:
        cfg = json.loads(row.get("config") or "{}")
    except (TypeError, ValueError):
        cfg = {}
    if not isinstance(cfg, dict):
        cfg = {}
    files = late = None
    notes = [str(cfg["note"])] if cfg.get("note") else []
    for ctx, info in sorted((cfg.get("sources") or {}).items()):
        if not isinstance(info, dict):
            continue
        n = _count(info.get("files"))
        if n is not None:
            files = (files or 0) + n
        n = _count(info.get("late_files"))
        if n is not None:
            late = (late or 0) + n
        if info.get("note"):
            notes.append(f"{ctx}: {info['note']}")
    return {"files": files, "late_files": late, "note": "; ".join(notes) or None}


def with_markers(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Report rows plus ``late_files`` and ``note`` (see :func:`run_markers`), for the terminal
    table: ``with_markers(report_rows(store))``."""
    return [dict(r, late_files=m["late_files"] or None, note=m["note"])
            for r, m in ((r, run_markers(r)) for r in rows)]


#: per-source fields a run summary keeps from ``config.sources[ctx]`` (when present)
SUMMARY_SOURCE_FIELDS = ("source", "format", "path", "table", "read", "mode", "files", "bytes",
                         "records", "new_input", "listing", "listing_reason", "listed",
                         "list_requests", "late_files", "rewritten", "deferred", "stopped_by",
                         "lower", "upper", "malformed_records", "rescued_records", "note")


def source_summaries(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per source, what a ledger row's config says it read (:data:`SUMMARY_SOURCE_FIELDS`),
    for schedulers (Airflow XCom, Dagster metadata).

        source_summaries(row)["orders_src"]["files"]
    """
    try:
        cfg = json.loads(row.get("config") or "{}")
    except (TypeError, ValueError):
        cfg = {}
    found = (cfg.get("sources") if isinstance(cfg, dict) else None) or {}
    if not isinstance(found, dict):
        return {}
    return {str(ctx): {k: info[k] for k in SUMMARY_SOURCE_FIELDS if k in info}
            for ctx, info in sorted(found.items()) if isinstance(info, dict)}


def run_summary(row: dict[str, Any]) -> dict[str, Any]:
    """A ledger row as a small JSON-ready dict for schedulers (Airflow XCom, Dagster metadata):
    identity, status and error, counts, the bookmark version before and after, the window and
    times (epoch ms), and per source what it read (files, bytes, listing, key range, ...).

        run_summary(ledger_rows(store, job="orders", last=1)[0])["bookmark_version_after"]
    """
    sources = source_summaries(row)
    markers = run_markers(row)
    return {
        "run_id": row.get("run_id"), "job_name": row.get("job_name"),
        "status": row.get("status"), "error": row.get("error"),
        "pipeline": row.get("pipeline"), "pipeline_run_id": row.get("pipeline_run_id"),
        "module_id": row.get("module_id"), "module_name": row.get("module_name"),
        "layer": row.get("layer"), "run_number": row.get("run_number"),
        "attempt": row.get("attempt"), "bookmark_option": row.get("bookmark_option"),
        "bookmark_version_before": row.get("start_version"),
        "bookmark_version_after": row.get("end_version"),
        "records_read": row.get("records_read"), "records_written": row.get("records_written"),
        "files_read": markers["files"], "late_files": markers["late_files"],
        "note": markers["note"],
        "from_ts": row.get("from_ts"), "until_ts": row.get("until_ts"),
        "snapshot_ts": row.get("snapshot_ts"), "run_start_ts": row.get("run_start_ts"),
        "run_end_ts": row.get("run_end_ts"), "sources": sources,
    }
