"""The readers: what a schedule left behind, read without Spark: the record ids in a parquet
target (a folder, or objects in a bucket through the S3 API), staged objects, rows of a
PostgreSQL table, and the job's ledger rows and bookmark in the state store.

    from chaos_harness.readers import bookmark_of, ledger_rows
    bookmark_of(state_url)  # {"Version": ..., "JobBookmark": ...}, or None before any run
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from chaos_harness.constants import JOB, PIPELINE


def read_ids(target: Path) -> list[str]:
    """The record ids in a parquet target, with multiplicity (pyarrow skips ``_``/``.`` names:
    the staging folder and markers)."""
    import pyarrow.dataset as ds
    if not target.is_dir() or not any(not n.startswith(("_", ".")) for n in os.listdir(target)):
        return []
    return ds.dataset(str(target), format="parquet").to_table(columns=["id"])["id"].to_pylist()


def read_s3_ids(bucket, prefix: str = "target/") -> list[str]:
    """The record ids in a parquet target in a bucket, read through the S3 API (boto3 lists,
    pyarrow reads each object); keys under a ``_``/``.`` name (staging, markers) are skipped,
    as a parquet reader skips them."""
    import io

    import pyarrow.parquet as pq
    ids: list[str] = []
    for key in bucket.keys(prefix):
        rel = key[len(prefix):]
        if key.endswith("/") or any(p.startswith(("_", ".")) for p in rel.split("/")):
            continue
        ids.extend(pq.read_table(io.BytesIO(_get_settled(bucket, key)),
                                 columns=["id"])["id"].to_pylist())
    return ids


def _get_settled(bucket, key: str, attempts: int = 20) -> bytes:
    """``bucket.get(key)``, asked again while the server answers a 5xx: right after SeaweedFS
    starts again its S3 gateway answers before its volume server has loaded the volumes
    (``InternalError`` on GetObject for ~a second; seen once in CI).  The harness reads what
    is in the bucket; it does not judge the server's warm-up."""
    from botocore.exceptions import ClientError
    for attempt in range(attempts):
        try:
            return bucket.get(key)
        except ClientError as e:
            status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
            if status < 500 or attempt == attempts - 1:
                raise
            time.sleep(0.25)
    raise AssertionError("unreachable")


def s3_staged_keys(bucket, prefix: str = "target/") -> list[str]:
    """Objects left under the target's staging prefix (``_sparkmark_staging/``) or Hadoop's
    ``_temporary/`` (empty "directory" keys ending in ``/``, which SeaweedFS keeps after
    deletes, hold nothing and are not counted)."""
    return [k for k in bucket.keys(prefix) if not k.endswith("/")
            and ("/_sparkmark_staging/" in k or "/_temporary/" in k)]


def read_id_runs(target: Path) -> list[tuple[str, str]]:
    """``(id, sm_run_id)`` of every row in a pipeline module's parquet target."""
    import pyarrow.dataset as ds
    if not target.is_dir() or not any(not n.startswith(("_", ".")) for n in os.listdir(target)):
        return []
    t = ds.dataset(str(target), format="parquet").to_table(columns=["id", "sm_run_id"])
    return list(zip(t["id"].to_pylist(), t["sm_run_id"].to_pylist()))


def pipeline_ledger_rows(state_url: str) -> list[dict]:
    """The pipeline's module runs (all three jobs), oldest first."""
    import sqlalchemy as sa
    engine = sa.create_engine(state_url)
    try:
        with engine.connect() as c:
            if not sa.inspect(c).has_table("sm_runs"):
                return []
            q = sa.text("SELECT run_id, job_name, module_id, status, records_written, "
                        "publish_state, from_ts, until_ts, run_number FROM sm_runs "
                        "WHERE pipeline = :p ORDER BY run_start_ts")
            return [dict(r._mapping) for r in c.execute(q, {"p": PIPELINE})]
    finally:
        engine.dispose()


def table_ids(sa_url: str, table: str) -> list[str]:
    """The ``id`` column of ``table`` (with multiplicity); [] while the table does not exist."""
    import sqlalchemy as sa
    engine = sa.create_engine(sa_url)
    try:
        with engine.connect() as c:
            if not sa.inspect(c).has_table(table):
                return []
            return [r[0] for r in c.execute(sa.text(f"SELECT id FROM {table}"))]
    finally:
        engine.dispose()


def bookmark_of(state_url: str, job: str = JOB) -> dict | None:
    """The job's current bookmark entry (``Version``, ``JobBookmark``, ...), None before the
    job's first run."""
    from sparkmark.core.errors import UnknownJobError
    from sparkmark.state.store import open_store
    store = open_store(state_url)
    try:
        entry = store.bookmark_entry(job)
        return {"Version": entry["Version"], "JobBookmark": entry["JobBookmark"]}
    except UnknownJobError:
        return None
    finally:
        store.engine.dispose()


def ledger_rows(state_url: str) -> list[dict]:
    import sqlalchemy as sa
    engine = sa.create_engine(state_url)
    try:
        with engine.connect() as c:
            q = sa.text("SELECT run_id, status, records_written, publish_state FROM sm_runs "
                        "WHERE job_name = :j ORDER BY run_start_ts")
            return [dict(r._mapping) for r in c.execute(q, {"j": JOB})]
    finally:
        engine.dispose()
