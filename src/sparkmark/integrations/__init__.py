"""sparkmark inside the schedulers that start its jobs (optional extras).

- :mod:`sparkmark.integrations.airflow` (``pip install 'sparkmark[airflow]'``): operators that
  run a job script or a pipeline and push the run's ledger rows to XCom, a sensor that waits for
  new input past the bookmark without starting Spark, reset and rollback operators.
- :mod:`sparkmark.integrations.dagster` (``pip install 'sparkmark[dagster]'``): a resource, assets
  whose materializations carry the ledger fields, asset checks on the module status, Pipes.

Neither is imported by ``import sparkmark``; ``pip install sparkmark`` installs neither tool.
See docs/orchestrators.md.

Example::

    from sparkmark.integrations.airflow import SparkmarkJobOperator
"""
