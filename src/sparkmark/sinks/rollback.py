"""Removing rolled-back runs' output: shared by pipeline rollback, ``Bookmarks.reset(...,
remove_output=True)`` and the recovery a job does when it starts.

The protocol makes removal safe to repeat after a crash:

1. one store transaction rewinds the bookmark and marks the runs ``ROLLED_BACK`` with
   ``publish_state='removing'`` (the intent is recorded before anything is deleted);
2. :func:`sparkmark.sinks.publish.finish_removals` deletes each run's output by its per-run names (files
   ``sm-<run_id>-*``; JDBC rows ``WHERE sm_run_id = <run_id>``) and its staging leftovers;
3. only then is the run marked ``publish_state='removed'``.

A crash between 2 and 3 leaves ``removing``: the next reset, pipeline run or run of the job
finishes the removal (deleting by run id twice deletes nothing the second time).

    from sparkmark.sinks.publish import finish_removals
    finish_removals(spark, store, store.list_runs(job_name="orders", statuses=("ROLLED_BACK",)))
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from sparkmark.sinks.publish import finish_removals, outputs_of, pending_removal, planned_removal
from sparkmark.state.store import StateStore
from sparkmark.core.status import PublishState, RunStatus

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REMOVING = PublishState.REMOVING
REMOVED = PublishState.REMOVED
ROLLED_BACK = RunStatus.ROLLED_BACK


@dataclass
class ResetPlan:
    """What ``Bookmarks.reset(..., remove_output=True)`` did (``dry_run``: would do).

        plan = Bookmarks().reset("orders", run_id=R, remove_output=True, dry_run=True)
        plan.run_ids    # the runs after R, to be marked ROLLED_BACK
        plan.removed    # their files / JDBC row counts, to be deleted
    """

    job_name: str
    run_id: str | None
    dry_run: bool
    remove_output: bool
    version: int | None
    runs: list[dict[str, Any]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    finished_earlier: list[str] = field(default_factory=list)

    @property
    def run_ids(self) -> list[str]:
        return [r["run_id"] for r in self.runs]

    def __str__(self) -> str:
        to = f"rewound to run {self.run_id}" if self.run_id else "reset"
        if self.dry_run:
            head = (f"dry run, nothing changed: the bookmark of {self.job_name} would be {to}")
        else:
            head = f"bookmark of {self.job_name} {to}: now version {self.version}"
        lines = [head]
        if self.finished_earlier:
            lines.append(f"finished an interrupted removal: {len(self.finished_earlier)} "
                         "item(s) of earlier rolled-back runs")
        if self.remove_output:
            verb = "would roll back" if self.dry_run else "rolled back"
            lines.append(f"{verb} {len(self.runs)} later run(s); "
                         f"{'would remove' if self.dry_run else 'removed'} "
                         f"{len(self.removed)} output item(s)")
            for r in self.runs:
                mine = [x for x in self.removed if r["run_id"] in x]
                lines.append(f"  run {r['run_id']} (#{r['run_number']}, {r['status']}, "
                             f"{r.get('records_written') or 0} records written): "
                             f"{len(mine)} item(s)")
            lines.extend(f"    {x}" for x in self.removed)
        return "\n".join(lines)

    def __rich__(self) -> Any:
        from rich.text import Text
        return Text(str(self))


def jdbc_credentials(store: StateStore | str | None, job_name: str, specs: list[str],
                     environ: Mapping[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Passwords for the JDBC targets a job's runs wrote to, by target table, from environment
    variables (the ledger keeps no passwords): each spec is ``VAR`` (every target) or
    ``TABLE=VAR`` (that table; the more specific one wins).  This is what
    ``sparkmark bookmark reset --remove-output --jdbc-password-env`` passes as ``properties``.

        jdbc_credentials(state, "orders", ["PG_PW", "audit_log=AUDIT_PW"])
        # {'orders_out': {'password': ...}, 'audit_log': {'password': ...}}
    """
    from sparkmark.core.errors import SparkmarkError
    from sparkmark.state.ledger import jdbc_targets
    env = os.environ if environ is None else environ
    targets = jdbc_targets(store, job_name)
    default: str | None = None
    per_table: dict[str, str] = {}
    for spec in specs:
        table, sep, env_name = spec.rpartition("=")
        table, env_name = table.strip(), env_name.strip()
        if (sep and not table) or not env_name:
            raise SparkmarkError(f"--jdbc-password-env {spec!r}: give VAR or TABLE=VAR")
        password = env.get(env_name)
        if password is None:
            raise SparkmarkError(f"--jdbc-password-env {spec}: the environment variable "
                                 f"{env_name} is not set; export it with the target database's "
                                 "password")
        if not sep:
            default = password
            continue
        matches = [t for t in targets if t.lower() == table.lower()]
        if not matches:
            raise SparkmarkError(f"--jdbc-password-env {spec}: job {job_name!r} wrote to no "
                                 f"JDBC table {table!r}; its JDBC targets are: "
                                 f"{', '.join(targets) or 'none'}")
        for t in matches:
            per_table[t] = password
    found = {t: per_table.get(t, default) for t in targets}
    return {t: {"password": pw} for t, pw in found.items() if pw is not None}


