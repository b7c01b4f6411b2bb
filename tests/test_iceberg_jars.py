"""The relocated Jackson build of ``sparkmark.devtools.iceberg`` (pure, no Spark session):
constant-pool rewriting of real class files from the running PySpark's Jackson jars."""
from __future__ import annotations

import glob
import os
import struct
import zipfile

import pytest

from sparkmark.devtools.iceberg import (build_shaded_jackson, relocate_class, relocate_name)


def _jackson_core() -> str:
    import pyspark
    found = sorted(glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars",
                                          "jackson-core-2.*.jar")))
    if not found:
        pytest.skip("this PySpark ships no jackson-core jar")
    return found[0]


def _utf8_constants(data: bytes) -> tuple[list[bytes], int]:
    """The CONSTANT_Utf8 strings of a class file and the offset where its pool ends."""
    sizes = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 16: 2, 19: 2, 20: 2, 9: 4, 10: 4, 11: 4,
             12: 4, 17: 4, 18: 4, 15: 3}
    count = struct.unpack_from(">H", data, 8)[0]
    pos, i, out = 10, 1, []
    while i < count:
        tag = data[pos]
        if tag == 1:
            n = struct.unpack_from(">H", data, pos + 1)[0]
            out.append(data[pos + 3:pos + 3 + n])
            pos += 3 + n
        else:
            pos += 1 + sizes[tag]
        i += 2 if tag in (5, 6) else 1
    return out, pos


def test_relocated_classes_refer_to_the_shaded_package_only():
    with zipfile.ZipFile(_jackson_core()) as jar:
        names = [n for n in jar.namelist() if n.startswith("com/fasterxml/jackson/")
                 and n.endswith(".class")][:200]
        assert names
        for name in names:
            data = jar.read(name)
            new = relocate_class(data)
            before, end_old = _utf8_constants(data)
            after, end_new = _utf8_constants(new)
            assert len(before) == len(after)
            assert new[end_new:] == data[end_old:]  # everything after the pool is untouched
            for s in after:
                assert s.replace(b"org/apache/iceberg/shaded/com/fasterxml/jackson", b"") \
                    .replace(b"org.apache.iceberg.shaded.com.fasterxml.jackson", b"") \
                    .find(b"com/fasterxml/jackson") == -1


def test_shaded_jar_renames_entries_and_service_files(tmp_path):
    target = build_shaded_jackson([_jackson_core()], str(tmp_path / "shaded.jar"))
    with zipfile.ZipFile(target) as jar:
        names = jar.namelist()
        assert "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactory.class" in names
        assert not any(n.startswith("com/fasterxml/") for n in names)
        services = [n for n in names if n.startswith("META-INF/services/")]
        assert services and all(n.startswith("META-INF/services/org.apache.iceberg.shaded."
                                              "com.fasterxml.jackson.") for n in services)
        assert relocate_name("com/fasterxml/jackson/core/A.class") == \
            "org/apache/iceberg/shaded/com/fasterxml/jackson/core/A.class"
        for n in services:
            assert b"com.fasterxml.jackson" not in jar.read(n).replace(
                b"org.apache.iceberg.shaded.com.fasterxml.jackson", b"")
    with pytest.raises(ValueError, match="not a class file"):
        relocate_class(b"PK\x03\x04")
