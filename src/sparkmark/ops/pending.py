"""Is there new input past the bookmark? Answered without Spark (list → plan, no read).

A scheduler's sensor asks this before it starts a Spark job: the files under a path that the
job's next run would read (the same listing and band planner as ``job.read.files``, through
``pyarrow``'s file systems instead of Hadoop's), or whether a JDBC table has rows past the
committed key (the same key resolution and upper-bound query as ``job.read.jdbc``, through a
Python driver: pg8000 or PyMySQL). Nothing is read, committed or changed.

    from sparkmark.ops.pending import pending_files, pending_rows

    p = pending_files("orders", "s3a://lake/in/orders", transformation_ctx="orders_src",
                      state="postgresql+psycopg://etl@db/sparkmark",
                      storage_options={"fs.s3a.endpoint": "http://minio:9000"})
    if p.new_input:
        print(p.files, "new files, e.g.", p.sample)

    pending_rows("emp_sync", "jdbc:postgresql://db/hr", "emp", transformation_ctx="emp_src",
                 properties={"user": "etl", "password": pw}).new_input

Give the same ``options`` (``maxBand``, ``exclusions``, ``recurse``, ``boundedFiles``,
``lateFiles``, ...; for JDBC ``bookmark_keys``/``sort_order``) that the job gives its read, so
the answer matches what the run will do. The answer is for an incremental run (bookmarks
enabled): a job run with ``job-bookmark-disable`` reads everything anyway.

With ``fileDiscovery=events`` (and ``queueUrl``) the answer comes from the queue when the next
run would take events: the queue's ``ApproximateNumberOfMessages`` (one
``GetQueueAttributes`` call; no message is received, so none is consumed, made invisible, or
counted towards a dead-letter queue's ``maxReceiveCount``, as a receive with
``VisibilityTimeout=0`` would).  Any visible message says "new input"; it may name only
objects already read, a removal or S3's test event, and the run then ends ``EMPTY`` (a cheap
false positive, never a lost one).  When the next run would list instead (its first run,
after a switch from listing, or ``backfillInterval`` due) the answer is the listing's, as
without events.  ``PendingInput.events`` is the count the queue gave.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from sparkmark.core.clock import Clock, system_clock
from sparkmark.core.errors import ConfigError, UnknownJobError
from sparkmark.planning.bands import BandState, split_options
from sparkmark.state import StateStore, open_store

#: how many file names :attr:`PendingInput.sample` keeps
SAMPLE_SIZE = 10


@dataclass(frozen=True)
class PendingInput:
    """The answer of :func:`pending_files` / :func:`pending_rows` (immutable).

    ``new_input``: a run started now would read something. Files: ``files``, ``bytes``,
    ``sample`` (up to 10 names), ``listed``. JDBC: ``lower`` (the committed key, encoded as in
    the bookmark) and ``upper`` (the table's current highest key). ``bookmark_version``: the
    job's bookmark version the answer was planned against (``None``: the job never ran).

    Example: ``pending_files("orders", "in/orders", transformation_ctx="src").as_dict()``
    """

    job_name: str
    transformation_ctx: str
    source: str                       # "files" | "jdbc"
    new_input: bool
    bookmark_version: int | None
    files: int | None = None
    bytes: int | None = None
    listed: int | None = None
    sample: tuple[str, ...] = field(default_factory=tuple)
    lower: Any = None
    upper: Any = None
    events: int | None = None         # fileDiscovery=events: visible messages in the queue

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for XCom, logs, metadata).

        Example: ``json.dumps(pending.as_dict())``
        """
        return {"job_name": self.job_name, "transformation_ctx": self.transformation_ctx,
                "source": self.source, "new_input": self.new_input,
                "bookmark_version": self.bookmark_version, "files": self.files,
                "bytes": self.bytes, "listed": self.listed, "sample": list(self.sample),
                "lower": self.lower, "upper": self.upper, "events": self.events}


def _committed(state: str | StateStore | None, job_name: str, ctx: str
               ) -> tuple[Mapping[str, Any] | None, int | None]:
    """(the committed element of ``ctx``, the bookmark version) — (None, None) before the
    job's first run."""
    if not isinstance(job_name, str) or not job_name.strip():
        raise ConfigError("job_name must be the sparkmark job's name (as given to Job.init)")
    if not isinstance(ctx, str) or not ctx.strip():
        raise ConfigError("transformation_ctx must name the job's bookmarked source (a read "
                          "without one reads everything, so there is no bookmark to check)")
    store = state if isinstance(state, StateStore) else open_store(state)
    try:
        version = store.current_version(job_name)
    except UnknownJobError:
        return None, None
    element = version.state.get(ctx)
    return (element if isinstance(element, Mapping) else None), version.version


def pending_files(job_name: str, path: str | Sequence[str], *, transformation_ctx: str,
                  state: str | StateStore | None = None,
                  options: Mapping[str, Any] | None = None,
                  storage_options: Mapping[str, str] | None = None,
                  clock: Clock | None = None) -> PendingInput:
    """The files under ``path`` that the job's next incremental run would read.

    ``storage_options``: s3a's Hadoop keys for S3 paths (``fs.s3a.endpoint``,
    ``fs.s3a.access.key``, ``fs.s3a.secret.key``, ``fs.s3a.path.style.access``, per-bucket
    keys too); without them ``pyarrow`` uses the ``AWS_*`` variables. Reader options in
    ``options`` (``header``, ...) are ignored.

    Example::

        pending_files("orders", "data/in/orders", transformation_ctx="orders_src",
                      options={"exclusions": ["**.tmp"]}).files
    """
    from sparkmark.engine.fs import ArrowFS
    from sparkmark.planning.events import backfill_due, check_event_paths, split_event_options
    from sparkmark.sources.files import plan_pending

    ev_opts, options = split_event_options(options)
    opts, _reader = split_options(options)
    element, version = _committed(state, job_name, transformation_ctx)
    previous = BandState.from_element(element) if element is not None else None
    paths = [path] if isinstance(path, str) else [str(p) for p in path]
    if not paths or not all(isinstance(p, str) and p.strip() for p in paths):
        raise ConfigError("path must be a non-empty path (or a list of them)")
    now = int((clock or system_clock)())
    if ev_opts.enabled:
        check_event_paths(paths, opts)
        if not backfill_due(previous, now, ev_opts)[0]:  # the next run takes events
            from sparkmark.sources.file_events import EventQueue
            assert ev_opts.queue_url is not None
            count = EventQueue.open(ev_opts.queue_url).approximate_count()
            return PendingInput(job_name, transformation_ctx, "files", count > 0, version,
                                events=count)
    fs_for: Callable[[str], Any] = functools.partial(
        ArrowFS, s3_conf=dict(storage_options) if storage_options else None)
    listing, _plan, selected = plan_pending(paths, previous, now, opts, fs_for)
    return PendingInput(job_name, transformation_ctx, "files", bool(selected), version,
                        files=len(selected), bytes=sum(f.size for f in selected),
                        listed=len(listing.entries),
                        sample=tuple(f.path.rsplit("/", 1)[-1]
                                     for f in selected[:SAMPLE_SIZE]))


def pending_rows(job_name: str, url: str, table: str, *, transformation_ctx: str,
                 state: str | StateStore | None = None,
                 bookmark_keys: Sequence[str] | None = None, sort_order: str = "asc",
                 properties: Mapping[str, Any] | None = None,
                 options: Mapping[str, Any] | None = None) -> PendingInput:
    """Whether ``table`` has rows past the job's committed bookmark key (one upper-bound
    query through a Python driver; PostgreSQL and MySQL/MariaDB).

    Example::

        pending_rows("emp_sync", "jdbc:postgresql://db:5432/hr", "emp",
                     transformation_ctx="emp_src", bookmark_keys=["empno"],
                     properties={"user": "etl", "password": pw}).new_input
    """
    from sparkmark.planning import keyrange as kr
    from sparkmark.sources.jdbc import plan_pending

    element, version = _committed(state, job_name, transformation_ctx)
    src = plan_pending(url, table, transformation_ctx, element, bookmark_keys=bookmark_keys,
                       sort_order=sort_order, properties=dict(properties or {}),
                       options=dict(options or {}))
    return PendingInput(job_name, transformation_ctx, "jdbc", bool(src.plan.new_input), version,
                        lower=kr.encode_key(src.types, src.plan.after),
                        upper=kr.encode_key(src.types, src.plan.through))
