"""The ``sparkmark`` command line: a thin Typer + rich layer over the Python API.

No logic lives only here: every command calls a function that Python users can call too.
Every user error prints one line ``error: ...`` on stderr and exits with status 2; a module that
FAILED in ``sparkmark run``, or was SKIPPED because a dependency failed, exits with status 1.
"""
from __future__ import annotations

import csv
import io
import json
import os
import sys
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from sparkmark.core.errors import SparkmarkError

app = typer.Typer(help="Job bookmarks and a run ledger for PySpark.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)
bookmark_app = typer.Typer(help="Inspect, reset or rewind a job's bookmark.",
                           no_args_is_help=True)
app.add_typer(bookmark_app, name="bookmark")

# Piped output (no terminal) gets a wide page instead of rich's 80 columns.  Markup and emoji
# codes are off: job names, paths and error texts are user text, printed literally
# ("sales[eu]", "[/]", "eu:warning:x"); styles come from Text objects only.  (Emoji
# replacement was also a tenth of rendering report's table.)
out = Console(highlight=False, soft_wrap=True, markup=False, emoji=False,
              width=None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "240")))
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)


def _error_line(text: str) -> Text:
    """``error: <text>`` with the prefix in bold red and the text literal (never markup)."""
    return Text.assemble(("error:", "bold red"), " ", text)


class _Ctx:
    state: Optional[str] = None


CTX = _Ctx()


def _guard(fn: Callable[[], Any]) -> Any:
    """Run a command body: user errors become one clear line and exit status 2."""
    try:
        return fn()
    except SparkmarkError as e:
        err.print(_error_line(str(e)))
        raise typer.Exit(e.exit_code) from None
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130) from None
    except Exception as e:  # noqa: BLE001 - never show a bare traceback to users
        if os.environ.get("SPARKMARK_DEBUG"):
            raise
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:500]
        err.print(_error_line(f"unexpected {type(e).__name__}: {first} "
                              "(set SPARKMARK_DEBUG=1 for the full traceback)"))
        raise typer.Exit(1) from None


def _print_version(value: bool) -> None:
    if value:
        from sparkmark import __version__
        out.print(f"sparkmark {__version__}")
        raise typer.Exit()


@app.callback()
def _main(state: Optional[str] = typer.Option(
        None, "--state", help="State store URL (default: env SPARKMARK_STATE, else "
                              "sqlite:///.sparkmark/state.db); before or after the command"),
          version: bool = typer.Option(False, "--version", callback=_print_version,
                                       is_eager=True, help="Print sparkmark's version")
          ) -> None:
    CTX.state = state
    if state:  # pipeline files create their own Pipeline(state=None): let them see it too
        os.environ["SPARKMARK_STATE"] = state


def _bookmarks(create: bool = True, existing: bool = True):
    """The API over the state store; ``existing``: the store must already exist (an admin
    command on a mistyped --state must not create a folder and an empty store)."""
    from sparkmark.ops.bookmarks import Bookmarks
    from sparkmark.state import open_store
    if existing and create:
        open_store(CTX.state, create=False)  # a clear error if there is no store there
    return Bookmarks(open_store(CTX.state, create=create))


def _config_object(text: Any) -> Any:
    """A ledger row's ``config`` (JSON text) as the object it encodes; text that is not JSON
    stays as it is."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _echo_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, default=str))


def _module_ids(values: Optional[list[str]]) -> Optional[list[int]]:
    """The module ids of every ``--modules`` / ``--module`` given (each a comma-separated list),
    in order, once each; None when none was given."""
    if not values:
        return None
    out: list[int] = []
    for value in values:
        out += [m for m in (_split_csv(value, int) or []) if m not in out]
    return out


#: the one spelling of module selection on every command: --modules 2011,3003 (repeatable), and
#: --module as its alias (the old spelling of rollback and report)
_MODULES_HELP = "Module ids, e.g. 2011,3003 (repeatable; --module is the same option)"


# ---------------------------------------------------------------------- bookmark
@bookmark_app.command("get")
def bookmark_get(job: str = typer.Argument(..., help="Job name"),
                 run_id: Optional[str] = typer.Option(None, "--run-id",
                                                      help="The bookmark committed by this run")
                 ) -> None:
    """Print the bookmark as JSON shaped like Glue's JobBookmarkEntry."""
    _guard(lambda: _echo_json(_bookmarks(create=False).get(job, run_id)))


