"""Airflow operators and a sensor for sparkmark jobs (``pip install 'sparkmark[airflow]'``).

- :class:`SparkmarkJobOperator` runs a job script as Glue would (``--JOB_NAME``,
  ``--job-bookmark-option``, job arguments), with ``python`` or ``spark-submit``, and returns the
  run's ledger row(s) through XCom: run id, status, records and files read and written, bookmark
  version before and after, the window. A FAILED run fails the task; ``skip_on_empty`` skips it
  when the run found nothing new (EMPTY). With ``report_dir`` it writes the job's HTML run page
  and links it from the task ("sparkmark run page").
- :class:`SparkmarkPipelineOperator` runs a pipeline file (``sparkmark run``) the same way; a
  FAILED module, or one SKIPPED by a failed dependency, fails the task.
- :class:`SparkmarkInputSensor` waits for new input past the bookmark without starting Spark
  (:mod:`sparkmark.ops.pending`: files listed through the same planner, or a JDBC table's upper
  bound); ``deferrable=True`` waits in the triggerer instead of a worker slot.
- :class:`SparkmarkResetOperator` and :class:`SparkmarkRollbackOperator`: ``bookmark reset``
  and pipeline ``rollback`` for backfills (``dry_run`` shows what would happen).

The state store is ``state=`` (a SQLAlchemy URL), or an Airflow connection ``state_conn_id``
(postgres or sqlite; or any type whose extra holds ``{"url": "..."}``), else sparkmark's default
(env ``SPARKMARK_STATE``). Jobs run in a child process that gets the store through
``SPARKMARK_STATE``, never on its command line; a ``spark-submit`` launch also gets it as the
Spark conf ``spark.sparkmark.state`` (and ``spark.sparkmark.state.password``) in a properties
file only the worker's user can read, so that a cluster-mode driver finds it too.

Example DAG::

    from sparkmark.integrations.airflow import SparkmarkInputSensor, SparkmarkJobOperator

    with DAG("orders", schedule="@hourly", start_date=datetime(2026, 1, 1), catchup=False):
        wait = SparkmarkInputSensor(task_id="wait", job_name="orders",
                                    transformation_ctx="orders_src", path="s3a://lake/in/orders",
                                    state_conn_id="sparkmark_state", deferrable=True)
        run = SparkmarkJobOperator(task_id="run", script="/opt/jobs/orders.py",
                                   job_name="orders", state_conn_id="sparkmark_state",
                                   job_args={"--input": "s3a://lake/in/orders"},
                                   skip_on_empty=True, report_dir="/srv/sparkmark")
        wait >> run

See docs/orchestrators.md.
"""
from __future__ import annotations

import asyncio
import collections
import os
import socket
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence

from airflow.sdk import BaseHook, BaseOperator, BaseOperatorLink, BaseSensorOperator
from airflow.sdk.exceptions import AirflowException, AirflowSkipException
from airflow.triggers.base import BaseTrigger, TriggerEvent

from sparkmark.core.secrets import mask_url
from sparkmark.state.ledger import run_summary
from sparkmark.integrations.spark_submit import (script_location, spark_submit_properties,
                                                 split_properties_file)
from sparkmark.state import StateStore, open_store

FAILED, SKIPPED, EMPTY = "FAILED", "SKIPPED", "EMPTY"
RUN_PAGE_KEY = "sparkmark_run_page"   # the XCom the run-page link reads
_TAIL = 30                            # lines of the child's output kept for the error text
_BOOKMARK_OPTIONS = ("job-bookmark-enable", "job-bookmark-disable", "job-bookmark-pause")
_STATE_TYPES = "postgres or sqlite"


