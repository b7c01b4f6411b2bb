"""The ``sparkmark`` command line: a thin Typer + rich layer over the Python API.

No logic lives only here: every command calls a function that Python users can call too.
Every user error prints one line ``error: ...`` on stderr and exits with status 2; a module that
FAILED in ``sparkmark run`` exits with status 1.
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

from .errors import SparkmarkError

app = typer.Typer(help="Job bookmarks and a run ledger for PySpark.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)
bookmark_app = typer.Typer(help="Inspect, reset or rewind a job's bookmark.",
                           no_args_is_help=True)
app.add_typer(bookmark_app, name="bookmark")

# Piped output (no terminal) gets a wide page instead of rich's 80 columns.
out = Console(highlight=False, soft_wrap=True,
              width=None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "240")))
err = Console(stderr=True, highlight=False, soft_wrap=True)


class _Ctx:
    state: Optional[str] = None


CTX = _Ctx()


def _guard(fn: Callable[[], Any]) -> Any:
    """Run a command body: user errors become one clear line and exit status 2."""
    try:
        return fn()
    except SparkmarkError as e:
        err.print(f"[bold red]error:[/] {e}", markup=True, highlight=False)
        raise typer.Exit(e.exit_code)
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130)
    except Exception as e:  # noqa: BLE001 - never show a bare traceback to users
        if os.environ.get("SPARKMARK_DEBUG"):
            raise
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:500]
        err.print(f"[bold red]error:[/] unexpected {type(e).__name__}: {first} "
                  "(set SPARKMARK_DEBUG=1 for the full traceback)")
        raise typer.Exit(1)


@app.callback()
def _main(state: Optional[str] = typer.Option(
        None, "--state", help="State store URL (default: env SPARKMARK_STATE, else "
                              "sqlite:///.sparkmark/state.db)")) -> None:
    CTX.state = state
    if state:  # pipeline files create their own Pipeline(state=None): let them see it too
        os.environ["SPARKMARK_STATE"] = state


def _bookmarks():
    from .bookmarks import Bookmarks
    return Bookmarks(CTX.state)


def _echo_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=2, default=str))


# ---------------------------------------------------------------------- bookmark
@bookmark_app.command("get")
def bookmark_get(job: str = typer.Argument(..., help="Job name"),
                 run_id: Optional[str] = typer.Option(None, "--run-id",
                                                      help="The bookmark committed by this run")
                 ) -> None:
    """Print the bookmark as JSON shaped like Glue's JobBookmarkEntry."""
    _guard(lambda: _echo_json(_bookmarks().get(job, run_id)))


@bookmark_app.command("history")
def bookmark_history(job: str = typer.Argument(..., help="Job name"),
                     format: str = typer.Option("table", "--format", "-f",
                                                help="table or json")) -> None:
    """List every version of a job's bookmark."""
    def body() -> None:
        rows = _bookmarks().history(job)
        _check_format(format, ("table", "json"))
        if format == "json":
            _echo_json(rows)
            return
        from .clock import format_ts
        t = Table(title=f"bookmark history of {job}")
        for col in ("Version", "Kind", "Run", "Attempt", "RunId", "RewoundToRunId", "Created",
                    "Contexts"):
            t.add_column(col)
        for r in rows:
            t.add_row(str(r["Version"]), r["Kind"], str(r["Run"]), str(r["Attempt"]),
                      r["RunId"] or "", r["RewoundToRunId"] or "",
                      format_ts(r["CreatedTs"], "UTC") or "", ", ".join(sorted(r["JobBookmark"])))
        out.print(t)
    _guard(body)


@bookmark_app.command("reset")
def bookmark_reset(job: str = typer.Argument(..., help="Job name"),
                   run_id: Optional[str] = typer.Option(
                       None, "--run-id", help="Rewind to the state this run committed")) -> None:
    """Reset a bookmark (reprocess everything) or rewind it to run R. History is kept."""
    def body() -> None:
        version = _bookmarks().reset(job, run_id)
        what = f"rewound to run {run_id}" if run_id else "reset"
        out.print(f"bookmark of {job} {what}: now version {version}")
    _guard(body)


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
                  "attempt", "status", "run_start", "run_end", "from", "until", "records_read",
                  "records_written", "error")


