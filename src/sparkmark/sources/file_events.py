"""The I/O of ``fileDiscovery=events``: the SQS queue the bucket notifies, and the status of
the objects its messages name.  What to read, what to commit and which messages to delete is
decided by the pure :mod:`sparkmark.planning.events`; :func:`sparkmark.sources.files.read_files`
calls the steps here in the order list -> plan -> read -> commit -> delete.

* :class:`EventQueue` receives every visible message (10 per request, until the queue has
  none new: the queue's ``ReceiveMessageWaitTimeSeconds`` decides whether a receive
  long-polls), deletes the settled ones in batches of 10, and counts the visible messages
  without receiving any (``ApproximateNumberOfMessages``: a sensor consumes nothing and moves
  no message towards a dead-letter queue).  The received messages stay invisible for the
  queue's ``VisibilityTimeout``; a message not deleted comes back after it.
* :func:`start_discovery` receives at the start of an incremental run, before any listing,
  and says whether the run lists in full (a backfill).
* :func:`event_listing` asks the store for the current status of each object the messages
  name (one HEAD each, eight at a time), as a :class:`~sparkmark.sources.file_listing.Listing`;
  the roots' kinds come from the last backfill listing (no LIST), else from a status each.
* :func:`delete_after_commit` hands the deletes to the run, for after its state commit.

The client is boto3's, on the endpoint of ``queueUrl`` (its scheme and host), in the region
the host names (``sqs.<region>.amazonaws.com``; else ``AWS_REGION``, else us-east-1), with
the driver's AWS credentials (environment, profile, instance role).

Example::

    queue = EventQueue.open("https://sqs.us-east-1.amazonaws.com/123456789012/lake-events")
    messages = queue.receive()
    queue.approximate_count()
"""
from __future__ import annotations

import logging
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence
from urllib.parse import urlsplit

from sparkmark.core.errors import SourceError
from sparkmark.core.run import RunContext, add_after_commit
from sparkmark.core.secrets import mask_url
from sparkmark.engine.fs import file_system
from sparkmark.engine.jvm import storage_error_text
from sparkmark.planning.bands import BandOptions, BandState, FileEntry
from sparkmark.planning.event_messages import EventMessage, parse_body
from sparkmark.planning.events import (EventOptions, EventRoot, backfill_due, roots_of,
                                       settled_by_listing, wanted_paths)
from sparkmark.sources.file_listing import Listing

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("sparkmark")

#: at most this many messages are received per run (the rest wait for the next run)
MAX_MESSAGES_PER_RUN = 100_000
_REGION = re.compile(r"^(?:sqs\.)?([a-z0-9-]+)\.(?:queue\.)?amazonaws\.com(?:\.cn)?$")


def queue_region(url: str) -> str:
    """The region of an SQS queue URL (``sqs.eu-west-1.amazonaws.com`` -> ``eu-west-1``);
    for another host ``AWS_REGION``/``AWS_DEFAULT_REGION``, else ``us-east-1``.

    >>> queue_region("https://sqs.eu-west-1.amazonaws.com/123456789012/q")
    'eu-west-1'
    """
    host = urlsplit(url).hostname or ""
    m = _REGION.match(host)
    if m and m.group(1) != "sqs":
        return m.group(1)
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def _error_text(e: BaseException) -> str:
    code = getattr(e, "response", {}).get("Error", {}).get("Code") if hasattr(e, "response") \
        else None
    text = str(e) or type(e).__name__
    return f"{code}: {text}" if code and code not in text else text