def state_url_from_connection(conn_id: str) -> str:
    """The state store URL an Airflow connection names: its extra's ``url``, else built from
    its type (``postgres`` → ``postgresql+psycopg``, ``sqlite`` → ``sqlite:///<host>``),
    login, password, host, port and schema. The store is SQLite or PostgreSQL: any other type
    (``mysql`` included) without an extra ``url`` is refused with one error.

    Example: ``state_url_from_connection("sparkmark_state")``
    """
    from sqlalchemy.engine import URL

    conn = BaseHook.get_connection(conn_id)
    extra = conn.extra_dejson or {}
    if extra.get("url"):
        return str(extra["url"])
    kind = (conn.conn_type or "").lower()
    if kind == "sqlite":
        return f"sqlite:///{conn.host}"
    drivers = {"postgres": "postgresql+psycopg", "postgresql": "postgresql+psycopg"}
    if kind not in drivers:
        also = (" (MySQL and MariaDB work as JDBC sources and targets, not as the state store)"
                if kind in ("mysql", "mariadb") else "")
        raise AirflowException(
            f"connection {conn_id!r} has type {conn.conn_type!r}: the sparkmark state store is "
            f"SQLite or PostgreSQL{also}; use a {_STATE_TYPES} connection, or any connection "
            'whose extra holds {"url": "<SQLAlchemy URL>"}')
    url = URL.create(drivers[kind], username=conn.login or None,
                     password=conn.password or None, host=conn.host or None,
                     port=conn.port or None, database=conn.schema or None)
    return url.render_as_string(hide_password=False)


def _state(state: str | None, state_conn_id: str | None) -> str | None:
    if state and state_conn_id:
        raise AirflowException("give state= or state_conn_id=, not both")
    return state_url_from_connection(state_conn_id) if state_conn_id else state


def _store(url: str | None) -> StateStore:
    return open_store(url)


def _glue_args(job_args: Mapping[str, Any] | Sequence[str] | None) -> list[str]:
    """``{"--input": "x", "day": 3}`` → ``["--input", "x", "--day", "3"]`` (Glue's spelling)."""
    if job_args is None:
        return []
    if isinstance(job_args, Mapping):
        out: list[str] = []
        for k, v in job_args.items():
            out += [str(k) if str(k).startswith("--") else f"--{k}", str(v)]
        return out
    if isinstance(job_args, str):
        raise AirflowException("job_args must be a dict ({'--input': 'path'}) or a list of "
                               "arguments, not a string")
    return [str(a) for a in job_args]


class SparkmarkRunLink(BaseOperatorLink):
    """The "sparkmark run page" button on a task: the HTML run page the operator wrote (its
    ``report_url``, else a ``file://`` URL). Example: ``operator_extra_links =
    (SparkmarkRunLink(),)``"""

    name = "sparkmark run page"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        from airflow.sdk.execution_time.xcom import XCom
        return str(XCom.get_value(ti_key=ti_key, key=RUN_PAGE_KEY) or "")


