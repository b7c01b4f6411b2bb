"""What differs by database, apart from any connection: the driver class for a JDBC URL
(:func:`driver_for`, :func:`resolve_driver`, which also asks Spark what it has), the URL Spark's
JDBC dialects match (:func:`spark_url`), where a driver's jar comes from (:func:`apt_hint`), and
:class:`TableRef`, a resolved table with its quoted name and columns.

    driver = resolve_driver(spark, "jdbc:mariadb://db:3306/hr", {"user": "etl"})
    spark.read.jdbc(spark_url("jdbc:mariadb://db:3306/hr"), "emp", properties={"driver": driver})
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from sparkmark.engine.compat import is_connect
from sparkmark.core.errors import ConfigError, SourceError
from sparkmark.engine.jvm import java_class
from sparkmark.core.redact import redact_url

#: driver classes for common URL prefixes (used when ``properties`` has no ``driver``)
DRIVERS = (
    ("jdbc:postgresql:", "org.postgresql.Driver", "libpostgresql-jdbc-java"),
    ("jdbc:derby://", "org.apache.derby.jdbc.ClientDriver", None),
    ("jdbc:derby:", "org.apache.derby.jdbc.EmbeddedDriver", None),
    ("jdbc:mysql:", "com.mysql.cj.jdbc.Driver", None),
    ("jdbc:mariadb:", "org.mariadb.jdbc.Driver", "libmariadb-java"),
    ("jdbc:sqlite:", "org.sqlite.JDBC", "libxerial-sqlite-jdbc-java"),
    ("jdbc:sqlserver:", "com.microsoft.sqlserver.jdbc.SQLServerDriver", None),
    ("jdbc:oracle:", "oracle.jdbc.OracleDriver", None),
    ("jdbc:h2:", "org.h2.Driver", None),
    ("jdbc:db2:", "com.ibm.db2.jcc.DB2Driver", None),
)


#: the drivers a ``jdbc:mysql:`` URL works with, in order of preference, and where to get them
MYSQL_DRIVERS = (
    ("com.mysql.cj.jdbc.Driver", "MySQL Connector/J (the mysql-connector-j jar, from "
     "dev.mysql.com or Maven Central)"),
    ("org.mariadb.jdbc.Driver", "MariaDB Connector/J (Debian/Ubuntu: apt-get install "
     "libmariadb-java, /usr/share/java/mariadb-java-client.jar)"),
)

#: Spark Connect probes: (session id, driver class) -> on the server's classpath
_CONNECT_PROBES: dict[tuple[str, str], bool] = {}


def driver_for(url: str) -> str:
    """The usual driver class for ``url``'s prefix (pure; :func:`resolve_driver` also looks
    at the properties and, for ``jdbc:mysql:``, at what Spark has).

    >>> driver_for("jdbc:postgresql://db/hr")
    'org.postgresql.Driver'
    """
    for prefix, cls, _ in DRIVERS:
        if url.lower().startswith(prefix):
            return cls
    raise ConfigError(f"no known JDBC driver for {redact_url(url)}; give the driver class as "
                      "properties={'driver': '...'} and put its jar on spark.jars")


def given_driver(props: Mapping[str, Any]) -> str | None:
    """The driver class ``props`` names (key ``driver``, any case), or None.

    >>> given_driver({"Driver": "org.h2.Driver"})
    'org.h2.Driver'
    """
    for k, v in props.items():
        if str(k).lower() == "driver" and v:
            return str(v)
    return None


def resolve_driver(spark: Any, url: str, props: Mapping[str, Any]) -> str:
    """The JDBC driver class for Spark's reads and writes of ``url`` and for sparkmark's own
    connection: the ``driver`` property when given, else by URL prefix; a ``jdbc:mysql:`` URL
    gets MySQL's driver (``com.mysql.cj.jdbc.Driver``) when Spark has it, else MariaDB's
    (``org.mariadb.jdbc.Driver``, which accepts ``jdbc:mysql:`` URLs), else one error naming
    both packages.  On a classic session the driver JVM's class loader is asked; over Spark
    Connect the server is asked by a schema-only read of ``SELECT 1`` (once per session).

        resolve_driver(spark, "jdbc:mysql://db:3306/hr", {"user": "etl"})
        # 'org.mariadb.jdbc.Driver' when only libmariadb-java is on spark.jars
    """
    given = given_driver(props)
    if given:
        return given
    if not url.lower().startswith("jdbc:mysql:"):
        return driver_for(url)
    if spark is None:  # no session: a Python driver connects, the class name is not used
        return MYSQL_DRIVERS[0][0]
    for cls, _ in MYSQL_DRIVERS:
        if _has_driver(spark, cls, url, props):
            return cls
    raise SourceError(
        f"no JDBC driver for {redact_url(url)} on Spark's classpath: a jdbc:mysql: URL needs "
        f"{MYSQL_DRIVERS[0][1]} or {MYSQL_DRIVERS[1][1]}; install one, add its jar to "
        "spark.jars (or env SPARKMARK_JDBC_JARS), or name its class in properties={'driver': "
        "...}")


def _has_driver(spark: Any, cls: str, url: str, props: Mapping[str, Any]) -> bool:
    if not is_connect(spark):
        loader = java_class(spark, "java.lang.Thread").currentThread().getContextClassLoader()
        try:
            java_class(spark, "java.lang.Class").forName(cls, False, loader)
            return True
        except Exception:  # noqa: BLE001 - ClassNotFoundException
            return False
    key = (str(getattr(spark, "session_id", id(spark))), cls)
    if key not in _CONNECT_PROBES:
        reader = {str(k): str(v) for k, v in props.items()
                  if str(k).lower() in ("user", "password")}
        try:  # Spark loads the driver class before it connects
            probe = spark.read.jdbc(url, "(SELECT 1 AS x) sm_probe",
                                    properties={**reader, "driver": cls})
            _ = probe.schema  # analysed on the server: the driver class is loaded there
            _CONNECT_PROBES[key] = True
        except Exception as e:  # noqa: BLE001
            text = str(e)
            if "ClassNotFoundException" in text and cls in text:
                _CONNECT_PROBES[key] = False
            else:
                return True  # the class loaded; the read itself will report what failed
    return _CONNECT_PROBES[key]


def spark_url(url: str) -> str:
    """The URL to hand Spark's JDBC reader and writer.  Spark picks its SQL dialect by URL
    prefix and its MySQL dialect only matches ``jdbc:mysql``: a ``jdbc:mariadb:`` URL would get
    the default dialect, which quotes names with ``"`` (a string literal for MariaDB).  MariaDB's
    driver accepts the ``jdbc:mysql:`` scheme (3.x with ``permitMysqlScheme``), so the URL is
    rewritten; the driver class stays MariaDB's.

    >>> spark_url("jdbc:mariadb://db:3306/hr?user=etl")
    'jdbc:mysql://db:3306/hr?user=etl&permitMysqlScheme'
    """
    if not url.lower().startswith("jdbc:mariadb:"):
        return url
    rest = url[len("jdbc:mariadb:"):]
    return f"jdbc:mysql:{rest}{'&' if '?' in rest else '?'}permitMysqlScheme"


def apt_hint(driver: str) -> str:
    """Where to get ``driver``'s jar, for messages (empty when sparkmark does not know).

    >>> apt_hint("org.postgresql.Driver")
    ' (Debian/Ubuntu: apt-get install libpostgresql-jdbc-java)'
    """
    if driver == MYSQL_DRIVERS[0][0]:
        return (f" ({MYSQL_DRIVERS[0][1]}; for jdbc:mysql: URLs {MYSQL_DRIVERS[1][1]} works too, "
                f"with driver {MYSQL_DRIVERS[1][0]})")
    for _, cls, pkg in DRIVERS:
        if cls == driver and pkg:
            return f" (Debian/Ubuntu: apt-get install {pkg})"
    return ""


@dataclass(frozen=True)
class TableRef:
    catalog: str | None
    schema: str | None
    name: str
    quoted: str
    columns: tuple[tuple[str, int, str], ...]  # (name, java.sql.Types, type name)

    @property
    def display(self) -> str:
        return f"{self.schema}.{self.name}" if self.schema else self.name

