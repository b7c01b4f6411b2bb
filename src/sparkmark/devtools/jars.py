"""The connector jars sparkmark is built and tested with, by Maven coordinates: one home.

Users get these jars by their coordinates (``spark.jars.packages`` / ``--packages``, or their
platform ships them); sparkmark's tests, benchmarks and demo get the very same coordinates from
Maven Central once (``make jars``: ``python -m sparkmark.devtools.jars fetch``) into a jar cache
(``SPARKMARK_JAR_CACHE``, default ``~/.cache/sparkmark/jars``) and hand the files to Spark as
``spark.jars``, because an Ivy resolution at every session start would cost each of the suite's
hundreds of driver starts a couple of seconds.

Each Spark line has one jar set, chosen to match what that Spark ships (its Scala and its Hadoop
client).  The Spark version of a line is the newest patch release whose ``spark-connect`` /
``spark-hadoop-cloud`` modules are published; the test venvs pin it.

========  =====  ======  ===================================================================
line      Scala  Hadoop  features
========  =====  ======  ===================================================================
3.5.7     2.12   3.3.4   s3a, cloud, connect (the server), iceberg, delta
4.1.2     2.13   3.4.2   s3a, cloud, iceberg, delta (connect ships in pyspark)
4.3.0     2.13   3.5.0   s3a (no Iceberg, Delta or spark-hadoop-cloud build for 4.3 yet)
========  =====  ======  ===================================================================

The JDBC drivers (:data:`JDBC`) do not depend on the line.

Example::

    from sparkmark.devtools.jars import jars_for, packages
    packages(["s3a", "iceberg"], "3.5.7")
    # 'org.apache.hadoop:hadoop-aws:3.3.4,org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.2'
    spark = local_session(extra_conf={"spark.jars": ",".join(jars_for(["s3a"]))})
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence
from xml.sax.saxutils import escape

ICEBERG_VERSION_35 = "1.10.2"
ICEBERG_VERSION_41 = "1.12.0"  # the first runtime for Spark 4.1 is 1.11


@dataclass(frozen=True)
class Dep:
    """One Maven artifact and whether its runtime dependencies come along (pure data).

    ``transitive=False`` takes the jar alone: Spark, Hadoop and Scala are on Spark's classpath
    already, and a connector that declares them would drag a second copy in.

    Example: ``Dep("org.apache.hadoop:hadoop-aws:3.3.4", transitive=True).jar == "hadoop-aws-3.3.4.jar"``
    """

    coordinate: str
    transitive: bool = False

    @property
    def group(self) -> str:
        return self.coordinate.split(":")[0]

    @property
    def artifact(self) -> str:
        return self.coordinate.split(":")[1]

    @property
    def version(self) -> str:
        return self.coordinate.split(":")[2]

    @property
    def jar(self) -> str:
        """The file name Maven gives the jar."""
        return f"{self.artifact}-{self.version}.jar"


@dataclass(frozen=True)
class SparkLine:
    """The jar set of one Spark line (pure data): feature name -> its artifacts.

    Example: ``LINES["3.5"].features["iceberg"][0].artifact == "iceberg-spark-runtime-3.5_2.12"``
    """

    spark: str
    scala: str
    hadoop: str
    features: Mapping[str, tuple[Dep, ...]] = field(default_factory=dict)
    #: feature -> why this line has none (shown in the error that asks for it)
    missing: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return ".".join(self.spark.split(".")[:2])


#: the artifacts that come with hadoop-aws (Ivy and Maven resolve the same four for 3.5.0:
#: hadoop-aws, the AWS SDK bundle, wildfly-openssl and, from 3.4.2 on, the analytics accelerator)
def _s3a(hadoop: str) -> tuple[Dep, ...]:
    return (Dep(f"org.apache.hadoop:hadoop-aws:{hadoop}", transitive=True),)


LINES: dict[str, SparkLine] = {
    "3.5": SparkLine(
        spark="3.5.7", scala="2.12", hadoop="3.3.4",
        features={
            "s3a": _s3a("3.3.4"),  # + com.amazonaws:aws-java-sdk-bundle:1.12.262
            "cloud": (Dep("org.apache.spark:spark-hadoop-cloud_2.12:3.5.7"),),
            "connect": (Dep("org.apache.spark:spark-connect_2.12:3.5.7"),),
            "iceberg": (Dep(f"org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:"
                            f"{ICEBERG_VERSION_35}"),),
            "delta": (Dep("io.delta:delta-spark_2.12:3.3.2"), Dep("io.delta:delta-storage:3.3.2")),
        }),
    "4.1": SparkLine(
        spark="4.1.2", scala="2.13", hadoop="3.4.2",
        features={
            "s3a": _s3a("3.4.2"),  # + software.amazon.awssdk:bundle:2.29.52
            "cloud": (Dep("org.apache.spark:spark-hadoop-cloud_2.13:4.1.2"),),
            "connect": (),  # pyspark 4.x ships the Connect server (jars/spark-connect_2.13-*.jar)
            "iceberg": (Dep(f"org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:"
                            f"{ICEBERG_VERSION_41}"),),
            "delta": (Dep("io.delta:delta-spark_4.1_2.13:4.4.0"), Dep("io.delta:delta-storage:4.4.0")),
        }),
    "4.3": SparkLine(
        spark="4.3.0", scala="2.13", hadoop="3.5.0",
        features={
            "s3a": _s3a("3.5.0"),  # + software.amazon.awssdk:bundle:2.35.4
            "connect": (),
        },
        missing={
            "iceberg": "Iceberg publishes runtimes for Spark 3.5, 4.0 and 4.1 only",
            "delta": "Delta Lake publishes builds for Spark 3.5, 4.0, 4.1 and 4.2 only",
            "cloud": "spark-hadoop-cloud_2.13 is published up to 4.1.2",
        }),
}

#: JDBC drivers, whatever the Spark line
JDBC: dict[str, Dep] = {
    "postgresql": Dep("org.postgresql:postgresql:42.7.8"),
    "mariadb": Dep("org.mariadb.jdbc:mariadb-java-client:3.5.7"),
    "mysql": Dep("com.mysql:mysql-connector-j:9.5.0"),
}
FEATURES = ("s3a", "cloud", "connect", "iceberg", "delta", "jdbc")


class FeatureUnavailable(LookupError):
    """A feature has no published jar for this Spark line."""


def jar_cache() -> Path:
    """Where the fetched jars live (env ``SPARKMARK_JAR_CACHE``, default
    ``~/.cache/sparkmark/jars``).

    Example: ``jar_cache() / "hadoop-aws-3.3.4.jar"``
    """
    env = os.environ.get("SPARKMARK_JAR_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "sparkmark" / "jars"


def line_of(spark_version: str | None = None) -> SparkLine:
    """The jar set for a Spark version (default: the installed PySpark's), by major.minor.

    Example: ``line_of("3.5.9").hadoop == "3.3.4"``
    """
    if spark_version is None:
        import pyspark
        spark_version = pyspark.__version__
    key = ".".join(spark_version.split(".")[:2])
    if key not in LINES:
        raise FeatureUnavailable(
            f"sparkmark has no jar set for Spark {spark_version}; it is tested on Spark "
            f"{', '.join(line.spark for line in LINES.values())}")
    return LINES[key]


def bundled(jars_dir: str | None = None) -> dict[str, str]:
    """The Scala and Hadoop client versions a PySpark ships, read off its jar names
    (default: the installed PySpark's ``jars/``): ``{"scala": "2.13", "hadoop": "3.5.0"}``.

    Example: ``bundled()["hadoop"] == line_of().hadoop``
    """
    if jars_dir is None:
        import pyspark
        jars_dir = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    out: dict[str, str] = {}
    for name in os.listdir(jars_dir):
        m = re.fullmatch(r"hadoop-client-api-(\d+\.\d+\.\d+)\.jar", name)
        if m:
            out["hadoop"] = m.group(1)
        m = re.fullmatch(r"scala-library-(\d+\.\d+)\.\d+\.jar", name)
        if m:
            out["scala"] = m.group(1)
    return out


def deps(features: Iterable[str], spark_version: str | None = None) -> list[Dep]:
    """The artifacts of ``features`` on a Spark line, in order, once each (pure when
    ``spark_version`` is given).  ``jdbc`` is every driver of :data:`JDBC`.

    Example: ``[d.artifact for d in deps(["iceberg"], "4.1.2")] == ["iceberg-spark-runtime-4.1_2.13"]``
    """
    line = line_of(spark_version)
    out: list[Dep] = []
    for feature in features:
        if feature == "jdbc":
            found: Sequence[Dep] = tuple(JDBC.values())
        elif feature in line.features:
            found = line.features[feature]
        elif feature in line.missing:
            have = [ln.spark for ln in LINES.values() if feature in ln.features]
            raise FeatureUnavailable(
                f"no {feature} jars for Spark {line.spark}: {line.missing[feature]}; "
                f"use Spark {' or '.join(have)}")
        else:
            raise FeatureUnavailable(f"unknown feature {feature!r}; the features are "
                                     f"{', '.join(FEATURES)}")
        out.extend(d for d in found if d not in out)
    return out


def packages(features: Iterable[str], spark_version: str | None = None) -> str:
    """The ``spark.jars.packages`` / ``--packages`` value a user sets for ``features``:
    Spark's own resolution brings each artifact's runtime dependencies (pure with a version).

    Example: ``packages(["s3a"], "4.3.0") == "org.apache.hadoop:hadoop-aws:3.5.0"``
    """
    return ",".join(d.coordinate for d in deps(features, spark_version))


def _pom(items: Sequence[Dep]) -> str:
    """A pom whose dependencies are ``items`` (pure): the non-transitive ones exclude all of
    their own dependencies."""
    rows = []
    for d in items:
        excl = ("<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId>"
                "</exclusion></exclusions>") if not d.transitive else ""
        rows.append(f"<dependency><groupId>{escape(d.group)}</groupId><artifactId>"
                    f"{escape(d.artifact)}</artifactId><version>{escape(d.version)}</version>"
                    f"{excl}</dependency>")
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0"
            "</modelVersion><groupId>sparkmark</groupId><artifactId>jar-set</artifactId>"
            "<version>1</version><packaging>pom</packaging><dependencies>"
            + "".join(rows) + "</dependencies></project>")


def _resolved(dep: Dep, cache: Path) -> list[str] | None:
    """The jars a fetch of ``dep`` left in the cache (its own and, when transitive, those the
    manifest beside it lists), or None when any is missing."""
    own = cache / dep.jar
    if not own.exists():
        return None
    if not dep.transitive:
        return [str(own)]
    manifest = cache / (dep.jar + ".deps")
    if not manifest.exists():
        return None
    names = [n for n in manifest.read_text().split() if n]
    paths = [cache / n for n in names]
    if not all(p.exists() for p in paths):
        return None
    return [str(own)] + [str(p) for p in paths]


def fetch(items: Sequence[Dep], *, cache: Path | None = None, quiet: bool = True) -> None:
    """Copy ``items`` (and the runtime dependencies of the transitive ones) from Maven Central
    into the cache with one ``mvn dependency:copy-dependencies`` per call; a transitive item
    gets a ``<jar>.deps`` manifest naming its dependencies' files.

    Example: ``fetch(deps(["s3a"], "3.5.7"))``
    """
    cache = jar_cache() if cache is None else cache
    todo = [d for d in items if _resolved(d, cache) is None]
    if not todo:
        return
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("Maven (mvn) is not installed: apt-get install maven, then run "
                           "`make jars` again")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sparkmark-jars-", dir=cache) as tmp:
        work = Path(tmp)
        # one pom per transitive item, to learn which files are its own
        groups: list[list[Dep]] = [[d] for d in todo if d.transitive]
        plain: list[list[Dep]] = []  # a pom names an artifact once: two versions, two poms
        for d in (d for d in todo if not d.transitive):
            slot = next((g for g in plain if all(o.artifact != d.artifact or o.group != d.group
                                                 for o in g)), None)
            if slot is None:
                plain.append([d])
            else:
                slot.append(d)
        groups += plain
        for n, group in enumerate(groups):
            pom = work / f"pom-{n}.xml"
            pom.write_text(_pom(group))
            out = work / f"out-{n}"
            cmd = [mvn, "-B", "-f", str(pom), "dependency:copy-dependencies",
                   f"-DoutputDirectory={out}", "-DincludeScope=runtime"]
            if quiet:
                cmd.insert(1, "-q")
            done = subprocess.run(cmd, capture_output=quiet, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"mvn could not fetch {', '.join(d.coordinate for d in group)}"
                                   f" from Maven Central:\n{(done.stdout or '')[-2000:]}")
            files = sorted(p.name for p in out.glob("*.jar"))
            for name in files:
                os.replace(out / name, cache / name)  # never a half-written jar in the cache
            if group[0].transitive:
                [d] = group
                others = [f for f in files if f != d.jar]
                part = cache / (d.jar + ".deps.part")
                part.write_text("\n".join(others) + "\n")
                os.replace(part, cache / (d.jar + ".deps"))
    missing = [d.coordinate for d in items if _resolved(d, cache) is None]
    if missing:
        raise RuntimeError(f"mvn left no jar for {', '.join(missing)} in {cache}")


def jars_for(features: Iterable[str], spark_version: str | None = None, *,
             fetch_missing: bool = False, cache: Path | None = None) -> list[str]:
    """Paths of the jars of ``features`` for a Spark line, from the cache (with their
    runtime dependencies); missing ones are fetched when ``fetch_missing``, else
    ``FileNotFoundError`` says to run ``make jars``.

    Example: ``local_session(extra_conf={"spark.jars": ",".join(jars_for(["s3a"]))})``
    """
    cache = jar_cache() if cache is None else cache
    items = deps(features, spark_version)
    if fetch_missing:
        fetch(items, cache=cache)
    out: list[str] = []
    for d in items:
        found = _resolved(d, cache)
        if found is None:
            raise FileNotFoundError(
                f"{d.coordinate} is not in the jar cache {cache}: run `make jars` "
                "(python -m sparkmark.devtools.jars fetch)")
        out.extend(p for p in found if p not in out)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m sparkmark.devtools.jars fetch [--spark V] [FEATURE...]``: fill the cache
    (every line's every feature when no ``--spark`` is given); ``packages --spark V FEATURE...``
    prints the ``--packages`` value; ``paths --spark V FEATURE...`` the cached files."""
    args = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: python -m sparkmark.devtools.jars {fetch|packages|paths} "
             "[--spark VERSION] [FEATURE ...]")
    if not args or args[0] not in ("fetch", "packages", "paths"):
        print(usage, file=sys.stderr)
        return 2
    verb, rest = args[0], args[1:]
    version = None
    if "--spark" in rest:
        i = rest.index("--spark")
        if i + 1 >= len(rest):
            print(usage, file=sys.stderr)
            return 2
        version = rest[i + 1]
        del rest[i:i + 2]
    try:
        if verb == "fetch":
            lines = [line_of(version)] if version else list(LINES.values())
            items: list[Dep] = []
            for line in lines:
                wanted = rest or [*line.features, "jdbc"]
                items += [d for d in deps(wanted, line.spark) if d not in items]
            fetch(items)
            for d in items:
                print(d.coordinate)
        elif verb == "packages":
            print(packages(rest, version))
        else:
            print("\n".join(jars_for(rest, version)))
    except (FeatureUnavailable, FileNotFoundError, RuntimeError) as e:
        print(f"sparkmark.devtools.jars: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
