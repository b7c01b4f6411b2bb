"""Late files: files that the band rule will never select, found with bounded state.

A *late file* is one whose mtime is at or below the previous run's ``low`` (so
:func:`~sparkmark.planning.bands.plan_band` skips it), which no earlier run of this context read,
and which was not in the previous listing.  Copies that keep their times (``cp -p``, ``rsync -a``,
``shutil.copy2``, ``tar x``, ``distcp -pt``) and S3 multipart uploads (LastModified is the
upload's start) produce them.  Glue skips them silently.

The method: the state keeps a *settled-region sketch*, an invertible Bloom lookup table (IBLT)
over ``key(path, mtime)`` of every file in the settled region (``mtime <= low``) of the listing,
cut at the ``low`` it was built at, plus the set's count, XOR and sum (a digest).  A run with a
full listing computes the same digest over its own settled files (``mtime <= previous low``):

* digest equal: nothing changed in the settled region (no late file; a false "equal" needs a
  64-bit sum *and* XOR collision of random keys);
* digest different: it builds the IBLT of its settled files, subtracts the stored one and
  *decodes* the symmetric difference: the keys only in the listing are late files, the ones only
  in the sketch were deleted.  Up to about :data:`~sparkmark.planning.iblt.CAPACITY`
  differences decode with high probability; beyond that the run knows there are differences but
  cannot name them (:attr:`LateCheck.overflow`), and the next sketch is rebuilt from the listing.

The sketch is a fixed :data:`~sparkmark.planning.iblt.CELLS` cells (16 bytes each), whatever the
number of files or runs; the table itself (:class:`~sparkmark.planning.iblt.IBLT`, its cells and
mixer) lives in :mod:`sparkmark.planning.iblt`.

Limits (see docs/files.md): a file that an earlier run read, that then vanished from a listing
and reappears with the same path and mtime is reported as late (the sketch does not remember
what was read, only what was listed); a 64-bit key collision between a late file and a deleted
one hides both; runs with an incremental (partial) listing cannot check and leave it to the next
full listing, keeping the sketch up to date with the files they read.

Everything here is pure: plain data in, plain data out.
"""
from __future__ import annotations

import functools
import hashlib
import operator
import zlib
from array import array
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

from sparkmark.planning.bands import FileEntry, path_hash
from sparkmark.planning.filecolumns import FileColumns
from sparkmark.planning.iblt import IBLT, M64

SAMPLE = 20           # names kept in the ledger / named by lateFiles=fail
_GOLD = 0x9E3779B97F4A7C15
_GOLD_INV = pow(_GOLD, -1, 1 << 64)
_ORDER_CHUNK = 65_536  # entries per update of listing_order's digest



def item_key(phash: str, mtime: int) -> int:
    """The sketch key of a file version: its 64-bit path hash (hex, as in the band's ``files``)
    combined with its mtime.  Cheap (no second digest), so the settled region of 100,000 files
    costs one path hash each; ``mix64`` is applied only when an IBLT is built."""
    return (int(phash, 16) + (mtime & M64) * _GOLD) & M64


def path_keys(entries: Sequence[FileEntry]) -> "array[int]":
    """The 64-bit path hash of each entry (:func:`~sparkmark.planning.bands.path_hash` as a
    number: the SHA-1 digest's first 8 bytes), in an ``array("Q")``.  A first run computes them
    once for its whole listing: its sketch keys (:func:`keys_of` with ``hashes``) and its audit
    rows both need them, and the digest is most of what either costs.

    >>> from sparkmark.planning.bands import path_hash
    >>> [f"{k:016x}" for k in path_keys([FileEntry(5, "file:/a")])] == [path_hash("file:/a")]
    True
    """
    sha1, from_bytes = hashlib.sha1, int.from_bytes
    out = array("Q")
    for i in range(0, len(entries), _KEYS_CHUNK):
        out.extend([from_bytes(sha1(p.encode("utf-8")).digest()[:8], "big")
                    for p in _paths(entries, i, i + _KEYS_CHUNK)])
    return out