@bookmark_app.command("history")
def bookmark_history(job: str = typer.Argument(..., help="Job name"),
                     format: str = typer.Option("table", "--format", "-f",
                                                help="table or json"),
                     limit: Optional[int] = typer.Option(
                         None, "--limit", help="Only the newest N versions (default: 100 for "
                                               "the table, all for json)"),
                     every: bool = typer.Option(False, "--all", help="Every version")
                     ) -> None:
    """List a job's bookmark versions, oldest first: the newest 100 in the table (--limit N,
    --all for every version), every version as JSON."""
    def body() -> None:
        from sparkmark.ops.bookmarks import history_limit
        _check_format(format, ("table", "json"))
        last = history_limit(format, limit, every)
        rows = _bookmarks(create=False).history(job, last=last)
        if format == "json":
            _echo_json(rows)
            return
        from sparkmark.core.clock import format_ts
        t = Table(title=f"bookmark history of {job}")
        for col in ("Version", "Kind", "Run", "Attempt", "RunId", "RewoundToRunId", "Created",
                    "Contexts"):
            t.add_column(col)
        for r in rows:
            t.add_row(str(r["Version"]), r["Kind"], str(r["Run"]), str(r["Attempt"]),
                      r["RunId"] or "", r["RewoundToRunId"] or "",
                      format_ts(r["CreatedTs"], "UTC") or "", ", ".join(sorted(r["JobBookmark"])))
        out.print(t)
        older = rows[0]["Version"] if rows and last is not None and len(rows) == last else 0
        if older:  # versions are numbered 0 (the empty one), 1, 2, ...: the older ones
            out.print(f"({older} older version(s) not shown: the newest {len(rows)} are; "
                      "--limit N for more, --all for every version)")
    _guard(body)


@bookmark_app.command("reset")
def bookmark_reset(job: str = typer.Argument(..., help="Job name"),
                   run_id: Optional[str] = typer.Option(
                       None, "--run-id", help="Rewind to the state this run committed"),
                   remove_output: bool = typer.Option(
                       False, "--remove-output",
                       help="Also delete the output of every later run (files sm-<run_id>-*, "
                            "JDBC rows by sm_run_id) and mark those runs ROLLED_BACK"),
                   dry_run: bool = typer.Option(False, "--dry-run",
                                                help="Only show what would happen"),
                   jdbc_password_env: Optional[list[str]] = typer.Option(
                       None, "--jdbc-password-env",
                       help="VAR: an environment variable holding the password of the JDBC "
                            "targets (the ledger keeps no passwords); TABLE=VAR for one target "
                            "table (repeatable; a bare VAR covers the others)")) -> None:
    """Reset a bookmark (reprocess everything) or rewind it to run R. History is kept.

    With --remove-output the later runs' output goes too, so a re-run does not duplicate it.
    """
    def body() -> None:
        if not remove_output and not dry_run:
            version = _bookmarks().reset(job, run_id)
            what = f"rewound to run {run_id}" if run_id else "reset"
            out.print(f"bookmark of {job} {what}: now version {version}")
            return
        plan = _bookmarks().reset(job, run_id, remove_output=remove_output, dry_run=dry_run,
                                  properties=_jdbc_properties(job, jdbc_password_env))
        out.print(plan)
    _guard(body)


@bookmark_app.command("set")
def bookmark_set(job: str = typer.Argument(..., help="Job name"),
                 ctx: str = typer.Option(..., "--ctx", help="The transformation_ctx to move"),
                 after: Optional[str] = typer.Option(
                     None, "--after", help="Files: start after this time, e.g. "
                                           "2024-05-01T00:00:00Z"),
                 processed: Optional[list[str]] = typer.Option(
                     None, "--processed", help="Files: treat this file as already processed "
                                               "(repeatable)"),
                 after_key: Optional[list[str]] = typer.Option(
                     None, "--after-key", help="JDBC: start after this key value (one per "
                                               "bookmark key, repeatable)"),
                 snapshot: Optional[str] = typer.Option(
                     None, "--snapshot", help="Tables: continue after this snapshot id "
                                              "(Iceberg) or version (Delta)"),
                 new_ctx: bool = typer.Option(
                     False, "--new-ctx", help="CTX is a context no run has read yet (else it "
                                              "must be one the job's bookmark knows)")
                 ) -> None:
    """Move one context's bookmark element on purpose (new version, kind 'set').

    A job that has never run in this store (a cut-over from Glue) gets its first bookmark
    version here, and its first run starts from it."""
    def body() -> None:
        bookmarks = _bookmarks()
        had_run = bookmarks.store.job_row(job) is not None
        version = bookmarks.set(job, ctx, after=after, processed=processed or None,
                                after_key=after_key or None, snapshot=snapshot,
                                new_ctx=new_ctx)
        out.print(f"bookmark of {job}: context {ctx} set; now version {version}")
        if not had_run:
            out.print(f"job {job} had not run with this state store: its first run starts "
                      "from this bookmark")
    _guard(body)