@app.command("report")
def report(pipeline: Optional[str] = typer.Option(None, "--pipeline", help="Only this pipeline"),
           module: Optional[int] = typer.Option(None, "--module", help="Only this module id"),
           job: Optional[str] = typer.Option(None, "--job", help="Only this job"),
           last: Optional[int] = typer.Option(None, "--last", help="Only the newest N runs"),
           format: str = typer.Option("table", "--format", "-f", help="table, json or csv"),
           timezone: Optional[str] = typer.Option(
               None, "--timezone", help="Show times in this zone (default: the pipeline's, "
                                        "else UTC)")) -> None:
    """The run ledger (Overwatch's pipeline report)."""
    def body() -> None:
        from .ledger import report_rows
        from .state import open_store
        _check_format(format, ("table", "json", "csv"))
        if last is not None and last < 1:
            raise SparkmarkError("--last must be a positive number of runs")
        rows = report_rows(open_store(CTX.state), pipeline=pipeline, module=module, job=job,
                           last=last, timezone=timezone)
        if format == "json":
            _echo_json(rows)
        elif format == "csv":
            buf = io.StringIO()
            cols = list(rows[0].keys()) if rows else list(REPORT_COLUMNS)
            w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
            typer.echo(buf.getvalue(), nl=False)
        else:
            t = Table(title="sparkmark run ledger")
            cols = [c for c in REPORT_COLUMNS if any(r.get(c) not in (None, "") for r in rows)]
            for c in cols:
                t.add_column(c, overflow="fold")
            for r in rows:
                t.add_row(*[_cell(r.get(c), 80 if c == "error" else 0) for c in cols])
            out.print(t)
            if not rows:
                out.print("(no runs recorded yet)")
    _guard(body)


# ---------------------------------------------------------------------- demo
@app.command("demo")
def demo(directory: Optional[str] = typer.Option(
        None, "--dir", help="Working folder for the demo's files (default: ./sparkmark-demo)")
         ) -> None:
    """Run the main job on the embedded default: local Spark, SQLite state, a local folder."""
    def body() -> None:
        from .demo import run_demo
        ok = run_demo(directory, out)
        if not ok:
            raise typer.Exit(1)
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
        modules: Optional[str] = typer.Option(None, "--modules", help="e.g. 2011,3003")) -> None:
    """Run a pipeline; exits 1 if any module FAILED."""
    def body() -> None:
        from .pipeline import load_pipeline_file
        p = load_pipeline_file(pipeline_file)
        summary = p.run(layers=_split_csv(layers), modules=_split_csv(modules, int))
        out.print(summary)
        if summary.failed:
            raise typer.Exit(1)
    _guard(body)


@app.command("rollback")
def rollback(pipeline_file: str = typer.Argument(..., help="A Python file defining a Pipeline"),
             module: list[int] = typer.Option(..., "--module", help="Module id (repeatable)"),
             since: Optional[str] = typer.Option(None, "--since", help="Date, e.g. 2020-12-31"),
             run_id: Optional[str] = typer.Option(None, "--run-id", help="A pipeline run id"),
             dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would happen")
             ) -> None:
    """Roll modules back to a window boundary: delete their output, mark runs ROLLED_BACK."""
    def body() -> None:
        from .pipeline import load_pipeline_file
        if (since is None) == (run_id is None):
            raise SparkmarkError("give exactly one of --since DATE or --run-id RUN_ID")
        p = load_pipeline_file(pipeline_file)
        plan = p.rollback(modules=list(module), since=since, run_id=run_id, dry_run=dry_run)
        out.print(plan)
    _guard(body)


def main() -> None:
    app(prog_name="sparkmark")


if __name__ == "__main__":
    main()