class EventQueue:
    """One SQS queue of S3 event notifications (see the module docstring).

    Example: ``EventQueue.open(url).receive()``
    """

    def __init__(self, url: str, client: Any):
        self.url = url
        self.client = client

    @classmethod
    def open(cls, url: str) -> "EventQueue":
        """A client for the queue at ``url`` (no request is made yet).

        Example: ``EventQueue.open("https://sqs.us-east-1.amazonaws.com/1/q")``
        """
        import boto3
        from botocore.config import Config
        parts = urlsplit(url)
        client = boto3.client("sqs", endpoint_url=f"{parts.scheme}://{parts.netloc}",
                              region_name=queue_region(url),
                              config=Config(retries={"max_attempts": 3}, connect_timeout=10,
                                            read_timeout=40))
        return cls(url, client)

    def _refused(self, what: str, e: BaseException) -> SourceError:
        return SourceError(
            f"cannot {what} the SQS queue {mask_url(self.url)} ({_error_text(e)}); check "
            "queueUrl, that the queue exists, and that the driver's AWS credentials may "
            "sqs:ReceiveMessage, sqs:DeleteMessage and sqs:GetQueueAttributes on it; nothing "
            "was read or committed: the next run reads the same input")

    def receive(self, limit: int = MAX_MESSAGES_PER_RUN) -> list[EventMessage]:
        """Every message visible now (up to ``limit``), in the order received, each once
        (a message that comes back while the receive goes on keeps its newest receipt
        handle).  Any error is one :class:`SourceError`.

        Example: ``[r.key for m in queue.receive() for r in m.records]``
        """
        found: dict[str, EventMessage] = {}
        while len(found) < limit:
            try:
                answer = self.client.receive_message(QueueUrl=self.url,
                                                     MaxNumberOfMessages=10)
            except Exception as e:  # noqa: BLE001 - any client or transport error
                raise self._refused("receive from", e) from None
            batch = answer.get("Messages") or []
            new = [m for m in batch if m.get("MessageId") not in found]
            for m in batch:
                found[m["MessageId"]] = EventMessage(m["MessageId"], m["ReceiptHandle"],
                                                     parse_body(m.get("Body", "")))
            if not new:  # empty, or only messages that came back: all there is for now
                break
        return list(found.values())

    def delete(self, messages: Sequence[EventMessage]) -> int:
        """Delete ``messages`` (10 per request); returns how many were deleted.  A failure is
        logged, not raised: an undeleted message comes back and reads nothing.

        Example: ``queue.delete(settled)``
        """
        deleted = 0
        for at in range(0, len(messages), 10):
            chunk = messages[at:at + 10]
            try:
                answer = self.client.delete_message_batch(QueueUrl=self.url, Entries=[
                    {"Id": str(i), "ReceiptHandle": m.receipt} for i, m in enumerate(chunk)])
            except Exception as e:  # noqa: BLE001
                log.warning("sparkmark: could not delete %d message(s) from %s (%s); they come "
                            "back and read nothing", len(chunk), mask_url(self.url),
                            _error_text(e))
                continue
            deleted += len(answer.get("Successful") or [])
            failed = answer.get("Failed") or []
            if failed:
                log.warning("sparkmark: %d message(s) not deleted from %s (%s); they come back "
                            "and read nothing", len(failed), mask_url(self.url),
                            failed[0].get("Code"))
        return deleted

    def approximate_count(self) -> int:
        """The queue's ``ApproximateNumberOfMessages`` (visible, not in flight): no message
        is received, so none is consumed or counted towards a dead-letter redrive.

        Example: ``EventQueue.open(url).approximate_count() > 0``
        """
        try:
            attrs = self.client.get_queue_attributes(
                QueueUrl=self.url, AttributeNames=["ApproximateNumberOfMessages"])
        except Exception as e:  # noqa: BLE001
            raise self._refused("read the attributes of", e) from None
        return int((attrs.get("Attributes") or {}).get("ApproximateNumberOfMessages", 0))


@dataclass
class EventDiscovery:
    """An event-mode run: its queue, the messages it received, whether it lists in full.

    Example: ``d = start_discovery(opts, previous, T); d.backfill, len(d.messages)``
    """

    queue: EventQueue
    opts: EventOptions
    backfill: bool
    reason: str
    messages: list[EventMessage] = field(default_factory=list)

    def info(self) -> dict[str, Any]:
        """The ledger fields every event-mode run has.

        Example: ``info.update(discovery.info())``
        """
        return {"discovery": "events", "backfill": self.backfill,
                "discovery_reason": self.reason,
                "events": sum(len(m.records) for m in self.messages)}


def start_discovery(opts: EventOptions, previous: BandState | None, listing_ts: int,
                    queue: EventQueue | None = None) -> EventDiscovery:
    """Receive the queue's messages (before any listing: an object a message names existed
    before the listing) and decide whether the run lists in full.

    Example: ``start_discovery(opts, previous, bookmark.listing_ts)``
    """
    due, why = backfill_due(previous, listing_ts, opts)
    assert opts.queue_url is not None
    q = queue or EventQueue.open(opts.queue_url)
    return EventDiscovery(q, opts, due, why, q.receive())


def _status(fs: Any, path: str) -> list[tuple[str, bool, int, int]]:
    return list(fs.status_of(fs.path(path)))