@bookmark_app.command("release")
def bookmark_release(job: str = typer.Argument(..., help="Job name"),
                     run_id: Optional[str] = typer.Option(
                         None, "--run-id", help="Only if this is the active run")) -> None:
    """End a run that will never finish: record it FAILED and break its lease."""
    def body() -> None:
        released = _bookmarks().release(job, run_id)
        out.print(f"run {released} of {job} released: recorded FAILED, lease broken")
    _guard(body)


def _jdbc_properties(job: str, specs: Optional[list[str]]) -> Optional[dict]:
    """Credentials for the JDBC targets of a job's runs, from --jdbc-password-env."""
    if not specs:
        return None
    from sparkmark.sinks.rollback import jdbc_credentials
    return jdbc_credentials(CTX.state, job, specs)


# ---------------------------------------------------------------------- report
def _cell(value: Any, limit: int = 0) -> str:
    text = "" if value is None else str(value)
    if limit and len(text) > limit:
        text = text[:limit - 1] + "…"
    return text


def _check_format(fmt: str, allowed: tuple[str, ...]) -> None:
    if fmt not in allowed:
        raise SparkmarkError(f"unknown --format {fmt!r}; use one of {', '.join(allowed)}")


REPORT_COLUMNS = ("pipeline", "module_id", "module_name", "job_name", "run_id", "run_number",
                  "attempt", "status", "run_start", "run_end", "duration_s", "from", "until",
                  "files_read", "records_read", "records_written", "late_files", "note", "error")


@app.command("report")
def report(pipeline: Optional[str] = typer.Option(None, "--pipeline", help="Only this pipeline"),
           modules: Optional[list[str]] = typer.Option(None, "--modules", "--module",
                                                       help="Only these modules: "
                                                            + _MODULES_HELP),
           job: Optional[str] = typer.Option(None, "--job", help="Only this job"),
           status: Optional[list[str]] = typer.Option(
               None, "--status", help="Only runs with these statuses, e.g. failed,skipped "
                                      "(repeatable, any case)"),
           since: Optional[str] = typer.Option(
               None, "--since", help="Only runs started then or later: an ISO date or "
                                     "date-time (UTC unless it has an offset), or a span back "
                                     "from now such as 24h or 7d"),
           limit: Optional[int] = typer.Option(
               None, "--limit", "--last", help="Only the newest N runs (default: 100 for the "
                                               "table, 10,000 for html, all for json and csv; "
                                               "--last is the same option)"),
           every: bool = typer.Option(False, "--all", help="Every run (no --limit)"),
           format: str = typer.Option("table", "--format", "-f",
                                      help="table, json, csv or html"),
           output: Optional[str] = typer.Option(
               None, "--output", "-o", help="File to write (required for --format html)"),
           timezone: Optional[str] = typer.Option(
               None, "--timezone", help="Show times in this zone (default: the pipeline's, "
                                        "else UTC)")) -> None:
    """The run ledger (Overwatch's pipeline report); --format html writes one offline page."""
    def body() -> None:
        from sparkmark.core.status import parse_statuses
        from sparkmark.state.ledger import (parse_since, report_limit, report_rows,
                                            runs_left_out)
        from sparkmark.core.clock import system_clock
        from sparkmark.state import open_store
        _check_format(format, ("table", "json", "csv", "html"))
        ids = _module_ids(modules)
        module_ids: int | list[int] | None = ids[0] if ids and len(ids) == 1 else ids
        last = report_limit(format, limit, every)
        statuses = parse_statuses(status)
        started = None if since is None else parse_since(since, system_clock())
        filters: dict[str, Any] = dict(pipeline=pipeline, module=module_ids, job=job,
                                       statuses=statuses, since=started)
        if format == "html":
            if not output:
                raise SparkmarkError("--format html needs --output FILE (e.g. --output "
                                     "runs.html)")
            from sparkmark.ops.report_html import write_html_report
            done = write_html_report(output, CTX.state, last=last, **filters)
            left = runs_left_out(CTX.state, done["runs"], last, **filters)
            more = (f" ({left} older run(s) left out: --limit N for more, --all for every "
                    "run)" if left else "")
            out.print(f"wrote {done['path']}: {done['runs']} run(s){more}, "
                      f"{done['bytes'] / 1e6:.2f} MB; open it in a browser (works offline)")
            return
        if output:
            raise SparkmarkError("--output is for --format html; redirect the other formats "
                                 "(> file)")
        store = open_store(CTX.state, create=False)
        rows = report_rows(store, last=last, timezone=timezone, **filters)
        if format == "json":  # the run's config as an object, not a string inside JSON
            _echo_json([{**r, "config": _config_object(r["config"])} if "config" in r else r
                        for r in rows])
        elif format == "csv":
            buf = io.StringIO()
            from sparkmark.state.ledger import COLUMNS
            cols = list(rows[0].keys()) if rows else list(COLUMNS)  # the same header, empty
            w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
            typer.echo(buf.getvalue(), nl=False)
        else:
            from sparkmark.state.ledger import with_markers
            from sparkmark.ops.progress import status_text
            rows = with_markers(rows)
            t = Table(title="sparkmark run ledger")
            cols = [c for c in REPORT_COLUMNS if any(r.get(c) not in (None, "") for r in rows)]
            for c in cols:
                t.add_column(c, overflow="fold")
            for r in rows:
                t.add_row(*[status_text(r[c]) if c == "status" else
                            _cell(r.get(c), 80 if c == "error" else 0) for c in cols])
            out.print(t)
            left = runs_left_out(store, len(rows), last, **filters)
            if not rows:
                out.print("(no runs match these filters)" if statuses or since else
                          "(no runs recorded yet)")
            elif left:
                out.print(f"({left} older run(s) not shown: the newest {len(rows)} are; "
                          "--limit N for more, --all for every run)")
    _guard(body)


