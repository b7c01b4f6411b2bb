"""Report a sparkmark run to Dagster from a process Dagster Pipes launched — a no-op
otherwise. Needs only the light ``dagster-pipes`` package (not Dagster itself), so a job script
launched by ``PipesSubprocessClient`` (or Pipes on EMR, Databricks, Kubernetes...) can call it
unconditionally; :mod:`sparkmark.integrations.dagster` re-exports it.

Example::

    from sparkmark.integrations.dagster_pipes import report_to_pipes

    with Job(spark).run("orders", args) as job:
        ...
    report_to_pipes(job, check_name="sparkmark_status")   # False when not under Pipes
"""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Mapping

from sparkmark.state.ledger import run_markers, source_summaries
from sparkmark.core.status import RunStatus

if TYPE_CHECKING:
    from sparkmark.lifecycle.job import Job

__all__ = ["report_to_pipes"]

BAD_STATUSES = (RunStatus.FAILED.value, RunStatus.SKIPPED.value)
_TIMES = (("from", "from_ts"), ("until", "until_ts"), ("snapshot", "snapshot_ts"),
          ("run_start", "run_start_ts"), ("run_end", "run_end_ts"))
_TEXT = ("run_id", "status", "job_name", "pipeline", "pipeline_run_id", "module_name", "layer",
         "bookmark_option")
_INTS = ("module_id", "run_number", "attempt", "records_read", "records_written",
         "start_version", "end_version")


def metadata_fields(row: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """The ledger row as ``{name: (type, value)}``, type one of text/int/timestamp/json/bool;
    ``None`` values are left out (Dagster's metadata and Pipes' both come from it).

    Example: ``metadata_fields(row)["status"] == ("text", "SUCCEEDED")``"""
    out: dict[str, tuple[str, Any]] = {}
    for k in _TEXT:
        if row.get(k) is not None:
            out[k] = ("text", str(row[k]))
    for k in _INTS:
        if row.get(k) is not None:
            out[k] = ("int", int(row[k]))
    for shown, stored in _TIMES:
        if row.get(stored) is not None:
            out[shown] = ("timestamp", int(row[stored]) / 1000.0)
    if row.get("error"):
        out["error"] = ("text", str(row["error"]))
    markers = run_markers(dict(row))
    if markers["files"] is not None:
        out["files_read"] = ("int", markers["files"])
    if markers["late_files"] is not None:
        out["late_files"] = ("int", markers["late_files"])
    if markers["note"]:
        out["note"] = ("text", markers["note"])
    summary = source_summaries(dict(row))
    if summary:
        out["sources"] = ("json", summary)
        flags = [bool(s.get("new_input")) for s in summary.values() if "new_input" in s]
        if flags:
            out["new_input"] = ("bool", any(flags))
    return out


def ledger_row(job_or_row: "Job | Mapping[str, Any]") -> dict[str, Any]:
    """The ledger row of a :class:`~sparkmark.Job` after its run (or a row, copied).

    Example: ``ledger_row(job)["status"]``"""
    if isinstance(job_or_row, Mapping):
        return dict(job_or_row)
    run_id = job_or_row.run_id
    if run_id is None:
        raise ValueError("this Job has not run yet: call it after `with job.run(...)` or "
                         "job.init(...)/commit()")
    return job_or_row.store.get_run(run_id)


def asset_name(text: str) -> str:
    """A module or job name as a Dagster asset name (``[A-Za-z0-9_]``).

    Example: ``asset_name("Bronze Orders-1") == "Bronze_Orders_1"``"""
    out = re.sub(r"[^A-Za-z0-9_]", "_", str(text)).strip("_")
    return out or "module"


def _rows(rows_or_job: Any) -> list[dict[str, Any]]:
    if isinstance(rows_or_job, Mapping):
        return [dict(rows_or_job)]
    if isinstance(rows_or_job, (list, tuple)):
        return [dict(r) for r in rows_or_job]
    return [ledger_row(rows_or_job)]


def report_to_pipes(rows_or_job: Any, *, asset_key: str | Mapping[str, str] | None = None,
                    check_name: str | None = None) -> bool:
    """Report sparkmark runs to Dagster when this process was launched by Dagster Pipes
    (env ``DAGSTER_PIPES_CONTEXT``); a no-op otherwise, and without ``dagster_pipes``.

    ``rows_or_job``: a :class:`~sparkmark.Job` after its run, a ledger row or a list of rows.
    A run that did not FAIL and was not SKIPPED is reported as an asset materialization with
    the :func:`ledger_metadata` fields; a FAILED/SKIPPED one is logged as an error and not
    materialized.  ``check_name``: also report that asset check (passes unless FAILED/SKIPPED).
    ``asset_key``: the key (a ``/``-separated string), or a mapping from job name or module
    name to key; default: the launching asset's key for one row, else each row's module name.
    Returns whether anything was reported.  An open Pipes context is reused; otherwise one is
    opened and closed here.

    Example (a script that ``PipesSubprocessClient`` launches)::

        with Job(spark).run("orders", ENABLE_ARGS) as job:
            ...
        report_to_pipes(job, check_name="sparkmark_status")
    """
    try:
        import dagster_pipes as pipes
    except ImportError:  # pragma: no cover - dagster-pipes comes with the extra
        return False
    is_pipes = getattr(pipes, "is_dagster_pipes_process", None)
    launched = is_pipes() if callable(is_pipes) else bool(
        os.environ.get(pipes.DAGSTER_PIPES_CONTEXT_ENV_VAR))
    if not launched:
        return False
    rows = _rows(rows_or_job)
    opened = not pipes.PipesContext.is_initialized()
    ctx = pipes.open_dagster_pipes() if opened else pipes.PipesContext.get()
    try:
        for row in rows:
            key = _pipes_key(row, asset_key, single=len(rows) == 1)
            meta = {k: {"raw_value": v, "type": kind} for k, (kind, v) in metadata_fields(row).items()}
            status = str(row.get("status"))
            if status in BAD_STATUSES:
                ctx.log.error(f"sparkmark run {row.get('run_id')} of {row.get('job_name')} "
                              f"ended {status}: {row.get('error') or ''}")
            else:
                ctx.report_asset_materialization(metadata=meta, asset_key=key)
            if check_name is not None:
                ctx.report_asset_check(check_name, passed=status not in BAD_STATUSES, severity="ERROR",
                                       metadata={"run_id": str(row.get("run_id")),
                                                 "status": status}, asset_key=key)
    finally:
        if opened:
            ctx.close()
    return True


def _pipes_key(row: Mapping[str, Any], asset_key: str | Mapping[str, str] | None,
               single: bool) -> str | None:
    if isinstance(asset_key, str):
        return asset_key
    if isinstance(asset_key, Mapping):
        for k in (row.get("job_name"), row.get("module_name"), row.get("module_id")):
            if k is not None and (k in asset_key or str(k) in asset_key):
                return asset_key[k] if k in asset_key else asset_key[str(k)]
        return None
    if single:
        return None
    return asset_name(row.get("module_name") or row.get("job_name") or "")