class _RunsChild(BaseOperator):
    """What the job and pipeline operators share: the child process and its ledger rows."""

    def __init__(self, *, state: str | None = None, state_conn_id: str | None = None,
                 env: Mapping[str, str] | None = None, skip_on_empty: bool = False,
                 report_dir: str | None = None, report_url: str | None = None,
                 python: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.state, self.state_conn_id = state, state_conn_id
        self.env = dict(env or {})
        self.skip_on_empty = skip_on_empty
        self.report_dir, self.report_url = report_dir, report_url
        self.python = python

    def _run_child(self, argv: list[str], state_url: str | None) -> tuple[int, int, list[str]]:
        """(exit code, child pid, last lines of output); the output goes to the task log."""
        env = {**os.environ, **{str(k): str(v) for k, v in self.env.items()}}
        if state_url:
            env["SPARKMARK_STATE"] = state_url
        env.setdefault("PYTHONUNBUFFERED", "1")
        tail: collections.deque[str] = collections.deque(maxlen=_TAIL)
        self.log.info("sparkmark: running %s", mask_url(" ".join(argv)))
        with subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace") as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = line.rstrip("\n")
                tail.append(line)
                self.log.info("%s", line)
            rc = proc.wait()
        return rc, proc.pid, list(tail)

    def _rows(self, store: StateStore, started: int, pid: int | None, **where: Any
              ) -> list[dict[str, Any]]:
        host = socket.gethostname()
        rows = store.list_runs(started_from=started - 1000, **where)
        mine = [r for r in rows if r.get("host") in (None, host)
                and (pid is None or r.get("pid") == pid)]
        return mine

    def _finish(self, context: Any, store: StateStore, rows: list[dict[str, Any]], rc: int,
                tail: list[str], what: str, job_for_page: str | None) -> list[dict[str, Any]]:
        result = [run_summary(r) for r in rows]
        ti = context["ti"]
        ti.xcom_push(key=RUN_PAGE_KEY, value="")  # the link reads it: no page, no link
        if self.report_dir and job_for_page and rows:
            from sparkmark.ops.report_html import write_html_report
            Path(self.report_dir).mkdir(parents=True, exist_ok=True)
            page = Path(self.report_dir) / f"{job_for_page}.html"
            write_html_report(str(page), store, job=job_for_page)
            url = (self.report_url.format(job=job_for_page, run_id=rows[-1]["run_id"],
                                          path=str(page)) if self.report_url
                   else page.resolve().as_uri())
            ti.xcom_push(key=RUN_PAGE_KEY, value=url)
        bad = [r for r in result if r["status"] == FAILED
               or (r["status"] == SKIPPED and r.get("pipeline"))]
        if rc != 0 or bad:
            why = "; ".join(f"{r['module_name'] or r['job_name']} {r['status']}: "
                            f"{(r['error'] or '').splitlines()[0] if r['error'] else ''}"
                            for r in bad)
            if not why:
                why = "\n".join(tail[-10:]) or "(no output)"
            ti.xcom_push(key="sparkmark_runs", value=result)
            raise AirflowException(f"{what} failed (exit code {rc}): {why}")
        if not rows:
            raise AirflowException(
                f"{what} exited 0 but recorded no run in state store {store.display_url}: "
                "check that the job's name and state store match the operator's job_name and "
                "state (the child gets the store as SPARKMARK_STATE)")
        if self.skip_on_empty and all(r["status"] == EMPTY for r in result):
            ti.xcom_push(key="sparkmark_runs", value=result)
            raise AirflowSkipException(f"{what}: nothing new (EMPTY); skipping downstream")
        return result


class SparkmarkJobOperator(_RunsChild):
    """Run a sparkmark (or Glue-style) job script and return its ledger row(s) via XCom.

    The script is started as ``python SCRIPT --JOB_NAME NAME --job-bookmark-option OPTION
    [--job-bookmark-from R --job-bookmark-to R] JOB_ARGS...`` (``launcher="spark-submit"``:
    ``spark-submit SPARK_SUBMIT_ARGS... --properties-file F SCRIPT ...``, F holding the state
    store as the Spark conf ``spark.sparkmark.state``: see :func:`spark_submit_properties`).
    A script on this worker must exist; with spark-submit it may also be ``local:///path`` (on
    every node) or a remote URI (``s3://``, ``s3a://``, ``hdfs://``...), passed on unchanged
    (:func:`script_location`). Its ledger rows (the runs of
    ``job_name`` this process made) are the return value: a list of dicts
    (:func:`sparkmark.state.ledger.run_summary`). FAILED → the task fails (the rows are still pushed
    under the XCom key ``sparkmark_runs``); EMPTY with ``skip_on_empty`` → skipped.

    Example::

        SparkmarkJobOperator(task_id="orders", script="jobs/orders.py", job_name="orders",
                             state="sqlite:////data/sparkmark.db",
                             job_args={"--day": "{{ ds }}"}, skip_on_empty=True)
    """

    template_fields: Sequence[str] = ("script", "job_name", "bookmark_option", "bookmark_from",
                                      "bookmark_to", "job_args", "state", "env",
                                      "spark_submit_args")
    template_fields_renderers = {"job_args": "json", "env": "json"}
    operator_extra_links = (SparkmarkRunLink(),)
    ui_color = "#f0e4ff"

    def __init__(self, *, script: str, job_name: str,
                 bookmark_option: str = "job-bookmark-enable",
                 job_args: Mapping[str, Any] | Sequence[str] | None = None,
                 bookmark_from: str | None = None, bookmark_to: str | None = None,
                 launcher: str = "python", spark_submit: str = "spark-submit",
                 spark_submit_args: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if launcher not in ("python", "spark-submit"):
            raise AirflowException(f"launcher must be 'python' or 'spark-submit', not "
                                   f"{launcher!r}")
        self.script, self.job_name = script, job_name
        self.bookmark_option = bookmark_option
        self.job_args = job_args
        self.bookmark_from, self.bookmark_to = bookmark_from, bookmark_to
        self.launcher, self.spark_submit = launcher, spark_submit
        self.spark_submit_args = list(spark_submit_args)

    def argv(self, properties_file: str | None = None) -> list[str]:
        """The command line the job runs with (after templates are rendered);
        ``properties_file`` (spark-submit only) replaces any ``--properties-file`` of
        ``spark_submit_args``.

        Example: ``op.argv()[-4:] == ["--job-bookmark-option", "job-bookmark-enable", ...]``
        """
        if self.bookmark_option not in _BOOKMARK_OPTIONS:
            raise AirflowException(f"bookmark_option must be one of {', '.join(_BOOKMARK_OPTIONS)}"
                                   f", not {self.bookmark_option!r}")
        if (self.bookmark_from is None) != (self.bookmark_to is None):
            raise AirflowException("give both bookmark_from and bookmark_to (a pause replay), "
                                   "or neither")
        where, path = script_location(self.script)
        if where == "remote" and self.launcher == "python":
            raise AirflowException(
                f"job script {self.script!r} is not on this worker: give launcher="
                "'spark-submit' (which fetches it), or a path on this worker")
        if where == "local" or (where == "node" and self.launcher == "python"):
            if not Path(path).is_file():
                raise AirflowException(f"job script {self.script!r} does not exist on this "
                                       "worker")
        script = path if self.launcher == "python" else self.script
        glue = ["--JOB_NAME", self.job_name, "--job-bookmark-option", self.bookmark_option]
        if self.bookmark_from is not None:
            glue += ["--job-bookmark-from", str(self.bookmark_from),
                     "--job-bookmark-to", str(self.bookmark_to)]
        if self.launcher == "python":
            head = [self.python or sys.executable]
        elif properties_file is None:
            head = [self.spark_submit, *self.spark_submit_args]
        else:
            rest, _ = split_properties_file(self.spark_submit_args)
            head = [self.spark_submit, *rest, "--properties-file", properties_file]
        return [*head, script, *glue, *_glue_args(self.job_args)]

    def execute(self, context: Any) -> list[dict[str, Any]]:
        url = _state(self.state, self.state_conn_id)
        self.argv()  # bad input fails here, before anything starts
        env = {**os.environ, **{str(k): str(v) for k, v in self.env.items()}}
        conf_url = url or env.get("SPARKMARK_STATE")
        text = (spark_submit_properties(conf_url, self.spark_submit_args, env)
                if self.launcher == "spark-submit" and conf_url else None)
        store = _store(url)
        started = int(time.time() * 1000)
        with tempfile.TemporaryDirectory(prefix="sparkmark-submit-") as tmp:
            props = None
            if text is not None:  # readable by this user only; deleted when the child ends
                props = os.path.join(tmp, "sparkmark.properties")
                fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
            rc, pid, tail = self._run_child(self.argv(props), url)
        rows = self._rows(store, started, pid if self.launcher == "python" else None,
                          job_name=self.job_name)
        return self._finish(context, store, rows, rc, tail, f"sparkmark job {self.job_name!r}",
                            self.job_name)


class SparkmarkPipelineOperator(_RunsChild):
    """Run a pipeline file (``sparkmark run FILE [--layers] [--modules]``) and return one
    ledger row per module run via XCom; a FAILED module (or one SKIPPED by a failed
    dependency) fails the task, all-EMPTY with ``skip_on_empty`` skips it.

    Example::

        SparkmarkPipelineOperator(task_id="overwatch", pipeline_file="pipelines/overwatch.py",
                                  layers="bronze,silver", state_conn_id="sparkmark_state")
    """

    template_fields: Sequence[str] = ("pipeline_file", "layers", "modules", "state", "env")
    template_fields_renderers = {"env": "json"}
    operator_extra_links = (SparkmarkRunLink(),)
    ui_color = "#f0e4ff"

    def __init__(self, *, pipeline_file: str, layers: str | Sequence[str] | None = None,
                 modules: str | Sequence[int] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pipeline_file, self.layers, self.modules = pipeline_file, layers, modules

    def execute(self, context: Any) -> list[dict[str, Any]]:
        url = _state(self.state, self.state_conn_id)
        if not Path(self.pipeline_file).is_file():
            raise AirflowException(f"pipeline file {self.pipeline_file!r} does not exist on "
                                   "this worker")
        argv = [self.python or sys.executable, "-m", "sparkmark.ops.cli", "run",
                self.pipeline_file, "--quiet"]
        for flag, value in (("--layers", self.layers), ("--modules", self.modules)):
            if value is not None and value != "":
                argv += [flag, value if isinstance(value, str)
                         else ",".join(str(v) for v in value)]
        store = _store(url)
        started = int(time.time() * 1000)
        rc, pid, tail = self._run_child(argv, url)
        rows = [r for r in self._rows(store, started, pid) if r.get("pipeline")]
        job = None
        if rows and self.report_dir:
            job = rows[-1]["job_name"]  # the page of the last module run
        return self._finish(context, store, rows, rc, tail,
                            f"sparkmark pipeline {self.pipeline_file!r}", job)


class SparkmarkResetOperator(BaseOperator):
    """``sparkmark bookmark reset``: reset a job's bookmark, or rewind it to run ``run_id``
    (a new version; history is kept). ``remove_output`` also removes the later runs' output
    and marks them ROLLED_BACK (in a child process: it may need Spark). Returns the bookmark
    entry after the reset (Glue's ``JobBookmarkEntry`` shape); ``dry_run`` changes nothing.

    Example: ``SparkmarkResetOperator(task_id="rewind", job_name="orders", run_id="{{
    params.run_id }}", remove_output=True, state_conn_id="sparkmark_state")``
    """

    template_fields: Sequence[str] = ("job_name", "run_id", "state")

    def __init__(self, *, job_name: str, run_id: str | None = None, remove_output: bool = False,
                 dry_run: bool = False, state: str | None = None,
                 state_conn_id: str | None = None, python: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job_name, self.run_id = job_name, run_id or None
        self.remove_output, self.dry_run = remove_output, dry_run
        self.state, self.state_conn_id, self.python = state, state_conn_id, python

    def execute(self, context: Any) -> dict[str, Any]:
        url = _state(self.state, self.state_conn_id)
        argv = [self.python or sys.executable, "-m", "sparkmark.ops.cli", "bookmark", "reset",
                self.job_name]
        if self.run_id:
            argv += ["--run-id", self.run_id]
        if self.remove_output:
            argv.append("--remove-output")
        if self.dry_run:
            argv.append("--dry-run")
        out = _check_child(argv, url, f"sparkmark bookmark reset {self.job_name}", self.log)
        from sparkmark.ops.bookmarks import Bookmarks
        entry = Bookmarks(_store(url)).get(self.job_name)
        return {"output": out, "bookmark": entry}


class SparkmarkRollbackOperator(BaseOperator):
    """``sparkmark rollback``: roll pipeline modules back to a window boundary (``since`` a
    date, or a pipeline ``run_id``): their output is deleted, their runs marked ROLLED_BACK, and
    the next run reloads from the cut. Returns the command's report text.

    Example: ``SparkmarkRollbackOperator(task_id="rollback", pipeline_file="p.py",
    modules=[2011], since="{{ params.since }}")``
    """

    template_fields: Sequence[str] = ("pipeline_file", "since", "run_id", "state")

    def __init__(self, *, pipeline_file: str, modules: Sequence[int] | int,
                 since: str | None = None, run_id: str | None = None, dry_run: bool = False,
                 state: str | None = None, state_conn_id: str | None = None,
                 python: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pipeline_file = pipeline_file
        self.modules = [modules] if isinstance(modules, int) else list(modules)
        self.since, self.run_id, self.dry_run = since or None, run_id or None, dry_run
        self.state, self.state_conn_id, self.python = state, state_conn_id, python

    def execute(self, context: Any) -> str:
        url = _state(self.state, self.state_conn_id)
        if (self.since is None) == (self.run_id is None):
            raise AirflowException("give exactly one of since (a date) or run_id")
        argv = [self.python or sys.executable, "-m", "sparkmark.ops.cli", "rollback",
                self.pipeline_file]
        for m in self.modules:
            argv += ["--module", str(m)]
        argv += ["--since", str(self.since)] if self.since else ["--run-id", str(self.run_id)]
        if self.dry_run:
            argv.append("--dry-run")
        return _check_child(argv, url, f"sparkmark rollback {self.pipeline_file}", self.log)


def _check_child(argv: list[str], url: str | None, what: str, log: Any) -> str:
    env = dict(os.environ)
    if url:
        env["SPARKMARK_STATE"] = url
    env["COLUMNS"] = "200"
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, errors="replace")
    out = (proc.stdout + proc.stderr).strip()
    for line in out.splitlines():
        log.info("%s", line)
    if proc.returncode != 0:
        raise AirflowException(f"{what} failed (exit code {proc.returncode}): "
                               f"{out[-2000:] or '(no output)'}")
    return out


# ---------------------------------------------------------------------- waiting for input
def check_input(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """One look for new input (no Spark): :func:`sparkmark.ops.pending.pending_files` when
    ``kwargs`` has ``path``, else :func:`~sparkmark.ops.pending.pending_rows`; JSON-ready.

    Example: ``check_input({"job_name": "orders", "transformation_ctx": "src", "path": "in",
    "state": url})["new_input"]``
    """
    from sparkmark.ops.pending import pending_files, pending_rows
    kw = dict(kwargs)
    if kw.get("path"):
        return pending_files(kw["job_name"], kw["path"],
                             transformation_ctx=kw["transformation_ctx"], state=kw.get("state"),
                             options=kw.get("options"),
                             storage_options=kw.get("storage_options")).as_dict()
    return pending_rows(kw["job_name"], kw["url"], kw["table"],
                        transformation_ctx=kw["transformation_ctx"], state=kw.get("state"),
                        bookmark_keys=kw.get("bookmark_keys"),
                        sort_order=kw.get("sort_order") or "asc",
                        properties=kw.get("properties"), options=kw.get("options")).as_dict()


class SparkmarkInputTrigger(BaseTrigger):
    """Polls :func:`check_input` every ``poke_interval`` seconds in the triggerer (the check
    runs in a thread: listing and the upper-bound query block); fires once there is new input.

    Example: ``SparkmarkInputTrigger({"job_name": "orders", ...}, poke_interval=60)``
    """

    def __init__(self, check: dict[str, Any], poke_interval: float = 60.0) -> None:
        super().__init__()
        self.check, self.poke_interval = check, float(poke_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"check": self.check, "poke_interval": self.poke_interval})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while True:
            try:
                found = await asyncio.to_thread(check_input, self.check)
            except Exception as e:  # noqa: BLE001 - the task shows it, not the triggerer
                yield TriggerEvent({"status": "error", "message": str(e)})
                return
            if found["new_input"]:
                yield TriggerEvent({"status": "success", "pending": found})
                return
            self.log.info("sparkmark: no new input for %s/%s yet",
                          self.check.get("job_name"), self.check.get("transformation_ctx"))
            await asyncio.sleep(self.poke_interval)


class SparkmarkInputSensor(BaseSensorOperator):
    """Wait until a job's bookmarked source has new input: files under ``path`` that its next
    run would read, or rows of JDBC ``table`` past the committed key — without Spark. Returns
    (XCom) what was found: ``new_input``, ``files``, ``bytes``, ``sample`` (or ``lower`` and
    ``upper`` for JDBC). Give the same ``options`` the job's read gives (``exclusions``,
    ``recurse``, ``maxBand``...). ``deferrable=True`` waits in the triggerer.

    Example::

        SparkmarkInputSensor(task_id="wait", job_name="orders", transformation_ctx="src",
                             path="s3a://lake/in/orders", storage_options={
                                 "fs.s3a.endpoint": "http://minio:9000"},
                             poke_interval=300, timeout=6 * 3600, deferrable=True)
    """

    template_fields: Sequence[str] = ("job_name", "transformation_ctx", "path", "url", "table",
                                      "state", "properties", "options")
    ui_color = "#e8f4ff"

    def __init__(self, *, job_name: str, transformation_ctx: str,
                 path: str | Sequence[str] | None = None, url: str | None = None,
                 table: str | None = None, bookmark_keys: Sequence[str] | None = None,
                 sort_order: str = "asc", properties: Mapping[str, Any] | None = None,
                 options: Mapping[str, Any] | None = None,
                 storage_options: Mapping[str, str] | None = None, state: str | None = None,
                 state_conn_id: str | None = None, deferrable: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if (path is None) == (url is None or table is None):
            raise AirflowException("give path= (files) or url= and table= (a JDBC table)")
        self.job_name, self.transformation_ctx = job_name, transformation_ctx
        self.path, self.url, self.table = path, url, table
        self.bookmark_keys = list(bookmark_keys) if bookmark_keys else None
        self.sort_order = sort_order
        self.properties, self.options = dict(properties or {}), dict(options or {})
        self.storage_options = dict(storage_options or {})
        self.state, self.state_conn_id = state, state_conn_id
        self.deferrable = deferrable

    def _check(self) -> dict[str, Any]:
        return {"job_name": self.job_name, "transformation_ctx": self.transformation_ctx,
                "path": self.path, "url": self.url, "table": self.table,
                "bookmark_keys": self.bookmark_keys, "sort_order": self.sort_order,
                "properties": self.properties, "options": self.options,
                "storage_options": self.storage_options,
                "state": _state(self.state, self.state_conn_id)}

    def poke(self, context: Any) -> Any:
        from airflow.sdk import PokeReturnValue
        found = check_input(self._check())
        self.log.info("sparkmark: %s", found)
        return PokeReturnValue(is_done=bool(found["new_input"]), xcom_value=found)

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            return super().execute(context)
        found = check_input(self._check())  # new input already: no need to defer
        if found["new_input"]:
            return found
        self.defer(trigger=SparkmarkInputTrigger(self._check(), self.poke_interval),
                   method_name="execute_complete",
                   timeout=timedelta(seconds=self.timeout) if self.timeout else None)

    def execute_complete(self, context: Any, event: dict[str, Any]) -> Any:
        if event.get("status") != "success":
            raise AirflowException(f"sparkmark input check failed: {event.get('message')}")
        return event["pending"]