# ---------------------------------------------------------------------- files
@app.command("files")
def files(job: str = typer.Argument(..., help="Job name"),
          ctx: Optional[str] = typer.Option(None, "--ctx", help="Only this transformation_ctx"),
          run_id: Optional[str] = typer.Option(None, "--run-id", help="Only this run's files"),
          path: Optional[str] = typer.Option(
              None, "--path", help="Only paths matching this glob (* and ?; without a scheme "
                                   "it matches the end of the path, e.g. a file name)"),
          limit: Optional[int] = typer.Option(
              None, "--limit", help="At most N rows (default: 100 for the table, all for "
                                    "json and csv)"),
          every: bool = typer.Option(False, "--all", help="Every row (no --limit)"),
          format: str = typer.Option("table", "--format", "-f", help="table, json or csv")
          ) -> None:
    """The per-file audit: which run read which file, newest reads first.

    The table shows the newest 100 reads (--limit N, --all for every one)."""
    def body() -> None:
        from sparkmark.ops.bookmarks import FILE_COLUMNS, files_limit
        from sparkmark.core.clock import format_ts
        _check_format(format, ("table", "json", "csv"))
        shown = files_limit(format, limit, every)
        rows, total = _bookmarks(create=False).files_page(job, ctx=ctx, run_id=run_id,
                                                          path=path, limit=shown)
        for r in rows:  # times as ISO text (UTC) for people and files
            r["mtime"], r["read_ts"] = format_ts(r["mtime"], "UTC"), format_ts(r["read_ts"], "UTC")
        if format == "json":
            _echo_json(rows)
            return
        if format == "csv":
            buf = io.StringIO()
            w = csv.DictWriter(buf, fieldnames=list(FILE_COLUMNS))
            w.writeheader()
            w.writerows(rows)
            typer.echo(buf.getvalue(), nl=False)
            return
        from sparkmark.ops.progress import status_text
        t = Table(title=f"files read by {job}")
        for c in FILE_COLUMNS:
            t.add_column(c, overflow="fold")
        for r in rows:
            t.add_row(*[status_text(r[c]) if c == "run_status" else _cell(r[c])
                        for c in FILE_COLUMNS])
        out.print(t)
        if not rows:
            out.print("(no files recorded for this job and filter; the audit keeps "
                      "files_retention_days, default 30)")
        elif total > len(rows):
            out.print(f"({total - len(rows)} more; narrow with --path/--run-id, or --limit N, "
                      "--all for every row)")
    _guard(body)


# ---------------------------------------------------------------------- demo
@app.command("demo")
def demo(directory: Optional[str] = typer.Option(
        None, "--dir", help="Working folder for the demo's files (default: ./sparkmark-demo)")
         ) -> None:
    """Run the main job on the embedded default: local Spark, SQLite state, a local folder."""
    def body() -> None:
        from sparkmark.ops.demo import run_demo
        ok = run_demo(directory, out)
        if not ok:
            raise typer.Exit(1) from None
    _guard(body)


# ---------------------------------------------------------------------- pipelines
def _split_csv(value: Optional[str], cast=str) -> Optional[list]:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    try:
        return [cast(v) for v in items]
    except ValueError:
        raise SparkmarkError(f"cannot read {value!r}: expected a comma-separated list of "
                             f"{'numbers' if cast is int else 'names'}") from None