def event_listing(spark: "SparkSession", paths: Sequence[str], messages: Sequence[EventMessage],
                  band: BandOptions, known: Mapping[str, bool] | None = None
                  ) -> tuple[Listing, list[EventRoot], dict[str, FileEntry | None]]:
    """The roots of ``paths`` and the current status of each object the messages name (by
    the path the event gives; ``None``: gone), as a ``Listing`` of mode ``events`` that the
    read takes like a listing.  One HEAD per distinct object.

    ``known``: the roots the last backfill listing found, each ``True`` for a file root
    (:func:`sparkmark.planning.events.known_roots`); a root among them costs no request.  Any
    other root is asked for its status (on S3A a HEAD and, for a directory, a LIST of at most
    2 keys; a missing root is the listing's error).  A known root deleted since is not
    noticed here: its objects' events resolve to nothing, and the next backfill's listing
    says the root is missing.

    Example: ``listing, roots, current = event_listing(spark, ["s3a://lake/in"], msgs, opts)``
    """
    out = Listing()
    out.mode = "events"
    roots: list[str] = []
    file_roots: list[str] = []
    for raw in paths:
        try:
            fs = file_system(spark, raw)
            qualified = str(fs.qualify(raw))
            root = qualified.rstrip("/")
            if known and root in known:  # the backfill listing saw it: no request
                found = [(root, not known[root], 0, 0)]
            else:
                found = _status(fs, qualified)
        except Exception as e:  # noqa: BLE001
            raise SourceError(f"cannot open input path {mask_url(raw)!r}: "
                              f"{storage_error_text(e, raw)}; nothing was read or committed: "
                              "the next run reads the same input") from None
        if not found:
            raise SourceError(f"input path {mask_url(raw)!r} does not exist; check the path, "
                              "or create the directory before the first run")
        roots.append(root)
        if found[0][1]:
            out.dir_roots.append(root)
        else:
            file_roots.append(root)
            out.file_roots.add(root)
    out.roots = roots
    event_roots = roots_of(roots, file_roots)
    wanted = wanted_paths(messages, event_roots, band)
    current: dict[str, FileEntry | None] = {}
    if wanted:
        fs = file_system(spark, wanted[0])

        def one(path: str) -> list[tuple[str, bool, int, int]]:
            return _status(fs, path)
        try:
            if len(wanted) <= 2:
                statuses = [one(p) for p in wanted]
            else:
                with ThreadPoolExecutor(min(8, len(wanted))) as pool:
                    statuses = list(pool.map(one, wanted))
        except Exception as e:  # noqa: BLE001
            raise SourceError(f"cannot read the status of the objects the queue names under "
                              f"{mask_url(paths[0])!r}: {storage_error_text(e, paths[0])}; "
                              "nothing was read or committed") from None
        for path, found in zip(wanted, statuses):
            files = [FileEntry(mtime, p, size) for p, is_dir, size, mtime in found
                     if not is_dir]
            current[path] = files[0] if files else None
    found_files = sorted({f for f in current.values() if f is not None})
    out.entries.extend(found_files)
    for f in found_files:  # for check_partition_layout, as a listing gives them
        base = next((r for r in out.dir_roots if f.path.startswith(r + "/")), None)
        if base is not None:
            out.file_dirs.append((base, f.path.rpartition("/")[0], f.path))
    return out, event_roots, current


def listed_by_path(listing: Listing, messages: Sequence[EventMessage], roots: list[EventRoot],
                   band: BandOptions) -> dict[str, FileEntry]:
    """The listed files that ``messages`` name, by path (a backfill settles those messages).

    Example: ``listed_by_path(listing, discovery.messages, roots, opts)``
    """
    wanted = set(wanted_paths(messages, roots, band))
    if not wanted:
        return {}
    entries = listing.entries
    at = [i for i, p in enumerate(entries.paths()) if p in wanted]
    return {f.path: f for f in entries.take(at)}


def backfill_settles(listing: Listing, discovery: EventDiscovery, state: BandState,
                     band: BandOptions, selected: Sequence[FileEntry]) -> tuple[
                         list[EventMessage], dict[str, Any]]:
    """After a backfill listing: the messages the committed ``state`` settles, and the
    ledger's event counts (records whose object the run reads, the others).

    Example: ``settled, counts = backfill_settles(listing, discovery, state, opts, selected)``
    """
    roots = roots_of([r for r in listing.roots], sorted(listing.file_roots))
    listed = listed_by_path(listing, discovery.messages, roots, band)
    delete, keep = settled_by_listing(discovery.messages, roots, listed, state, band)
    named = {p for p in listed}
    read = {f.path for f in selected if f.path in named}
    records = sum(len(m.records) for m in discovery.messages)
    kept_ids = set(keep)
    kept = sum(len(m.records) for m in discovery.messages if m.id in kept_ids)
    taken = len(read)
    ids = set(delete)
    counts = {"events_taken": taken, "events_kept": kept,
              "events_ignored": max(records - taken - kept, 0),
              "messages": len(discovery.messages), "messages_to_delete": len(delete)}
    return [m for m in discovery.messages if m.id in ids], counts


def delete_after_commit(run: RunContext, discovery: EventDiscovery,
                        settled: Sequence[EventMessage]) -> None:
    """Have the run delete ``settled`` once its state has committed.

    Example: ``delete_after_commit(run, discovery, settled)``
    """
    if not settled:
        return
    chosen = list(settled)
    if not add_after_commit(run, lambda: _delete(discovery.queue, chosen)):
        log.info("sparkmark: this run context deletes no event messages; they come back and "
                 "read nothing")


def _delete(queue: EventQueue, messages: list[EventMessage]) -> None:
    queue.delete(messages)

