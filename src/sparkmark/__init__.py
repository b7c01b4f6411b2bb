"""sparkmark: job bookmarks and a run ledger for plain PySpark.

    from sparkmark import Job, Pipeline

See README.md and the product contract (SPEC) for the guarantees.
"""
from .bookmarks import Bookmarks
from .errors import (BookmarkConflictError, ConcurrentRunError, ConfigError, JobStateError,
                     PipelineError, SinkError, SourceError, SparkmarkError, StateCorruptError,
                     StateStoreError, UnknownJobError, UnknownRunError)
from .job import Job

__version__ = "0.1.0"

__all__ = ["Bookmarks", "BookmarkConflictError", "ConcurrentRunError", "ConfigError", "Job",
           "JobStateError", "Pipeline", "PipelineError", "SinkError", "SourceError",
           "SparkmarkError", "StateCorruptError", "StateStoreError", "UnknownJobError",
           "UnknownRunError", "__version__"]


def __getattr__(name: str):  # Pipeline is imported lazily (it is the heaviest module)
    if name == "Pipeline":
        from .pipeline import Pipeline
        return Pipeline
    raise AttributeError(name)