@app.command("run")
def run(pipeline_file: str = typer.Argument(..., help="A Python file that defines a Pipeline"),
        layers: Optional[str] = typer.Option(None, "--layers", help="e.g. bronze,silver"),
        modules: Optional[list[str]] = typer.Option(None, "--modules", "--module",
                                                    help=_MODULES_HELP),
        quiet: bool = typer.Option(False, "--quiet", "-q",
                                   help="No live progress display (it is off anyway when "
                                        "stdout is not a terminal)")) -> None:
    """Run a pipeline; exits 1 if a module FAILED or was SKIPPED by a failed dependency.
    Shows live progress on a terminal."""
    def body() -> None:
        from sparkmark.lifecycle.pipeline import load_pipeline_file
        from contextlib import nullcontext

        from sparkmark.core.listing_progress import watch_listing
        from sparkmark.ops.progress import PipelineProgress
        p = load_pipeline_file(pipeline_file)
        with PipelineProgress(out, p.name, timezone=p.timezone, quiet=quiet) as show:
            watching = watch_listing(show.on_listing) if show.enabled else nullcontext()
            with watching:
                summary = p.run(layers=_split_csv(layers), modules=_module_ids(modules),
                                progress=show)
        out.print(summary)
        if summary.exit_code:          # FAILED, or SKIPPED because a dependency failed
            raise typer.Exit(summary.exit_code)
    _guard(body)


@app.command("rollback")
def rollback(pipeline_file: str = typer.Argument(..., help="A Python file defining a Pipeline"),
             modules: Optional[list[str]] = typer.Option(None, "--modules", "--module",
                                                         help=_MODULES_HELP),
             since: Optional[str] = typer.Option(None, "--since", help="Date, e.g. 2020-12-31"),
             run_id: Optional[str] = typer.Option(None, "--run-id", help="A pipeline run id"),
             dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would happen")
             ) -> None:
    """Roll modules back to a window boundary: delete their output, mark runs ROLLED_BACK."""
    def body() -> None:
        from sparkmark.lifecycle.pipeline import load_pipeline_file
        ids = _module_ids(modules)
        if not ids:
            raise SparkmarkError("give the modules to roll back: --modules 2011,3003")
        if (since is None) == (run_id is None):
            raise SparkmarkError("give exactly one of --since DATE or --run-id RUN_ID")
        p = load_pipeline_file(pipeline_file)
        plan = p.rollback(modules=ids, since=since, run_id=run_id, dry_run=dry_run)
        out.print(plan)
    _guard(body)


def hoist_state(args: list[str]) -> list[str]:
    """``args`` with every ``--state URL`` / ``--state=URL`` moved before the command, where
    the top-level option is parsed, so it works anywhere on the line (pure; nothing after
    ``--`` moves).

    >>> hoist_state(["bookmark", "get", "orders", "--state", "sqlite:///s.db"])
    ['--state', 'sqlite:///s.db', 'bookmark', 'get', 'orders']
    """
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest += args[i:]
            break
        if a == "--state" and i + 1 < len(args):
            front += args[i:i + 2]
            i += 2
            continue
        if a.startswith("--state="):
            front.append(a)
        else:
            rest.append(a)
        i += 1
    return front + rest


def main() -> None:
    """The console script: usage errors are one ``error: ...`` line (exit 2), like every other
    user error, instead of click's usage block and boxed panel."""
    try:  # the click that typer raises from: typer 0.29+ vendors it as typer._click
        from typer._click import exceptions as ex
    except ImportError:  # older typer: click itself
        from click import exceptions as ex  # type: ignore[no-redef]

    class _Never(Exception):
        pass
    no_args: type[Exception] = getattr(ex, "NoArgsIsHelpError", _Never)  # click >= 8.2
    try:
        rc = app(args=hoist_state(sys.argv[1:]), prog_name="sparkmark", standalone_mode=False)
    except no_args as e:  # a bare group: its help, as before
        e.show()  # type: ignore[attr-defined]
        sys.exit(e.exit_code)  # type: ignore[attr-defined]
    except ex.UsageError as e:
        where = f"; see `{e.ctx.command_path} --help`" if e.ctx is not None else ""
        err.print(_error_line(f"{e.format_message().rstrip('.')}{where}"))
        sys.exit(2)
    except ex.ClickException as e:
        err.print(_error_line(e.format_message()))
        sys.exit(e.exit_code)
    except typer.Abort:
        err.print("interrupted")
        sys.exit(130)
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
