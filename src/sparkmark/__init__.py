"""sparkmark: job bookmarks and a run ledger for plain PySpark.

    from sparkmark import Job, Pipeline

See README.md and the product contract (SPEC) for the guarantees.
"""
from typing import TYPE_CHECKING, Any

from .errors import (BookmarkConflictError, ConcurrentRunError, ConfigError, JobStateError,
                     PipelineError, SinkError, SourceError, SparkmarkError, StateCorruptError,
                     StateStoreError, UnknownJobError, UnknownRunError)

if TYPE_CHECKING:
    from .bookmarks import Bookmarks
    from .job import Job
    from .pipeline import Pipeline

__version__ = "0.1.0"

__all__ = ["Bookmarks", "BookmarkConflictError", "ConcurrentRunError", "ConfigError", "Job",
           "JobStateError", "Pipeline", "PipelineError", "SinkError", "SourceError",
           "SparkmarkError", "StateCorruptError", "StateStoreError", "UnknownJobError",
           "UnknownRunError", "__version__"]


def __getattr__(name: str) -> Any:
    """Job, Bookmarks and Pipeline are imported on first use, so that the command line (which
    needs only the state store) starts fast."""
    if name == "Pipeline":
        from .pipeline import Pipeline
        return Pipeline
    if name == "Job":
        from .job import Job
        return Job
    if name == "Bookmarks":
        from .bookmarks import Bookmarks
        return Bookmarks
    raise AttributeError(name)