def _paths(entries: Sequence[FileEntry], lo: int, hi: int) -> list[str]:
    """The paths of ``entries[lo:hi]`` (from a FileColumns' chunks, no entry made)."""
    if isinstance(entries, FileColumns):
        return entries.paths(lo, hi)
    return list(map(_PATH_OF, entries[lo:hi]))


def _mtimes(entries: Sequence[FileEntry]) -> Any:
    """The entries' mtimes as a numpy int64 array."""
    if isinstance(entries, FileColumns):
        return entries.mtimes_np()
    import numpy as np
    return np.fromiter(map(_MTIME_OF, entries), dtype=np.int64, count=len(entries))


def keys_of(entries: Iterable[FileEntry],
            hashes: "Sequence[int] | None" = None) -> "array[int]":
    """``item_key(path_hash(path), mtime)`` of each entry, computed in one comprehension (the
    SHA-1 digest's first 8 bytes are the path hash's 16 hex digits): about 3 times faster than
    the two calls, which matters for the settled region's digest of every full listing.

    The keys come as 64-bit unsigned integers in an ``array("Q")``: 8 bytes a key where a list
    of Python ints takes ~48 (as a list, a first run's sketch keys of a million files were
    ~45 MB of the driver's peak), built :data:`_KEYS_CHUNK` at a time.

    ``hashes``: the entries' :func:`path_keys`, when the caller has them (no digest then).

    >>> from sparkmark.planning.bands import path_hash
    >>> list(keys_of([FileEntry(5, "file:/a")])) == [item_key(path_hash("file:/a"), 5)]
    True
    >>> e = [FileEntry(5, "file:/a"), FileEntry(-7, "file:/b")]
    >>> keys_of(e, path_keys(e)) == keys_of(e)
    True
    """
    sha1, from_bytes = hashlib.sha1, int.from_bytes
    if not isinstance(entries, Sequence):
        entries = list(entries)
    if hashes is None:
        out = array("Q")
        for i in range(0, len(entries), _KEYS_CHUNK):
            out.extend([from_bytes(sha1(p.encode("utf-8")).digest()[:8], "big")
                        for p in _paths(entries, i, i + _KEYS_CHUNK)])
        hashes = out
    if len(hashes) != len(entries):
        raise ValueError(f"{len(hashes)} path hashes for {len(entries)} entries")
    if not len(entries):
        return array("Q")
    import numpy as np
    # (hash + mtime * gold) mod 2**64 on uint64 arrays: they wrap as the mask does, and an
    # mtime before 1970 is its two's complement, as ``m & M64``
    h = (hashes if isinstance(hashes, np.ndarray) else
         np.frombuffer(hashes, dtype=np.uint64) if isinstance(hashes, array) and
         hashes.typecode == "Q" else np.array(hashes, dtype=np.uint64))
    keys = h + _mtimes(entries).astype(np.uint64) * np.uint64(_GOLD)
    return array("Q", keys.tobytes())


_KEYS_CHUNK = 65_536


def _joined(a: Sequence[int], b: Sequence[int]) -> Sequence[int]:
    """``a`` then ``b``, as one ``array("Q")`` when both are (no list of a million ints)."""
    if isinstance(a, array) and isinstance(b, array):
        return a + b
    return list(a) + list(b)


def listing_order(entries: Sequence[FileEntry]) -> str:
    """A fingerprint of these entries' paths and mtimes *in this order*: one SHA-1 over their
    number and, :data:`_ORDER_CHUNK` entries at a time, their mtimes and NUL-terminated paths
    (plus the paths' lengths in a chunk where a path holds a NUL, so the encoding stays
    unambiguous), about 4 times cheaper than :func:`keys_of` (one digest for all, not one per
    path) and with bounded extra memory (a chunk's text, not a million paths').  Equal
    fingerprints mean the same files with the same mtimes in the same order; a listing in
    another order only takes the slower way.

    >>> a, b = FileEntry(5, "file:/a"), FileEntry(7, "file:/b")
    >>> listing_order([a, b]) == listing_order([a, b]), listing_order([a, b]) == listing_order([b, a])
    (True, False)
    """
    h = hashlib.sha1(len(entries).to_bytes(8, "little"))
    mtimes = _mtimes(entries)
    for i in range(0, len(entries), _ORDER_CHUNK):
        if isinstance(entries, FileColumns):  # the chunk's text from the columns' strings
            n = min(len(entries), i + _ORDER_CHUNK) - i
            text = entries.joined(i, i + _ORDER_CHUNK)
            if text.count("\0") == n - 1:  # no path holds a NUL
                _order_text(h, text, mtimes[i:i + _ORDER_CHUNK])
                continue
        _order_update(h, _paths(entries, i, i + _ORDER_CHUNK), mtimes[i:i + _ORDER_CHUNK])
    return h.hexdigest()


