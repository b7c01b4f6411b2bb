"""File-system access: the one home for listing, renaming and deleting files.

Classic sessions go through Hadoop's ``FileSystem`` in the driver JVM, so every path Spark can
read works (``file:``, ``hdfs:``, ``s3a:``, ``abfs:``, ``gs:``...) with Spark's own
credentials and configuration::

    fs = HadoopFS(spark, "hdfs://nn/data/out")
    fs.mkdirs(fs.path("hdfs://nn/data/out/_tmp"))
    [(path, is_dir, size, mtime)] = fs.statuses(["hdfs://nn/data/out/part-0.parquet"])

Listing a directory tree is level by level: one ``listStatus(Path[])`` call per depth, not per
file, and the statuses cross py4j as one string (:func:`parse_statuses`), so 100,000 files list
in seconds.

Spark Connect sessions have no JVM in this process: :class:`ArrowFS` does the same through
``pyarrow.fs``.  :func:`file_system` picks one by the session's type — the only place that does
(:mod:`.choose`).

The package, one module per seam (every name below is importable from here):

- :mod:`.hadoop`: :class:`HadoopFS`, :func:`parse_statuses`, :func:`default_fs` (the JVM);
- :mod:`.arrow`: :class:`ArrowFS`, :func:`arrow_s3_options`, :func:`stat_roots` (pyarrow);
- :mod:`.choose`: :func:`file_system`, :func:`open_fs`, :func:`storage_secrets` (by session).
"""
from typing import Sequence

from sparkmark.engine.compat import is_connect
from sparkmark.engine.fs.arrow import ArrowFS, ArrowPath, arrow_s3_options, qualify, stat_roots
from sparkmark.engine.fs.choose import file_system, open_fs, register_scheme, storage_secrets
from sparkmark.engine.fs.hadoop import (HadoopFS, Status, default_fs, mount_conf,
                                        parse_statuses, s3_scheme_on_path_map, s3_scheme_on_s3a)

__all__: Sequence[str] = ["ArrowFS", "ArrowPath", "HadoopFS", "Status", "arrow_s3_options",
                          "default_fs", "file_system", "is_connect", "mount_conf", "open_fs",
                          "parse_statuses", "qualify", "register_scheme", "s3_scheme_on_path_map",
                          "s3_scheme_on_s3a", "stat_roots", "storage_secrets"]
