"""The messages of file events, as plain data: what an SQS message body says about objects.

S3 event notifications reach the queue in several wrappings (S3's own ``Records``, its
``s3:TestEvent``, EventBridge's S3 events, any of them inside an SNS notification);
:func:`parse_body` turns each into :class:`EventRecord` s.  Planning what to read from them is
:mod:`sparkmark.planning.events`; receiving and deleting is :mod:`sparkmark.sources.file_events`.

Example::

    records = parse_body(body)   # (EventRecord("created", "lake", "in/a.json", size=12, ...),)
    EventMessage("m1", "receipt-handle", records)
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping
from urllib.parse import unquote_plus

__all__ = ["EventMessage", "EventRecord", "parse_body"]


@dataclass(frozen=True)
class EventRecord:
    """One record of an event message: ``kind`` is ``created``, ``removed``, ``test`` (S3's
    ``s3:TestEvent``) or ``other`` (a body sparkmark does not know: read nothing); ``key`` is
    decoded.

    Example: ``EventRecord("created", "lake", "in/a b.json", size=12)``
    """

    kind: str
    bucket: str = ""
    key: str = ""
    size: int | None = None
    time_ms: int | None = None


@dataclass(frozen=True)
class EventMessage:
    """A message received from the queue: its id, the receipt handle that deletes it, and its
    records.

    Example: ``EventMessage("m1", "rh", parse_body(body))``
    """

    id: str
    receipt: str
    records: tuple[EventRecord, ...] = ()


def _time_ms(text: Any) -> int | None:
    try:
        return int(datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp() * 1000)
    except (TypeError, ValueError):
        return None


def _s3_record(rec: Mapping[str, Any]) -> EventRecord:
    name = str(rec.get("eventName", ""))
    s3 = rec.get("s3") or {}
    bucket = str((s3.get("bucket") or {}).get("name", ""))
    obj = s3.get("object") or {}
    kind = ("created" if name.startswith("ObjectCreated") else
            "removed" if name.startswith("ObjectRemoved") else "other")
    size = obj.get("size")
    return EventRecord(kind, bucket, unquote_plus(str(obj.get("key", ""))),
                       int(size) if isinstance(size, int) else None,
                       _time_ms(rec.get("eventTime")))


def parse_body(body: str) -> tuple[EventRecord, ...]:
    """The records of one SQS message body: an S3 notification (``Records``, keys
    form-encoded), S3's ``s3:TestEvent``, an EventBridge S3 event (``detail-type`` ``Object
    Created``/``Object Deleted``) or either wrapped by SNS (``Message``).  Anything else is
    one ``other`` record (it names no object: read nothing, delete it).

    >>> parse_body('{"Records": [{"eventName": "ObjectCreated:Put", "s3": {"bucket": '
    ...            '{"name": "lake"}, "object": {"key": "in%2Fa+b.json", "size": 2}}}]}')[0].key
    'in/a b.json'
    """
    try:
        doc = json.loads(body)
    except (TypeError, ValueError):
        return (EventRecord("other"),)
    if isinstance(doc, dict) and doc.get("Type") == "Notification" and "Message" in doc:
        return parse_body(str(doc["Message"]))  # SNS fan-out
    if not isinstance(doc, dict):
        return (EventRecord("other"),)
    if doc.get("Event") == "s3:TestEvent":
        return (EventRecord("test", str(doc.get("Bucket", ""))),)
    if isinstance(doc.get("Records"), list):
        return tuple(_s3_record(r) if isinstance(r, dict) else EventRecord("other")
                     for r in doc["Records"]) or (EventRecord("other"),)
    if doc.get("source") == "aws.s3" and isinstance(doc.get("detail"), dict):
        detail = doc["detail"]
        kind = {"Object Created": "created", "Object Deleted": "removed"}.get(
            str(doc.get("detail-type")), "other")
        obj = detail.get("object") or {}
        size = obj.get("size")
        return (EventRecord(kind, str((detail.get("bucket") or {}).get("name", "")),
                            str(obj.get("key", "")), int(size) if isinstance(size, int) else None,
                            _time_ms(doc.get("time"))),)
    return (EventRecord("other"),)