_PATH_OF, _MTIME_OF = operator.itemgetter(1), operator.itemgetter(0)


def _order_text(h: Any, text: str, mtimes: Any) -> None:
    """One chunk of :func:`listing_order` whose paths hold no NUL, given as their NUL-joined
    ``text`` (what :func:`_order_update` hashes for them)."""
    h.update(b"\0")
    h.update(mtimes.tobytes())
    h.update(text.encode("utf-8", "surrogatepass"))
    h.update(b"\0")


def _order_update(h: Any, paths: Sequence[str], mtimes: Any) -> None:
    """One chunk of :func:`listing_order`: its paths and their mtimes (int64 in an
    ``array("q")`` or a numpy array)."""
    text = "\0".join(paths)  # each path NUL-terminated: the last NUL is hashed on its own
    # (``text + "\0"`` copied the whole chunk's text: ~3 ms per 65,536 paths)
    plain = text.count("\0") == len(paths) - 1  # no path holds a NUL: no lengths needed
    h.update(b"\0" if plain else b"\1")
    h.update(mtimes.tobytes())
    if not plain:
        h.update(array("q", map(len, paths)).tobytes())
    h.update(text.encode("utf-8", "surrogatepass"))
    h.update(b"\0")




# ---------------------------------------------------------------------- the sketch
@dataclass(frozen=True)
class Digest:
    """Count, XOR and sum (mod 2**64) of a set of keys: equal sets have equal digests."""

    n: int = 0
    xor: int = 0
    total: int = 0

    @classmethod
    def of(cls, keys: Sequence[int]) -> "Digest":
        return cls(len(keys), functools.reduce(operator.xor, keys, 0), sum(keys) & M64)

    def plus(self, keys: Sequence[int]) -> "Digest":
        other = Digest.of(keys)
        return Digest(self.n + other.n, self.xor ^ other.xor, (self.total + other.total) & M64)


@dataclass(frozen=True)
class SettledSketch:
    """The settled region (``mtime <= at``) of the listing as a digest plus an IBLT."""

    at: int
    digest: Digest
    table: IBLT
    #: the ``low`` of the last *full* listing: every file with ``mtime <= full_at`` was listed
    #: then; a file above it that a partial (incremental, lexical) listing never showed may be
    #: new (None: as ``at``, elements written before it existed)
    full_at: int | None = None
    #: :func:`listing_order` of the full listing's files with ``mtime <= at`` when the sketch
    #: holds exactly those (None: unknown): a next full listing whose settled region has the
    #: same fingerprint has nothing late and nothing removed, without a key per file
    order: str | None = None

    @property
    def seen_to(self) -> int:
        """Up to which mtime every file was listed: ``full_at``, else ``at``."""
        return self.at if self.full_at is None else self.full_at

    def to_element(self) -> dict[str, Any]:
        out = {"at": self.at, "n": self.digest.n, "xor": f"{self.digest.xor:016x}",
               "sum": f"{self.digest.total:016x}", "iblt": self.table.encode()}
        if self.full_at is not None:
            out["full_at"] = self.full_at
        if self.order is not None:
            out["order"] = self.order
        return out

    @classmethod
    def from_element(cls, element: Mapping[str, Any] | None) -> "SettledSketch | None":
        """Decode a stored sketch; a missing or unreadable one is ``None`` (check skipped)."""
        if not isinstance(element, Mapping):
            return None
        try:
            full_at = element.get("full_at")
            order = element.get("order")
            return cls(at=int(element["at"]),
                       digest=Digest(int(element["n"]), int(element["xor"], 16),
                                     int(element["sum"], 16)),
                       table=IBLT.decode_text(str(element["iblt"])),
                       full_at=None if full_at is None else int(full_at),
                       order=order if isinstance(order, str) else None)
        except (KeyError, TypeError, ValueError, zlib.error):
            return None

    def plus(self, keys: Sequence[int], at: int, full_at: int | None = None) -> "SettledSketch":
        table = self.table.copy()
        table.add_all(keys)
        return SettledSketch(at=at, digest=self.digest.plus(keys), table=table, full_at=full_at)


