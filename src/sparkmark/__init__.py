"""sparkmark: job bookmarks and a run ledger for plain PySpark.

    from sparkmark import Job, Pipeline

See README.md for the guarantees.

The package follows the data's way (list -> plan -> read -> write -> commit), lowest layer first:

- :mod:`sparkmark.core`: the shared words (errors, statuses, clock, options, the run seam);
- :mod:`sparkmark.planning`: pure planning (bands, key ranges, snapshot ranges, windows);
- :mod:`sparkmark.engine`: JVM, Spark versions, file systems, JDBC, table metadata;
- :mod:`sparkmark.state`: the state store (bookmarks, ledger, leases, audit);
- :mod:`sparkmark.sources` and :mod:`sparkmark.sinks`: reading and exactly-once writing;
- :mod:`sparkmark.lifecycle`: ``Job`` and ``Pipeline``;
- :mod:`sparkmark.ops`: the CLI, bookmark administration, reports, the demo;
- :mod:`sparkmark.glue`, :mod:`sparkmark.integrations`: Glue scripts, Airflow, Dagster;
- :mod:`sparkmark.devtools`: the real servers tests, benchmarks and the demo start.

Module paths from before this layout (``sparkmark.run``, ``sparkmark.status``,
``sparkmark.listing_progress``, ...) still import: they name the same module objects.
"""
import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Sequence

from sparkmark.core.errors import (BookmarkConflictError, ConcurrentRunError, ConfigError, JobStateError,
                     PipelineError, SinkError, SourceError, SparkmarkError, StateCorruptError,
                     StateStoreError, UnknownJobError, UnknownRunError)

if TYPE_CHECKING:
    from sparkmark.ops.bookmarks import Bookmarks
    from sparkmark.lifecycle.job import Job
    from sparkmark.lifecycle.pipeline import Pipeline

__version__ = "0.1.0"

__all__ = ["Bookmarks", "BookmarkConflictError", "ConcurrentRunError", "ConfigError", "Job",
           "JobStateError", "Pipeline", "PipelineError", "SinkError", "SourceError",
           "SparkmarkError", "StateCorruptError", "StateStoreError", "UnknownJobError",
           "UnknownRunError", "__version__"]


def __getattr__(name: str) -> Any:
    """Job, Bookmarks and Pipeline are imported on first use, so that the command line (which
    needs only the state store) starts fast."""
    if name == "Pipeline":
        from sparkmark.lifecycle.pipeline import Pipeline
        return Pipeline
    if name == "Job":
        from sparkmark.lifecycle.job import Job
        return Job
    if name == "Bookmarks":
        from sparkmark.ops.bookmarks import Bookmarks
        return Bookmarks
    raise AttributeError(name)


# Where the modules of the flat layout live now: the documentation and users' code name some of
# them (``sparkmark.run``, ``sparkmark.status``, ``sparkmark.listing_progress.watch_listing``)
MOVED = {
    "errors": "core.errors", "status": "core.status", "clock": "core.clock",
    "options": "core.options", "formats": "core.formats", "secrets": "core.secrets",
    "redact": "core.redact", "run": "core.run", "listing_progress": "core.listing_progress",
    "schema_drift": "planning.schema_drift",
    "jvm": "engine.jvm", "compat": "engine.compat", "spark": "engine.spark", "fs": "engine.fs",
    "jdbcconn": "engine.jdbc", "tablemeta": "engine.tablemeta", "gcpause": "engine.gcpause",
    "ledger": "state.ledger", "rollback": "sinks.rollback",
    "job": "lifecycle.job", "pipeline": "lifecycle.pipeline",
    "bookmarks": "ops.bookmarks", "bookmark_edit": "ops.bookmark_edit", "pending": "ops.pending",
    "report_html": "ops.report_html", "cli": "ops.cli", "progress": "ops.progress",
    "demo": "ops.demo", "pipeline_demo": "ops.pipeline_demo",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import sparkmark.run`` gives the module object of ``sparkmark.core.run`` (one object,
    so ``isinstance`` checks and monkeypatches see the same names)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        prefix, _, leaf = fullname.partition(".")
        if prefix != "sparkmark" or leaf not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module("sparkmark." + MOVED[spec.name.partition(".")[2]])

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when it was imported under its own name."""

    def get_code(self, fullname: str) -> Any:
        """The code of the module an old path names, for ``python -m sparkmark.cli`` (runpy
        runs it as ``__main__``, as ``python -m sparkmark.ops.cli`` does)."""
        import importlib.util  # here: the command line's start-up does not need it
        spec = importlib.util.find_spec("sparkmark." + MOVED[fullname.partition(".")[2]])
        loader = spec.loader if spec is not None else None
        if spec is None or loader is None or not hasattr(loader, "get_code"):
            return None
        return loader.get_code(spec.name)


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())