def _spark_for(rows: list[dict[str, Any]], spark: "SparkSession | None",
               start: bool = True) -> Any:
    """The session to remove ``rows``' output with: ``spark``, else the active one, else (when
    ``start``) a new local one; ``None`` when no row has output or none may be started."""
    if spark is not None or not any(outputs_of(r) for r in rows):
        return spark
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    if active is not None or not start:
        return active
    from sparkmark.engine.spark import local_session
    return local_session("sparkmark-reset")


def reset_with_output(store: StateStore, job_name: str, run_id: str | None, *,
                      remove_output: bool, dry_run: bool, now: Any,
                      spark: "SparkSession | None" = None,
                      properties: dict | None = None) -> ResetPlan:
    """``Bookmarks.reset`` with ``remove_output`` / ``dry_run`` (see there)."""
    from sparkmark.core.errors import UnknownJobError
    if store.job_row(job_name) is None:
        raise UnknownJobError(f"no job named {job_name!r} in state store {store.display_url}; "
                              "'sparkmark report' lists the jobs that have run")
    if run_id is not None:
        store.validate_runs(job_name, [run_id])  # a clear error for a run that never committed
        with store.tx("reading the ledger") as conn:  # and for one rolled back (its output gone)
            store.refuse_rolled_back(conn, job_name, run_id)
    rows = store.list_runs(job_name=job_name)
    after = 0
    if run_id is not None:
        after = next(r["run_number"] for r in rows if r["run_id"] == run_id)
    known = {s.value for s in RunStatus}
    odd = [r for r in rows if r["run_number"] > after and r["status"] not in known]
    if remove_output and odd:
        from sparkmark.core.errors import StateCorruptError
        raise StateCorruptError(
            f"run {odd[0]['run_id']} of job {job_name!r} has status {str(odd[0]['status'])[:40]!r}"
            f", which sparkmark does not know (edited in the store?), so it cannot tell whether "
            "its output must be removed; nothing was changed. Set its status back to one of "
            f"{', '.join(sorted(known))}, then reset again")
    later = [r for r in rows if r["status"] in RunStatus.progress()
             and r["run_number"] > after] if remove_output else []
    earlier = [r for r in rows if pending_removal(r)] if remove_output else []
    # A dry run never starts Spark: without a session it lists file targets through pyarrow,
    # counts JDBC rows through a Python driver, and describes what only Spark could list
    spark = _spark_for(later + earlier, spark, start=not dry_run) if remove_output else None
    # Listing (and, for JDBC, connecting) first: a missing credential fails before any change.
    planned = planned_removal(spark, later, properties) if remove_output else []
    plan = ResetPlan(job_name, run_id, dry_run, remove_output, None, later, planned)
    if dry_run:
        plan.finished_earlier = planned_removal(spark, earlier, properties) if earlier else []
        return plan
    plan.finished_earlier = finish_removals(spark, store, earlier, properties)
    plan.version = store.reset_with_rollback(job_name, run_id, [r["run_id"] for r in later],
                                             now=now())
    plan.removed = finish_removals(
        spark, store, [dict(r, status=ROLLED_BACK, publish_state=REMOVING) for r in later],
        properties)
    return plan