def build_sketch(keys: Sequence[int], at: int, full_at: int | None = None) -> SettledSketch:
    """The sketch of exactly these keys (the settled files of a listing, ``mtime <= at``)."""
    table = IBLT()
    table.add_all(keys)
    return SettledSketch(at=at, digest=Digest.of(keys), table=table, full_at=full_at)


@dataclass(frozen=True)
class LateCheck:
    """What a full listing's settled region says against the stored sketch.

    ``late``: indexes (into the settled entries given) of the late files; ``removed``: how many
    keys of the sketch are no longer listed; ``overflow``: more differences than the sketch can
    decode (late files may exist but cannot be named); ``table``: the IBLT of the settled keys,
    when it had to be built (reused for the next sketch)."""

    late: tuple[int, ...] = ()
    removed: int = 0
    overflow: bool = False
    checked: bool = True
    table: IBLT | None = None
    removed_keys: frozenset[int] = frozenset()


def check_late(settled_keys: Sequence[int], previous: SettledSketch | None,
               low: int | None) -> LateCheck:
    """Compare the keys of the listing's settled files (``mtime <= low``, the previous run's low)
    with the previous sketch.  Pure; ``O(len(settled_keys))``, plus an IBLT build only when the
    digests differ.

    >>> s = build_sketch([item_key("00000000000000aa", 5)], at=10)
    >>> check_late([item_key("00000000000000aa", 5), item_key("00000000000000bb", 7)], s, 10).late
    (1,)
    """
    if previous is None or low is None or previous.at != low:
        return LateCheck(checked=False)
    digest = Digest.of(settled_keys)
    if digest == previous.digest:
        return LateCheck()
    table = IBLT()
    table.add_all(settled_keys)
    plus, minus, complete = table.minus(previous.table).decode()
    if not complete:
        return LateCheck(overflow=True, table=table)
    late = tuple(i for i, k in enumerate(settled_keys) if k in plus)
    return LateCheck(late=late, removed=len(minus), table=table, removed_keys=frozenset(minus))


def listed_before(entry: FileEntry, removed_keys: frozenset[int] | set[int],
                  band_files: Mapping[str, int], upper: int) -> bool:
    """Whether ``entry``'s path was known with a later mtime: in the band's ``files`` (read
    by a run), or in the sketch under a key no longer listed (the same path with an mtime in
    ``(entry.mtime, upper]``; ``upper``: the previous low, above which the sketch holds
    nothing).  Such a file moved its mtime back (``touch -d``, a copy over it with an old
    time): it is not a new file, so neither late nor read again.  Pure;
    ``O(len(removed_keys))``.  A random key passes the sketch test with probability
    ``(upper - entry.mtime) / 2**64``.

    >>> k = item_key(path_hash("file:/a"), 50)
    >>> a, b = FileEntry(7, "file:/a"), FileEntry(7, "file:/b")
    >>> listed_before(a, {k}, {}, 60), listed_before(b, {k}, {}, 60), listed_before(a, {k}, {}, 40)
    (True, False, False)
    """
    phash = path_hash(entry.path)
    if band_files.get(phash, entry.mtime) > entry.mtime:
        return True
    base, span = int(phash, 16), upper - entry.mtime
    return span > 0 and any(0 < ((((k - base) * _GOLD_INV) & M64) - entry.mtime) <= span
                            for k in removed_keys)


