"""Exactly-once sinks: stamped writes whose output survives only if the run commits.

- :mod:`.files`: file targets (stage under ``_sparkmark_staging``, publish by rename);
- :mod:`.jdbc`: database tables (stage in ``<table>__sm_stage``, publish in one transaction);
- :mod:`.table`: Apache Iceberg tables (stage an unpublished WAP snapshot, cherry-pick it);
- :mod:`.delta`: Delta Lake tables (one append stamped with the run, removed if it never counts);
- :mod:`.kinds`: what each kind of output does after the write (one protocol, by ``kind``);
- :mod:`.publish`: publish / discard / remove / recover, one dispatch on the typed outputs;
- :mod:`.stamping`: the stamp columns and the one-pass row count they share.

Sinks take a :class:`~sparkmark.core.run.RunContext`, never a ``Job``::

    n = write_files(run, df, "data/out", format="parquet", transformation_ctx="sink")
"""
from sparkmark.sinks.delta import write_delta
from sparkmark.sinks.files import write_files
from sparkmark.sinks.jdbc import write_jdbc
from sparkmark.sinks.publish import (discard_outputs, outputs_of, publish_outputs, recover_job_outputs,
                      remove_run_output)
from sparkmark.sinks.stamping import FILE_PREFIX, RUN_ID_COL, SNAPSHOT_COL, STAGING_DIR, stamp
from sparkmark.sinks.table import write_table

__all__ = ["FILE_PREFIX", "RUN_ID_COL", "SNAPSHOT_COL", "STAGING_DIR", "discard_outputs",
           "outputs_of", "publish_outputs", "recover_job_outputs", "remove_run_output", "stamp",
           "write_delta", "write_files", "write_jdbc", "write_table"]
