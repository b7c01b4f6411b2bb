"""The engine plumbing: one home each for the JVM (py4j calls, Java errors), the Spark version
checks, the file systems, the JDBC connection, Iceberg table metadata and local sessions.

Sources, sinks, the state store's callers and the operator's tools use these; nothing here
knows about jobs or pipelines::

    from sparkmark.engine.fs import file_system
    from sparkmark.engine.compat import spark_version
"""