def next_sketch(previous: SettledSketch | None, check: LateCheck, settled_keys: Sequence[int],
                settling_keys: Sequence[int], new_low: int, *, full: bool) -> SettledSketch:
    """The sketch the run commits, cut at ``new_low``.

    ``full``: the run listed everything; the sketch is then exactly the listing's settled region
    (``settled_keys``: ``mtime <= previous low``; ``settling_keys``: ``previous low < mtime <=
    new_low``), which also forgets deleted files.  Otherwise (incremental listing) the previous
    sketch plus ``settling_keys`` (files read by this or earlier runs that leave the band)."""
    if full:   # everything up to new_low was listed now
        if check.table is not None:
            table = check.table.copy()
            table.add_all(settling_keys)
            return SettledSketch(new_low, Digest.of(settled_keys).plus(settling_keys), table,
                                 full_at=new_low)
        if previous is not None and check.checked and not check.overflow:
            return previous.plus(settling_keys, new_low, new_low)   # equal digests: same set
        return build_sketch(_joined(settled_keys, settling_keys), new_low, new_low)
    if previous is None:
        return build_sketch(settling_keys, new_low, full_at=None)
    return previous.plus(settling_keys, new_low, previous.seen_to)


# ---------------------------------------------------------------------- one run
@dataclass(frozen=True)
class LatePlan:
    """The late files a run found (oldest first) and the sketch it commits.

    ``count`` is ``None`` when the run could not check (first run, an element without a sketch,
    an incremental listing) or could not name them (``overflow``)."""

    late: tuple[FileEntry, ...]
    count: int | None
    sketch: SettledSketch
    overflow: bool = False
    removed: int = 0
    #: files a partial listing could not have shown (mtime above the last full listing's low,
    #: never read): new input the run reads, whatever ``lateFiles`` says
    unseen: tuple[FileEntry, ...] = ()
    #: known paths whose mtime moved back (not new: neither late nor read)
    moved: int = 0

    def info(self) -> dict[str, Any]:
        """The ledger fields: ``late_files`` (count or None) and a sample of names."""
        out: dict[str, Any] = {"late_files": self.count,
                               "late_sample": [f.path.rsplit("/", 1)[-1]
                                               for f in self.late[:SAMPLE]]}
        if self.overflow:
            out["late_overflow"] = True
        if self.unseen:
            out["backfilled"] = len(self.unseen)
        if self.moved:
            out["mtime_moved_back"] = self.moved
        return out


def _unchanged_settled(listing: FileColumns, previous_low: int, new_low: int,
                       order: str) -> tuple[FileColumns, str] | None:
    """The fast path of :func:`plan_late`: ``None`` unless the listing's settled files
    (``mtime <= previous_low``) have the fingerprint ``order``; then the files settling now
    (``previous_low < mtime <= new_low``) and the fingerprint of every file up to ``new_low``.

    Both regions are cut from the listing's mtime column as views (filtering the
    entries twice and making each fingerprint from entries again was ~48 ms of an incremental
    run over 100,000 files).

    >>> a, b = FileEntry(5, "file:/a"), FileEntry(7, "file:/b")
    >>> fresh, order = _unchanged_settled(FileColumns.of([a, b]), 5, 9, listing_order([a]))
    >>> list(fresh) == [b] and order == listing_order([a, b])
    True
    >>> _unchanged_settled(FileColumns.of([a, b]), 5, 9, listing_order([b])) is None
    True
    """
    mtimes = listing.mtimes_np()
    settled = mtimes <= previous_low
    if listing_order(listing.where(settled)) != order:
        return None
    region = mtimes <= new_low
    fresh = listing.where(region & ~settled)
    if not len(fresh):
        return fresh, order
    return fresh, listing_order(listing.where(region))


