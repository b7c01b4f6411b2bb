"""py4j answers over 8 KB without the delayed-ACK stall (``sparkmark.engine.jvm.quick_acks``): the
answers stay byte-for-byte right at every size, the connections read through the quick-ACK
stream, Java-to-Python callbacks still work, and the switch is a no-op where it must be.
(How much faster: ``benchmarks/py4j_answers.py``; no timing here.)"""
from __future__ import annotations

import socket

import pytest

from sparkmark import Job
from sparkmark.engine import jvm
from sparkmark.engine.jvm import java_class, quick_acks

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"),
                                reason="TCP_QUICKACK is Linux only; quick_acks is off elsewhere")


def test_answers_of_every_size_are_exact(spark):
    assert quick_acks(spark) is True
    assert quick_acks(spark) is True  # once per process: a second call patches nothing twice
    utils = java_class(spark, "org.apache.commons.lang3.StringUtils")
    for n in (0, 1, 8_000, 8_191, 8_192, 8_193, 10_000, 65_536, 1_000_003):
        text = utils.repeat("ab\u00e9\n", n)  # multi-byte and escaped characters too
        assert len(text) == 4 * n and text == "ab\u00e9\n" * n
    client = spark.sparkContext._gateway._gateway_client
    conns = list(getattr(client, "deque", [])) or [
        getattr(client.thread_connection, "connection", None)]
    conns = [c for c in conns if c is not None]
    assert conns and all(isinstance(c.stream, jvm._QuickAckStream) for c in conns)


def test_job_turns_it_on_and_callbacks_still_work(spark, tmp_path):
    Job(spark, f"sqlite:///{tmp_path}/state.db")  # what every job does at construction
    from py4j.clientserver import ClientServerConnection
    assert getattr(ClientServerConnection, "_sparkmark_quick_acks", False)
    seen = []
    # foreachBatch: the JVM calls back into this Python process, which calls the JVM again
    q = (spark.readStream.format("rate").option("rowsPerSecond", 50).load()
         .writeStream.foreachBatch(lambda df, i: seen.append((i, len(df.schema.json()))))
         .trigger(once=True).start())
    q.awaitTermination(120)
    assert q.exception() is None and seen and seen[0][1] > 0
    assert spark.range(10).count() == 10


def test_off_without_a_jvm_or_when_turned_off(spark, monkeypatch):
    class NoJvm:  # what a Spark Connect session looks like to it
        @property
        def _jvm(self):
            raise AttributeError("JVM_ATTRIBUTE_NOT_SUPPORTED")
    assert quick_acks(NoJvm()) is False
    monkeypatch.setenv("SPARKMARK_PY4J_QUICKACK", "0")
    assert quick_acks(spark) is False
