"""The JDBC connection: one home for sparkmark's own connection to a JDBC source or target
(metadata, bounds, the sink's publish transaction), driver lookup, table references and
identifier quoting (used by JDBC sources and sinks alike).

    with JdbcConnection(spark, "jdbc:postgresql://db/hr", {"user": "etl", "password": pw},
                        driver_for("jdbc:postgresql://db/hr")) as conn:
        tref = conn.resolve_table("emp")        # exact name, else case-insensitive
        conn.primary_key(tref)                  # ['empno']
        conn.query(f"SELECT MAX(empno) FROM {tref.quoted}")

Where the connection comes from depends on the session, decided by :class:`JdbcConnection` and
nowhere else:

- classic session: the same driver class (and jar) Spark's JDBC reader uses, in the driver JVM
  through py4j (any database with a JDBC driver);
- Spark Connect (no JVM on this side): a Python driver in this process, for PostgreSQL
  (``jdbc:postgresql:``, pg8000) and MySQL/MariaDB (``jdbc:mysql:``, ``jdbc:mariadb:``, PyMySQL),
  both in ``pip install 'sparkmark[connect]'``; the JDBC URL and properties are read for host,
  port, database, user, password and TLS.  Other databases are one clear error.

Nothing here runs on executors; Spark's own reads and writes still go through Spark's JDBC
source on the server.  URLs in messages are masked (:func:`redact_url`).

The package, one module per seam (every name below is importable from here):

- :mod:`.connection`: :class:`JdbcConnection`, the object that picks a path and gives both one face;
- :mod:`.dialects`: what differs by database: driver classes by URL prefix (:func:`driver_for`,
  :func:`resolve_driver`), Spark's dialect URL (:func:`spark_url`), :class:`TableRef`;
- :mod:`.jvmlink`: the JVM path (py4j, ``java/SparkmarkJdbcHelper.java``), :func:`java_message`;
- :mod:`.pydrivers`: the Python drivers (DB-API) and :func:`parse_jdbc_url`.
"""
from sparkmark.engine.jdbc.connection import JdbcConnection
from sparkmark.engine.jdbc.dialects import (DRIVERS, MYSQL_DRIVERS, TableRef, apt_hint, driver_for,
                                            given_driver, resolve_driver, spark_url)
from sparkmark.engine.jdbc.jvmlink import java_message, jvm_link
from sparkmark.engine.jdbc.pydrivers import (PYTHON_DRIVERS, JdbcUrl, parse_jdbc_url, python_link,
                                             unsupported_over_connect)

__all__ = ["DRIVERS", "MYSQL_DRIVERS", "PYTHON_DRIVERS", "JdbcConnection", "JdbcUrl", "TableRef",
           "apt_hint", "driver_for", "given_driver", "java_message", "jvm_link", "parse_jdbc_url",
           "python_link", "resolve_driver", "spark_url", "unsupported_over_connect"]