def plan_late(listing: Sequence[FileEntry], previous_low: int | None,
              previous_sketch: SettledSketch | None, previous_files: Mapping[str, int],
              selected: Sequence[FileEntry], new_low: int, *, full: bool = True,
              keep_late: bool = False, hashes: "Sequence[int] | None" = None) -> LatePlan:
    """Find the late files of a run and compute the sketch it commits (pure).

    ``listing``: the run's listing (every file when ``full``, else the directories it listed);
    ``previous_low``/``previous_sketch``/``previous_files``: the committed element; ``selected``:
    what the band rule reads; ``new_low``: the low the run commits.  ``keep_late``: the run
    will not read its late files (``lateFiles=warn``): the sketch leaves them out, so the next
    full listing reports them again and ``lateFiles=read`` reads them.  ``hashes``: the
    listing's :func:`path_keys` when the caller has them (a first run: used for its keys).

    Of the settled files the sketch does not know, a path known with another mtime
    (:func:`listed_before`) is not new (``moved``); one with an mtime above the last full
    listing's low (``previous_sketch.seen_to``) is one a partial listing could not show, a
    backfill (``unseen``, to be read); the rest are late.

    >>> from sparkmark.planning.bands import FileEntry as E
    >>> first = plan_late([E(5, "file:/a")], None, None, {}, [E(5, "file:/a")], 10)
    >>> late = plan_late([E(5, "file:/a"), E(3, "file:/b")], 10, first.sketch, {}, [], 20)
    >>> [f.path for f in late.late], late.count
    (['file:/b'], 1)
    """
    if not full:
        if previous_sketch is None:
            raise ValueError("an incremental listing needs a previous sketch: list fully first")
        keys = {item_key(h, m) for h, m in previous_files.items()
                if previous_low is not None and previous_low < m <= new_low}
        keys.update(keys_of([f for f in selected if (previous_low is None
                                                     or f.mtime > previous_low)
                             and f.mtime <= new_low]))
        return LatePlan((), None, next_sketch(previous_sketch, LateCheck(checked=False), [],
                                              sorted(keys), new_low, full=False))
    # the regions are views of the listing's columns, cut on its mtime column
    listing = FileColumns.of(listing)
    mtimes = listing.mtimes_np()
    settled: Sequence[FileEntry]
    if previous_low is None:
        settled = ()
        inside = mtimes <= new_low
        region = listing.where(inside)
        if hashes is not None:
            import numpy as np
            if len(hashes) != len(listing):
                raise ValueError(f"{len(hashes)} path hashes for {len(listing)} entries")
            settling = keys_of(region, (np.frombuffer(hashes, dtype=np.uint64)
                                        if isinstance(hashes, array) else
                                        np.array(hashes, dtype=np.uint64))[inside])
        else:
            settling = keys_of(region)
    else:
        if (previous_sketch is not None and previous_sketch.order is not None
                and previous_sketch.at == previous_low and new_low >= previous_low):
            same = _unchanged_settled(listing, previous_low, new_low, previous_sketch.order)
            if same is not None:
                # the sketch was built from exactly these files: what check_late would find
                # with equal digests (nothing late, nothing removed), without a key per
                # settled file
                fresh, order = same
                return LatePlan((), 0, replace(
                    previous_sketch.plus(keys_of(fresh), new_low, new_low), order=order))
        settled = listing.where(mtimes <= previous_low)
        fresh = listing.where((mtimes > previous_low) & (mtimes <= new_low))
        settling = keys_of(fresh)
        region = settled if not len(fresh) else listing.where(mtimes <= new_low)
    settled_keys = keys_of(settled)
    check = check_late(settled_keys, previous_sketch, previous_low)
    sketch = next_sketch(previous_sketch, check, settled_keys, settling, new_low, full=True)
    if previous_low is None or new_low >= previous_low:
        # the sketch is now exactly the listing's files up to new_low (see next_sketch); not
        # where keep_late leaves files out below
        sketch = replace(sketch, order=listing_order(region))
    if not check.checked:
        return LatePlan((), None, sketch)
    if check.overflow:
        return LatePlan((), None, sketch, overflow=True)
    assert previous_sketch is not None and previous_low is not None  # checked: both there
    found = [settled[i] for i in check.late]
    moved = [f for f in found
             if listed_before(f, check.removed_keys, previous_files, previous_low)]
    moved_set = set(moved)
    unseen = tuple(sorted(f for f in found
                          if f not in moved_set and f.mtime > previous_sketch.seen_to))
    late = tuple(sorted(f for f in found if f not in moved_set and f.mtime
                        <= previous_sketch.seen_to))
    if keep_late and late and check.table is not None:
        table = check.table.copy()
        gone = set(keys_of(late))
        for k in gone:
            table.add(k, -1)
        kept = [k for k in settled_keys if k not in gone]
        sketch = next_sketch(previous_sketch, LateCheck(table=table), kept, settling, new_low,
                             full=True)
    return LatePlan(late, len(late), sketch, removed=check.removed, unseen=unseen,
                    moved=len(moved))
