"""Publish, discard, remove and recover staged output: one dispatch on the typed
:data:`~sparkmark.core.run.StagedOutput`, through its kind's
:class:`~sparkmark.sinks.kinds.OutputKind` (files, JDBC, Iceberg, Delta).

    publish_outputs(spark, store, run_id, outputs)   # after the state store commit
    discard_outputs(spark, outputs)                  # a run that did not commit
    remove_run_output(spark, run_id, outputs)        # rollback of a published run
    recover_job_outputs(spark, store, "orders")      # at init: finish what a crash left

Every step is idempotent, so a crash at any point is repaired by doing it again.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from sparkmark.core.run import JdbcOutput, StagedOutput, output_from_record
from sparkmark.core.status import PublishState, RunStatus
from sparkmark.sinks.kinds import kind_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from sparkmark.state import StateStore

#: credentials given for JDBC targets, by table name (each a mapping with ``url``)
Credentials = Mapping[str, Mapping[str, Any]]


def outputs_of(row: Mapping[str, Any]) -> list[StagedOutput]:
    """The staged outputs recorded in a ledger row (``outputs`` JSON)."""
    return [output_from_record(r) for r in json.loads(row.get("outputs") or "[]")]


def records(outputs: Iterable[StagedOutput]) -> str | None:
    """The ledger's JSON for ``outputs`` (``None`` when there are none); no credentials."""
    recs = [o.to_record() for o in outputs]
    return json.dumps(recs) if recs else None


def _as_outputs(outputs: Iterable[StagedOutput | Mapping[str, Any]]) -> list[StagedOutput]:
    return [output_from_record(o) if isinstance(o, Mapping) else o for o in outputs]


def _creds(credentials: Credentials | None, out: StagedOutput) -> Mapping[str, Any] | None:
    """The credentials given for ``out``'s target (JDBC tables; ``None`` for the others)."""
    return (credentials or {}).get(out.target) if isinstance(out, JdbcOutput) else None


def publish_outputs(spark: "SparkSession", store: "StateStore", run_id: str,
                    outputs: Iterable[StagedOutput | Mapping[str, Any]], *,
                    credentials: Credentials | None = None) -> bool:
    """Move a committed run's staged output into its targets (idempotent).

    Returns False when a JDBC output could not be published yet (no credentials at hand); it is
    then retried by the next run that writes to the same table.
    """
    outs = _as_outputs(outputs)
    if not outs:
        return True
    done = True
    for out in outs:
        done = kind_of(out).publish(spark, run_id, out, _creds(credentials, out),
                                    store.settled_runs) and done
    if done:
        store.update_run(run_id, publish_state=PublishState.DONE)
    return done


def discard_outputs(spark: "SparkSession", outputs: Iterable[StagedOutput | Mapping[str, Any]],
                    credentials: Credentials | None = None, run_id: str | None = None) -> bool:
    """Remove the staged output of a run that did not commit. False if some must wait."""
    done = True
    for out in _as_outputs(outputs):
        done = kind_of(out).discard(spark, out, _creds(credentials, out), run_id) and done
    return done


def remove_run_output(spark: "SparkSession", run_id: str,
                      outputs: Iterable[StagedOutput | Mapping[str, Any]],
                      credentials: Credentials | None = None,
                      dry_run: bool = False) -> list[str]:
    """Delete a published run's output from its targets (rollback). Returns what was removed.

    ``dry_run`` changes nothing and returns what would go; with ``spark=None`` (no session, as
    in the CLI's dry runs) a table target, or a JDBC target no Python driver reaches, is
    described rather than listed.

    Example: ``remove_run_output(None, run_id, outputs_of(row), dry_run=True)``
    """
    removed: list[str] = []
    for out in _as_outputs(outputs):
        removed.extend(kind_of(out).remove(spark, run_id, out, _creds(credentials, out),
                                           dry_run))
    return removed


def recover_job_outputs(spark: "SparkSession", store: "StateStore", job_name: str,
                        credentials: Credentials | None = None,
                        only_table: str | None = None,
                        rows: list[dict[str, Any]] | None = None) -> None:
    """Finish what earlier runs of ``job_name`` left half done (called under the job's lease).

    A committed run whose output is not yet published is rolled forward; a run that did not
    commit has its staged output removed; a rolled-back run still marked ``removing`` has its
    output removed (see :mod:`sparkmark.sinks.rollback`).
    ``only_table``: only runs with JDBC output to that
    table (a write that brought the table's credentials).  ``rows``: the runs to recover as
    ``begin_run`` read them under the lease just taken (``RunStart.to_recover``), else read here.
    """
    for row in (store.runs_to_recover(job_name) if rows is None else rows):
        outs = outputs_of(row)
        if row["status"] == RunStatus.ROLLED_BACK and \
                row["publish_state"] == PublishState.REMOVING:
            # a rollback whose removal a crash interrupted: finish it once every target is
            # reachable (files and tables always; JDBC tables when this run brought their
            # credentials)
            if all(kind_of(o).reachable(o, _creds(credentials, o)) for o in outs):
                finish_removals(spark, store, [row], credentials)
            continue
        if only_table is not None:
            if not any(isinstance(o, JdbcOutput) and o.target == only_table for o in outs):
                continue
            outs = [o for o in outs if isinstance(o, JdbcOutput) and o.target == only_table] \
                if row["status"] in RunStatus.undone() else outs
        if row["status"] in RunStatus.progress() and row["publish_state"] == PublishState.PENDING:
            publish_outputs(spark, store, row["run_id"], outs, credentials=credentials)
        elif row["status"] in RunStatus.undone():
            if discard_outputs(spark, outs, credentials, row["run_id"]):
                store.update_run(row["run_id"], publish_state=PublishState.DISCARDED)


# ---------------------------------------------------------------------- rollback removal
def pending_removal(row: dict[str, Any]) -> bool:
    """True for a ledger row whose rollback recorded the intent but not the removal."""
    return (row.get("status") == RunStatus.ROLLED_BACK
            and row.get("publish_state") == PublishState.REMOVING)


def planned_removal(spark: Any, rows: Iterable[dict[str, Any]],
                    properties: Mapping[str, Any] | None = None) -> list[str]:
    """What :func:`finish_removals` would delete for these rows (nothing is changed).
    ``properties``: JDBC credentials by target table (each a mapping, ``url`` optional)."""
    found: list[str] = []
    for r in rows:
        found.extend(remove_run_output(spark, r["run_id"], outputs_of(r), properties,
                                               dry_run=True))
    return found


def finish_removals(spark: Any, store: "StateStore", rows: Iterable[dict[str, Any]],
                    properties: Mapping[str, Any] | None = None,
                    only: Any = None) -> list[str]:
    """Delete the output of rolled-back runs still marked ``removing``, then mark them
    ``removed``. ``only(row)`` may skip rows (e.g. JDBC rows without credentials). Returns what
    was deleted. Safe to call again after a crash."""
    removed: list[str] = []
    for r in rows:
        if not pending_removal(r) or (only is not None and not only(r)):
            continue
        outputs = outputs_of(r)
        removed.extend(remove_run_output(spark, r["run_id"], outputs, properties))
        discard_outputs(spark, outputs, properties, r["run_id"])
        store.update_run(r["run_id"], publish_state=PublishState.REMOVED)
    return removed
