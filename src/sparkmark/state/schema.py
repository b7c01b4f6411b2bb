"""The state store's tables (SQLAlchemy Core) and their versioned upgrades.

Schema history:
  1. sm_meta, sm_jobs, sm_bookmark_versions, sm_runs.
  2. sm_files: the per-file audit (which committed run read which file), with a retention.
  3. sm_targets: which jobs staged output for which target (filled from sm_runs' outputs on
     upgrade), so a write's "does another job write this target?" is an index lookup instead of
     a scan of every run's outputs (34 ms per write at 100,000 runs); and index
     ix_sm_runs_publish, so an init's "runs left to publish" is one too (21 ms at 50,000 runs
     of the job).
  4. index ix_sm_runs_status (job_name, status), so that a run's begin can tell in a few index
     lookups, however long the job's history, whether a ledger row holds a status sparkmark
     does not know (edited by hand) and refuse to start.
  5. what a pipeline run plans from, in index lookups however long the ledger: ix_sm_runs_status
     gains run_number (descending), run_start_ts and attempt (a module's latest committed run
     is the first entry of a range, not a sort of all its runs); sm_runs gains target_key (the
     module's pipeline and target, hashed) and take_over_from, filled from each pipeline run's
     config on upgrade, with indexes ix_sm_runs_target and ix_sm_runs_takeover, so that a
     target's owner is found from its first committed write and each hand-off, not by parsing
     the config of every committed run of the pipeline; ix_sm_runs_start and
     ix_sm_runs_pipeline, so that the report's newest runs (of the store, of a pipeline) are
     the end of an index range, not a sort of every run.

To change the schema: bump ``SCHEMA_VERSION`` and add a function to ``UPGRADES`` that takes a
connection at version N-1 to N.  ``ensure_schema`` applies the missing steps in one transaction
on first use, so users never upgrade by hand.
"""
from __future__ import annotations

import json
from typing import Callable

from sqlalchemy import (BigInteger, Column, Connection, Index, Integer, MetaData, String, Table,
                        Text, bindparam, inspect, select)

from sparkmark.planning.bands import path_hash

SCHEMA_VERSION = 5

metadata = MetaData()

