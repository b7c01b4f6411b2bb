"""Moving a bookmark on purpose (``sparkmark bookmark set``) and releasing a stuck run
(``sparkmark bookmark release``). Called through :class:`sparkmark.Bookmarks`::

    bm.set("orders", "src", after="2024-05-01T00:00:00Z")      # files: start after a time
    bm.set("orders", "src", processed=["s3a://b/in/bad.json"])  # files: skip these files
    bm.set("orders_db", "orders", after_key=["1000"])           # JDBC: start after this key
    bm.set("orders_ice", "src", snapshot=4711)                  # tables: after this snapshot
    bm.set("new_job", "src", after="2024-05-01T00:00:00Z")     # a job that never ran here
    bm.release("orders")                                        # end a run that never will

Each ``set`` writes a new version of kind ``set`` (history kept) holding the current state with
one context's element moved. The element's kind decides what can be given: ``after`` /
``processed`` for a file source, ``after_key`` for a JDBC source, ``snapshot`` for a table
source. ``ctx`` must be one the job's bookmark knows (``new_ctx=True`` / ``--new-ctx`` for one
no run has read yet); a job that has never run in this store (a cut-over from Glue) is created
with that one element and starts from it. Bad input raises one clear
:class:`~sparkmark.core.errors.ConfigError` and changes nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from sparkmark.core.errors import ConfigError, PipelineError, UnknownJobError
from sparkmark.planning.bands import DEFAULT_MAX_BAND_MS, STATE_KIND, STATE_VERSION, path_hash
from sparkmark.planning.keyrange import SOURCE_KIND, canonical
from sparkmark.state import StateStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def element_kind(element: Any) -> str | None:
    """``"files"``, ``"jdbc"``, ``"table"``, or None for an element of none of these kinds (or
    none at all)."""
    if not isinstance(element, dict):
        return None
    if element.get("source") == SOURCE_KIND:
        return "jdbc"
    if set(element) == {"table", "snapshot_id"} or set(element) == {"table", "version",
                                                                     "table_id"}:
        return "table"  # an Iceberg snapshot, or a Delta version
    if element.get("kind", None) == STATE_KIND:
        return "files"
    return None


def _spark(spark: "SparkSession | None") -> Any:
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from sparkmark.engine.spark import local_session
    return local_session("sparkmark-bookmark-set")


def _processed_entries(paths: Sequence[str], spark: "SparkSession | None",
                       roots: Sequence[str] = ()) -> dict[str, int]:
    """``{path_hash: mtime}`` of the given files, by the same qualified paths listings use
    (spelled under the source's ``roots`` when known; a file under none is refused)."""
    from sparkmark.engine.fs import HadoopFS
    sp = _spark(spark)
    out: dict[str, int] = {}
    for raw in paths:
        try:
            fs = HadoopFS(sp, raw)
            found = fs.status_of(fs.qualify(raw))
        except Exception as e:  # noqa: BLE001 - bad scheme or URI
            raise ConfigError(f"cannot open --processed path {raw!r}: "
                              f"{str(e).splitlines()[0][:200]}") from None
        if not found:
            raise ConfigError(f"--processed path {raw!r} does not exist; give existing input "
                              "files (their modification time is what the bookmark keeps)")
        path, is_dir, _size, mtime = found[0]
        if is_dir:
            raise ConfigError(f"--processed path {raw!r} is a directory; give the files in it "
                              "(or use --after TIME to skip everything up to a time)")
        if roots:
            spelled = _spelled_under(path, roots, fs)
            if spelled is None:
                raise ConfigError(f"--processed path {raw!r} is not under the source's path "
                                  f"({', '.join(roots)}), so no run would ever list it; give "
                                  "the file as it lies under that path")
            path = spelled
        out[path_hash(path)] = mtime
    return out


def new_element(current: Any, ctx: str, *, after: Any = None,
                processed: Sequence[str] | None = None, after_key: Sequence[Any] | None = None,
                spark: "SparkSession | None" = None, now: int | None = None,
                roots: Sequence[str] = (), snapshot: Any = None) -> dict[str, Any]:
    """The element ``ctx`` gets; ``current`` is its element now (None: none yet).  ``now``
    (ms): an ``after`` time later than it is refused; ``roots``: the source's paths as its
    last run listed them, which ``processed`` files are spelled under."""
    given = [n for n, v in (("--after", after), ("--processed", processed),
                            ("--after-key", after_key), ("--snapshot", snapshot))
             if v not in (None, [], ())]
    if len(given) != 1:
        raise ConfigError("give exactly one of --after TIME, --processed PATH... (file sources), "
                          "--after-key VALUE... (JDBC sources) or --snapshot ID (table sources)"
                          + (f"; got {', '.join(given)}" if given else ""))
    kind = element_kind(current)
    if current is not None and kind is None:
        raise ConfigError(f"transformation_ctx {ctx!r} holds an element sparkmark cannot edit "
                          f"({str(current)[:80]}); reset the bookmark instead")
    if snapshot is not None:
        if kind != "table":
            raise ConfigError(
                f"--snapshot is for table sources, but transformation_ctx {ctx!r} "
                + (f"holds a {kind} bookmark" if kind else "has no bookmark yet: run the job "
                   "once so its table is known, then set it"))
        try:
            sid = int(str(snapshot).strip())
        except ValueError:
            raise ConfigError(f"--snapshot {snapshot!r} is not a snapshot id (an integer, as "
                              "`SELECT snapshot_id FROM catalog.db.table.snapshots` shows "
                              "them)") from None
        # the next run checks that it is an ancestor of the table's current snapshot (Iceberg)
        # or reads the commits after that version (Delta)
        if "version" in current:
            if sid < 0:
                raise ConfigError(f"--snapshot {snapshot!r}: a Delta table's versions start "
                                  "at 0 (DESCRIBE HISTORY shows them)")
            return dict(current, version=sid)
        return dict(current, snapshot_id=sid)
    if kind == "table":
        raise ConfigError(f"transformation_ctx {ctx!r} holds a table bookmark (table "
                          f"{current.get('table')}); use --snapshot ID")
    if after_key is not None and after_key != []:
        if kind != "jdbc":
            raise ConfigError(
                f"--after-key is for JDBC sources, but transformation_ctx {ctx!r} "
                + ("holds a file-source bookmark; use --after TIME or --processed PATH"
                   if kind == "files" else "has no bookmark yet: run the job once so its key "
                   "columns and types are known, then set it"))
        keys, types = list(current.get("keys") or []), list(current.get("key_types") or [])
        values = list(after_key)
        if len(values) != len(keys):
            raise ConfigError(f"transformation_ctx {ctx!r} has bookmark keys {keys}: give "
                              f"{len(keys)} --after-key value(s), one per key, not "
                              f"{len(values)}")
        try:
            last = [canonical(t, v) for t, v in zip(types, values)]
        except ValueError as e:
            raise ConfigError(f"bad --after-key for keys {keys} (types {types}): {e}") from None
        return dict(current, last=last)
    if kind == "jdbc":
        raise ConfigError(f"transformation_ctx {ctx!r} holds a JDBC bookmark (keys "
                          f"{current.get('keys')}); use --after-key VALUE")
    base = dict(current) if current else {"kind": STATE_KIND, "v": STATE_VERSION, "low": None,
                                          "high": None, "listing_ts": None,
                                          "band": DEFAULT_MAX_BAND_MS, "files": {}}
    if after is not None:
        from sparkmark.planning.windows import parse_time
        try:
            ts = parse_time(after, "UTC", what="--after time")
        except PipelineError as e:
            raise ConfigError(str(e)) from None
        if now is not None and ts > now:
            from sparkmark.core.clock import format_ts
            raise ConfigError(
                f"--after {after} is in the future (now is {format_ts(now, 'UTC')}): every file "
                "modified until then would count as processed and never be read; give a time "
                "up to now")
        # every file with mtime <= ts counts as processed; everything newer is read next time
        return dict(base, low=ts, high=ts, listing_ts=ts, files={})
    files: dict[str, Any] = dict(base.get("files") or {})  # type: ignore[arg-type]
    files.update(_processed_entries(list(processed or []), spark, roots))
    return dict(base, files=dict(sorted(files.items())))


def source_roots(store: StateStore, job_name: str, ctx: str) -> list[str]:
    """The input paths the newest run that read ``ctx`` listed (from its ledger config), or
    ``[]``: ``source_roots(store, "orders", "src") == ["s3a://b/in"]``."""
    import json
    for row in reversed(store.list_runs(job_name=job_name)):
        try:
            info = (json.loads(row.get("config") or "{}").get("sources") or {}).get(ctx)
        except (TypeError, ValueError, AttributeError):
            continue
        if isinstance(info, dict) and info.get("path"):
            path = info["path"]
            return [str(p) for p in (path if isinstance(path, list) else [path])]
    return []


def _spelled_under(path: str, roots: Sequence[str], fs: Any) -> str | None:
    """``path`` (qualified) spelled under the first root it lies in, the way a listing of that
    root names it: local paths are compared by their real location (symbolic links and ``..``
    resolved), so a file given through a linked folder still matches; None if under none."""
    import os
    for raw_root in roots:
        try:
            root = str(fs.qualify(raw_root).toString()).rstrip("/")
        except Exception:  # noqa: BLE001 - a root of another scheme
            continue
        if path == root or path.startswith(root + "/"):
            return path
        if path.startswith("file:") and root.startswith("file:"):
            real = os.path.realpath(path[5:])
            real_root = os.path.realpath(root[5:])
            if real.startswith(real_root.rstrip("/") + "/"):
                return f"{root}/{real[len(real_root.rstrip('/')) + 1:]}"
    return None


def known_contexts(store: StateStore, job_name: str) -> list[str]:
    """The transformation_ctx names any bookmark version of the job holds (sorted; ``[]``
    for a job with no bookmark yet): ``known_contexts(store, "orders") == ["src"]``."""
    seen: set[str] = set()
    for version in store.history(job_name):
        seen.update(version.state)
    return sorted(seen)


def set_bookmark(store: StateStore, job_name: str, ctx: str, *, now: int, after: Any = None,
                 processed: Sequence[str] | None = None, after_key: Sequence[Any] | None = None,
                 spark: "SparkSession | None" = None, snapshot: Any = None,
                 new_ctx: bool = False) -> int:
    """``Bookmarks.set``: validate, then write the new version (kind ``set``).

    ``ctx`` must be a context the job's bookmark knows (one of its versions holds it), unless
    the job has no bookmark yet (any ctx: nothing to check against) or ``new_ctx`` says it is
    a context no run has read yet.  A job that has never run in this store (a cut-over from
    Glue) is created with this one element, so its first run starts from it.
    """
    if not isinstance(ctx, str) or not ctx.strip():
        raise ConfigError("--ctx needs the transformation_ctx whose element to set")
    try:
        current = store.current_version(job_name)
    except UnknownJobError:
        current = None  # never ran here: seed its bookmark
    if current is not None and ctx not in current.state and not new_ctx:
        known = known_contexts(store, job_name)
        if known and ctx not in known:
            raise ConfigError(
                f"job {job_name!r} has no transformation_ctx {ctx!r}; its bookmark knows "
                f"{', '.join(repr(k) for k in known)}. Nothing was changed. Give one of those "
                "(the transformation_ctx of the read), or add --new-ctx to seed a context no "
                "run has read yet")
    element = new_element(None if current is None else current.state.get(ctx), ctx,
                          after=after, processed=processed, after_key=after_key, spark=spark,
                          now=now, snapshot=snapshot,
                          roots=source_roots(store, job_name, ctx)
                          if processed and current is not None else ())
    if current is None:
        return store.seed_bookmark(job_name, ctx, element, now=now)
    return store.set_element(job_name, ctx, element, now=now, expect_version=current.version)