meta = Table(
    "sm_meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

# One row per job: the pointer to its current bookmark version, its counters and its lease.
jobs = Table(
    "sm_jobs", metadata,
    Column("job_name", String(255), primary_key=True),
    Column("current_version", Integer, nullable=False),
    Column("run_number", Integer, nullable=False),      # successful runs so far
    Column("attempt", Integer, nullable=False),         # failed attempts since the last success
    Column("last_run_id", String(32)),                  # the latest successful run
    Column("active_run_id", String(32)),                # the run holding the lease, if any
    Column("lease_host", String(255)),
    Column("lease_pid", Integer),
    Column("lease_expires_ts", BigInteger),
    Column("created_ts", BigInteger, nullable=False),
)

# Every committed bookmark, forever (this is what makes rewind possible).
versions = Table(
    "sm_bookmark_versions", metadata,
    Column("job_name", String(255), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("kind", String(16), nullable=False),         # commit | reset | rewind | rollback
    Column("run_id", String(32)),                       # the committing run (kind=commit)
    Column("previous_run_id", String(32)),
    Column("source_run_id", String(32)),                # rewind target
    Column("run_number", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("created_ts", BigInteger, nullable=False),
    Column("state", Text, nullable=False),              # JSON {transformation_ctx: element}
)

# The ledger (Overwatch's pipeline report): one row per run of a job or pipeline module.
runs = Table(
    "sm_runs", metadata,
    Column("run_id", String(32), primary_key=True),
    Column("job_name", String(255), nullable=False),
    Column("pipeline", String(255)),
    Column("pipeline_run_id", String(32)),
    Column("module_id", Integer),
    Column("module_name", String(255)),
    Column("layer", String(64)),
    Column("run_number", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("error", Text),
    Column("bookmark_option", String(32), nullable=False),
    Column("start_version", Integer, nullable=False),
    Column("end_version", Integer),
    Column("run_start_ts", BigInteger, nullable=False),
    Column("run_end_ts", BigInteger),
    Column("from_ts", BigInteger),
    Column("until_ts", BigInteger),
    Column("snapshot_ts", BigInteger, nullable=False),
    Column("records_read", BigInteger),
    Column("records_written", BigInteger),
    Column("config", Text),                             # JSON
    Column("outputs", Text),                            # JSON list of staged outputs (sinks)
    Column("publish_state", String(16)),                # None | pending | done | discarded
    Column("host", String(255)),
    Column("pid", Integer),
    # a pipeline module's run: path_hash of its pipeline and target (planning.windows.target_key)
    # and the job it declared it takes that target over from (schema 5, from config.pipeline)
    Column("target_key", String(16)),
    Column("take_over_from", String(255)),
    Index("ix_sm_runs_job", "job_name", "run_start_ts"),
    Index("ix_sm_runs_module", "pipeline", "module_id", "run_start_ts"),
    # every init looks up its job's runs with output still to publish or discard (schema 3:
    # without it that scanned all the job's runs, 21 ms at 50,000)
    Index("ix_sm_runs_publish", "job_name", "publish_state"),
    # a target's first committed write, and each hand-off of it (schema 5): in write order
    Index("ix_sm_runs_target", "target_key", "status", "run_start_ts", "run_number", "job_name"),
    Index("ix_sm_runs_takeover", "target_key", "take_over_from", "status", "run_start_ts",
          "run_number", "job_name"),
    # the report's newest runs, of the whole store or of one pipeline (schema 5): the end of an
    # index range, not a sort of every row
    Index("ix_sm_runs_start", "run_start_ts"),
    Index("ix_sm_runs_pipeline", "pipeline", "run_start_ts"),
)
# Every begin checks that no row of its job has a status sparkmark does not know (schema 4); a
# pipeline run's planning reads each module's latest committed run, the first of equal numbers
# to start: the first entry of the (job, status) range in this order (schema 5).
Index("ix_sm_runs_status", runs.c.job_name, runs.c.status, runs.c.run_number.desc(),
      runs.c.run_start_ts, runs.c.attempt)

# The per-file audit: one row per file a committed run read, written in the commit's own
# transaction (a read of 100,000 files or more: ahead of it, counted only once the run commits,
# StateStore.stage_files) and deleted after the job's retention (default 30 days), so it stays
# bounded.
files = Table(
    "sm_files", metadata,
    Column("job_name", String(255), nullable=False),
    Column("ctx", String(255), nullable=False),          # "" for a source without one
    Column("path", Text, nullable=False),
    Column("path_hash", String(16), nullable=False),     # sha1(path)[:16]: the indexed key
    Column("run_id", String(32), nullable=False),
    Column("size", BigInteger),
    Column("mtime", BigInteger),
    Column("kind", String(16), nullable=False),          # new | late | rewrite
    Column("read_ts", BigInteger, nullable=False),       # the run's commit time
    Index("ix_sm_files_path", "job_name", "path_hash"),  # a path can outgrow an index row
    Index("ix_sm_files_run", "run_id"),
    Index("ix_sm_files_age", "job_name", "read_ts"),
)


# Which jobs wrote which target: one row per (target, job), added in the transaction that records
# a run's first staged output there.  A job's own rollback never removes its row (the job did
# write the target once); rows go only with the store.
targets = Table(
    "sm_targets", metadata,
    Column("target_hash", String(16), primary_key=True),  # path_hash(target): the indexed key
    Column("job_name", String(255), primary_key=True),
    Column("target", Text, nullable=False),               # a target can outgrow an index row
    Column("first_run_id", String(32), nullable=False),
)


def output_targets(outputs: str | None) -> list[str]:
    """The targets named in a run's ``outputs`` JSON (``sm_runs.outputs``), in order, once
    each; nothing for a missing or malformed value.

    >>> output_targets('[{"target": "file:/out"}, {"target": "file:/out"}, {"x": 1}]')
    ['file:/out']
    """
    try:
        records = json.loads(outputs or "[]")
        found = [r.get("target") for r in records if isinstance(r, dict)]
    except (TypeError, ValueError, AttributeError):
        return []
    return list(dict.fromkeys(t for t in found if isinstance(t, str)))


def _add_files_table(conn: Connection) -> None:
    files.create(conn)


def _add_targets_table(conn: Connection) -> None:
    """Create ``sm_targets`` and fill it from the ledger: every (target, job) a run's outputs
    name, with the first run that named it; and index ``ix_sm_runs_publish``."""
    next(ix for ix in runs.indexes if ix.name == "ix_sm_runs_publish").create(conn)
    targets.create(conn)
    seen: set[tuple[str, str]] = set()
    batch: list[dict[str, str]] = []
    q = (select(runs.c.job_name, runs.c.run_id, runs.c.outputs)
         .where(runs.c.outputs.isnot(None)).order_by(runs.c.run_start_ts, runs.c.run_id))
    for job_name, run_id, outputs in conn.execute(q):
        for target in output_targets(outputs):
            key = (path_hash(target), job_name)
            if key not in seen:
                seen.add(key)
                batch.append({"target_hash": key[0], "job_name": job_name, "target": target,
                              "first_run_id": run_id})
    for i in range(0, len(batch), 5_000):
        conn.execute(targets.insert(), batch[i:i + 5_000])


def _add_status_index(conn: Connection) -> None:
    # checkfirst: a store set back to an older version by hand may still have it
    next(ix for ix in runs.indexes if ix.name == "ix_sm_runs_status").create(conn, checkfirst=True)


def pipeline_write(config: str | None) -> tuple[str | None, str | None]:
    """``(target_key, take_over_from)`` of a pipeline module run from its ``config`` JSON
    (``sm_runs.config``), as ``begin_run`` stores them; ``(None, None)`` for a plain job's run
    or a config that is missing, malformed or names no target.

    >>> pipeline_write('{"pipeline": {"name": "p", "target": "/t/", "take_over_from": "p.1"}}')
    ('7fdcf1c77c0986b5', 'p.1')
    """
    from sparkmark.planning.windows import target_key
    try:
        cfg = json.loads(config or "{}").get("pipeline") or {}
        name, target, tof = cfg.get("name"), cfg.get("target"), cfg.get("take_over_from")
    except (TypeError, ValueError, AttributeError):
        return None, None
    if not isinstance(name, str) or not isinstance(target, str) or not target:
        return None, None
    return target_key(name, target), tof if isinstance(tof, str) else None


def _add_pipeline_write_columns(conn: Connection) -> None:
    """sm_runs.target_key and take_over_from, filled from every pipeline run's config; the
    indexes a pipeline run plans with (ix_sm_runs_status gains run_number, descending)."""
    have = {c["name"] for c in inspect(conn).get_columns("sm_runs")}
    for name, kind in (("target_key", "VARCHAR(16)"), ("take_over_from", "VARCHAR(255)")):
        if name not in have:  # a store set back to an older version by hand may have them
            conn.exec_driver_sql(f"ALTER TABLE sm_runs ADD COLUMN {name} {kind}")
    conn.exec_driver_sql("DROP INDEX IF EXISTS ix_sm_runs_status")
    for ix in runs.indexes:
        if ix.name in ("ix_sm_runs_status", "ix_sm_runs_target", "ix_sm_runs_takeover",
                       "ix_sm_runs_start", "ix_sm_runs_pipeline"):
            ix.create(conn, checkfirst=True)
    q = (select(runs.c.run_id, runs.c.config)
         .where(runs.c.pipeline.isnot(None), runs.c.config.isnot(None)))
    batch: list[dict[str, str | None]] = []
    update = (runs.update().where(runs.c.run_id == bindparam("b_run"))
              .values(target_key=bindparam("b_key"), take_over_from=bindparam("b_tof")))
    for run_id, config in conn.execute(q).fetchall():
        key, tof = pipeline_write(config)
        if key is not None:
            batch.append({"b_run": run_id, "b_key": key, "b_tof": tof})
    for i in range(0, len(batch), 5_000):
        conn.execute(update, batch[i:i + 5_000])


UPGRADES: dict[int, Callable[[Connection], None]] = {
    2: _add_files_table,
    3: _add_targets_table,
    4: _add_status_index,
    5: _add_pipeline_write_columns,
}


def current_schema_version(conn: Connection) -> int | None:
    if not inspect(conn).has_table("sm_meta"):
        return None
    value = conn.execute(select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        from sparkmark.core.errors import StateCorruptError
        raise StateCorruptError(
            f"the state store's schema_version is {str(value)[:40]!r}, not a number (edited in "
            "the store?); nothing was changed. Set it back to the version this sparkmark wrote "
            f"({SCHEMA_VERSION}) in table sm_meta, or restore the store from a backup") from None


#: the store's id in ``sm_meta`` (one row), for every reader of it
STORE_ID_QUERY = select(meta.c.value).where(meta.c.key == "store_id")


def store_id(conn: Connection) -> str | None:
    """The store's identity: a random id written once when the store is created, so a run can
    tell at commit that it still talks to the store it began on (not a deleted, truncated or
    replaced file)."""
    if not inspect(conn).has_table("sm_meta"):
        return None
    return conn.execute(STORE_ID_QUERY).scalar()


def read_store_id(conn: Connection) -> str | None:
    """:func:`store_id` in one query, for a store this process has opened (the begin and
    commit checks): a missing ``sm_meta`` table raises the driver's error (``DBAPIError``)
    instead of being looked up first (the reflection cost a query and ~0.4 ms of Python on
    every begin and commit)."""
    return conn.execute(STORE_ID_QUERY).scalar()


def _ensure_store_id(conn: Connection) -> None:
    if conn.execute(STORE_ID_QUERY).scalar() is None:
        import uuid
        conn.execute(meta.insert().values(key="store_id", value=uuid.uuid4().hex))


def _refuse_newer(found: int, what: str) -> None:
    if found > SCHEMA_VERSION:
        from sparkmark.core.errors import StateStoreError
        raise StateStoreError(
            f"{what} has schema version {found}, newer than this sparkmark supports "
            f"({SCHEMA_VERSION}); upgrade sparkmark (pip install -U sparkmark)")


def check_readable(conn: Connection, display_url: str) -> None:
    """For read-only commands: the schema as it is, neither created nor upgraded; a store that
    is missing, older or newer is a clear error.  Example: ``check_readable(conn, url)``"""
    from sparkmark.core.errors import StateStoreError
    found = current_schema_version(conn)
    if found is None:
        raise StateStoreError(
            f"{display_url} holds no sparkmark state store; check --state "
            "/ SPARKMARK_STATE (this command only reads and creates nothing)")
    _refuse_newer(found, f"the state store {display_url}")
    if found < SCHEMA_VERSION:
        raise StateStoreError(
            f"the state store {display_url} has schema version {found}, older than this "
            f"sparkmark's ({SCHEMA_VERSION}); this command only reads, so it does not upgrade "
            "it: run a job once to upgrade the store")


def ensure_schema(conn: Connection) -> int:
    """Create or upgrade the schema inside the caller's transaction; return the version found."""
    if conn.dialect.name == "postgresql":  # first use by several processes at once: one at a time
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(72006513)")
    found = current_schema_version(conn)
    if found is None:
        metadata.create_all(conn)
        conn.execute(meta.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
        _ensure_store_id(conn)
        return 0
    _refuse_newer(found, "the state store")
    for step in range(found + 1, SCHEMA_VERSION + 1):
        UPGRADES[step](conn)
        conn.execute(meta.update().where(meta.c.key == "schema_version").values(value=str(step)))
    _ensure_store_id(conn)
    return found
