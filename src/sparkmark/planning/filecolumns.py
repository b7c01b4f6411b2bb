"""A listing's files held as columns: a ``Sequence[FileEntry]`` at ~40 bytes a file.

A listing of a million files kept as :class:`FileEntry` tuples costs ~200 bytes a file in
Python (the tuple, its path string, its mtime int), before any plan is made.
:class:`FileColumns` keeps the same files in arrays: mtimes and sizes as int64, and the names of
up to :data:`CHUNK` files of one directory as one NUL-joined string (a *chunk*), each name
found by where it ends in that string; a chunk's directory prefix is one string shared by its
names.  A file is ~24 bytes of arrays plus its name's characters and a NUL.

It is a read-only ``Sequence[FileEntry]`` to the code that reads it (an entry is made when asked
for), so every pure planner takes a plain list or tuple as well, and the planners' hot paths
use its columns directly: :meth:`FileColumns.mtimes_np`, :meth:`FileColumns.paths` (a chunk's
names by one ``split``), :meth:`FileColumns.take` (a selection is a *view*: the same storage and
an index array, 8 bytes a file, or a range, nothing a file).  Views compare equal to any
sequence of the same entries, so a plan's ``selected`` may be checked against a tuple.

Nothing here touches a file system: the listers fill it (:meth:`FileColumns.add_files`), the
planners read it.

Why one module: :class:`ColumnStore` (the storage) and :class:`FileColumns` (the views over it)
are one data structure in two classes.  The views read the store's arrays and chunk prefixes
directly, both classes walk positions in blocks of the same ``_BLOCK`` and share the module's
helpers (``_np``, ``_ascending``), and tests/test_filecolumns.py shrinks
:data:`CHUNK`, ``_BLOCK`` and ``_SORT_BLOCK`` in this one module so that small listings cross
every chunk and block edge.  Split, those constants would be read in two modules and the
property tests would have to shrink both to keep testing the edges.

>>> cols = FileColumns.of([FileEntry(7, "file:/in/b.json", 2), FileEntry(5, "file:/in/a.json")])
>>> cols[1], len(cols), cols.paths()
(FileEntry(mtime=5, path='file:/in/a.json', size=0), 2, ['file:/in/b.json', 'file:/in/a.json'])
>>> cols.take([1]) == (FileEntry(5, "file:/in/a.json"),)
True
"""
from __future__ import annotations

from array import array
from itertools import accumulate, islice, repeat
from operator import eq, gt
from typing import Any, Iterable, Iterator, NamedTuple, Sequence, overload


class FileEntry(NamedTuple):
    """One listed file: its fully qualified path, modification time (epoch ms) and size.

    A tuple ordered by ``(mtime, path, size)`` (oldest first) (also importable from
    :mod:`sparkmark.planning.listing` and :mod:`sparkmark.planning.bands`).

    >>> sorted([FileEntry(7, "file:/in/b"), FileEntry(5, "file:/in/a", 3)])[0].path
    'file:/in/a'
    """

    mtime: int
    path: str
    size: int = 0


#: names per chunk string (one directory's files; a chunk is sealed when full)
CHUNK = 4096
#: positions turned into entries or paths at a time by the bulk readers
_BLOCK = 65_536
#: files whose paths a sort compares at a time (where mtimes are equal): ~2 MB of paths
_SORT_BLOCK = 16_384
_new_entry = tuple.__new__


def _np() -> Any:
    import numpy as np
    return np


class ColumnStore:
    """The storage a :class:`FileColumns` and its views share (append-only).

    Per chunk: ``texts`` (its files' names joined by NUL), ``prefixes`` (its directory),
    ``plain`` (no name holds a NUL: ``split`` gives the names), ``cstart`` (its first file's
    position).  Per file: ``chunk``, ``ends`` (where its name ends in the chunk's text: it
    starts one past the previous file's end, or at 0 for a chunk's first file), ``mtimes``
    (epoch ms) and ``sizes``.  The open chunk's names wait in ``open_names`` until the first
    read seals them into one string.

    >>> s = ColumnStore(); s.add_files("d/", ["a", "bc"], [1, 2], [0, 0]); s.seal()
    >>> s.texts, s.ends.tolist(), s.path(1)
    (['a\\x00bc'], [1, 4], 'd/bc')
    """

    __slots__ = ("texts", "prefixes", "plain", "cstart", "chunk", "ends", "mtimes", "sizes",
                 "open_names", "open_prefix", "open_len")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.prefixes: list[str] = []
        self.plain = bytearray()
        self.cstart = array("q")
        self.chunk = array("I")
        self.ends = array("I")
        self.mtimes = array("q")
        self.sizes = array("q")
        self.open_names: list[str] = []
        self.open_prefix = ""
        self.open_len = -1  # the open chunk's text length so far, less one

    def __len__(self) -> int:
        return len(self.mtimes)

    def seal(self) -> None:
        """Close the open chunk: its names become one string."""
        if self.open_names:
            text = "\0".join(self.open_names)
            self.texts.append(text)
            self.prefixes.append(self.open_prefix)
            self.plain.append(text.count("\0") == len(self.open_names) - 1)
            self.open_names = []
            self.open_len = -1

    def add_files(self, prefix: str, names: Sequence[str], mtimes: Iterable[int],
                  sizes: Iterable[int]) -> None:
        """Append files (see :meth:`FileColumns.add_files`)."""
        n = len(names)
        if not n:
            return
        at = len(self.mtimes)
        self.mtimes.extend(mtimes)
        self.sizes.extend(sizes)
        if len(self.mtimes) != at + n or len(self.sizes) != at + n:
            del self.mtimes[at:], self.sizes[at:]
            raise ValueError(f"{n} names but not as many mtimes and sizes")
        i = 0
        while i < n:
            if self.open_names and (self.open_prefix != prefix
                                    or len(self.open_names) >= CHUNK):
                self.seal()
            if not self.open_names:
                self.open_prefix = prefix
                self.cstart.append(at + i)
            part = names[i:i + CHUNK - len(self.open_names)]
            k = len(part)
            # a name ends where the previous one ended, plus its NUL and its own length
            ends = list(accumulate(map((1).__add__, map(len, part)), initial=self.open_len))
            self.ends.extend(islice(ends, 1, None))
            self.chunk.extend(repeat(len(self.texts), k))
            self.open_names.extend(part)
            self.open_len = ends[-1]
            i += k

    def extend(self, other: "ColumnStore") -> None:
        """Append all of ``other``'s files (its chunk strings shared, not rebuilt)."""
        np = _np()
        other.seal()
        self.seal()
        if not len(other):
            return
        self.cstart.frombytes((np.frombuffer(other.cstart, dtype=np.int64)
                               + np.int64(len(self.mtimes))).tobytes())
        self.chunk.frombytes((np.frombuffer(other.chunk, dtype=np.uint32)
                              + np.uint32(len(self.texts))).tobytes())
        self.texts.extend(other.texts)
        self.prefixes.extend(other.prefixes)
        self.plain.extend(other.plain)
        self.ends.extend(other.ends)
        self.mtimes.extend(other.mtimes)
        self.sizes.extend(other.sizes)

    def path(self, p: int) -> str:
        """The path of the file at position ``p`` (sealed storage)."""
        c = self.chunk[p]
        begin = 0 if self.cstart[c] == p else self.ends[p - 1] + 1
        return self.prefixes[c] + self.texts[c][begin:self.ends[p]]

    def range_paths(self, lo: int, hi: int) -> list[str]:
        """The paths of positions ``lo`` to ``hi``, chunk by chunk (a chunk's files are
        consecutive positions): one ``split`` of the chunk's text where no name holds a NUL."""
        self.seal()
        out: list[str] = []
        chunk, cstart = self.chunk, self.cstart
        last = len(cstart) - 1
        p = lo
        while p < hi:
            c = chunk[p]
            first = cstart[c]
            q = min(hi, cstart[c + 1]) if c < last else hi
            text, prefix = self.texts[c], self.prefixes[c]
            names: Iterable[str]
            if self.plain[c]:
                names = text.split("\0")[p - first:q - first]
            else:
                ends = self.ends
                begins = [0 if k == first else ends[k - 1] + 1 for k in range(p, q)]
                names = map(text.__getitem__, map(slice, begins, ends[p:q]))
            out.extend(map(prefix.__add__, names) if prefix else names)
            p = q
        return out

    def names_at(self, idx: Any) -> tuple[list[str], Any]:
        """The names (without their directory) at positions ``idx`` (numpy int64, any order),
        and their chunks.  Where the positions are dense in the chunks they touch (ascending,
        descending, a block of a sort), each chunk is ``split`` once and its names picked;
        else one slice each."""
        np = _np()
        self.seal()
        chunks = np.frombuffer(self.chunk, dtype=np.uint32)[idx]
        used, inverse = np.unique(chunks, return_inverse=True)
        uc = used.tolist()
        if len(uc) * CHUNK <= 4 * len(idx) and all(self.plain[c] for c in uc):
            local = (idx - np.frombuffer(self.cstart, dtype=np.int64)[chunks]).tolist()
            split = [self.texts[c].split("\0") for c in uc]
            return [split[u][k] for u, k in zip(inverse.tolist(), local)], chunks
        ends_all = np.frombuffer(self.ends, dtype=np.uint32).astype(np.int64)
        ends = ends_all[idx]
        firsts = np.frombuffer(self.cstart, dtype=np.int64)[chunks] == idx
        begins = np.where(firsts, 0, ends_all[np.maximum(idx - 1, 0)] + 1)
        texts = self.texts
        return ([texts[c][b:e] for c, b, e in zip(chunks.tolist(), begins.tolist(),
                                                   ends.tolist())], chunks)

    def paths_at(self, idx: Any) -> list[str]:
        """The paths at positions ``idx`` (numpy int64, any order), see :meth:`names_at`."""
        names, chunks = self.names_at(idx)
        prefixes = self.prefixes
        first = prefixes[int(chunks[0])] if len(chunks) else ""
        if all(prefixes[c] == first for c in _np().unique(chunks).tolist()):
            return list(map(first.__add__, names)) if first else names
        return list(map(str.__add__, map(prefixes.__getitem__, chunks.tolist()), names))

    def joined_at(self, idx: Any) -> str | None:
        """``"\\0".join`` of the paths at ascending positions ``idx``, made a chunk at a time
        without a string per path (a whole chunk is its text with the directory put before
        each name; part of one, its picked names joined), or None where the positions are
        not ascending or a name holds a NUL."""
        np = _np()
        self.seal()
        if not len(idx):
            return ""
        if not _ascending(idx):
            return None
        chunks = np.frombuffer(self.chunk, dtype=np.uint32)[idx]
        edges = np.flatnonzero(np.concatenate(([True], chunks[1:] != chunks[:-1], [True])))
        cstart, last = self.cstart, len(self.cstart) - 1
        pieces: list[str] = []
        for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist()):
            c = int(chunks[lo])
            if not self.plain[c]:
                return None
            text, prefix = self.texts[c], self.prefixes[c]
            size = (cstart[c + 1] if c < last else len(self.mtimes)) - cstart[c]
            sep = "\0" + prefix
            if hi - lo == size:  # the whole chunk: its text as it is
                pieces.append(prefix + text.replace("\0", sep) if prefix else text)
                continue
            names = text.split("\0")
            picked = map(names.__getitem__, (idx[lo:hi] - cstart[c]).tolist())
            pieces.append(prefix + sep.join(picked))
        return "\0".join(pieces)

    def copy_of(self, idx: Any) -> "ColumnStore":
        """A new storage holding the files at positions ``idx`` in that order (its chunks
        rebuilt; a block of positions at a time)."""
        np = _np()
        self.seal()
        out = ColumnStore()
        pid_of: dict[str, int] = {}
        pids = np.fromiter((pid_of.setdefault(p, len(pid_of)) for p in self.prefixes),
                           dtype=np.int64, count=len(self.prefixes))
        mtimes, sizes = self.column(self.mtimes), self.column(self.sizes)
        for at in range(0, len(idx), _BLOCK):
            block = idx[at:at + _BLOCK]
            names, chunks = self.names_at(block)
            mt, sz = mtimes[block].tolist(), sizes[block].tolist()
            pid = pids[chunks]
            cuts = [0, *(np.flatnonzero(pid[1:] != pid[:-1]) + 1).tolist(), len(block)]
            for a, b in zip(cuts[:-1], cuts[1:]):  # a run of one directory: one call
                out.add_files(self.prefixes[int(chunks[a])], names[a:b], mt[a:b], sz[a:b])
        out.seal()
        return out

    def column(self, col: "array[int]") -> Any:
        """``col`` (``mtimes`` or ``sizes``) as a numpy int64 array over its buffer (do not
        keep it across appends)."""
        np = _np()
        return np.frombuffer(col, dtype=np.int64) if len(col) else np.zeros(0, np.int64)


class FileColumns(Sequence[FileEntry]):
    """Files as columns (see the module docstring).  ``FileColumns()`` is an empty listing to
    fill; :meth:`take`, :meth:`where` and slices give read-only views of it.

    >>> cols = FileColumns()
    >>> cols.add_files("file:/in/", ["a.json", "b.json"], [5, 7], [1, 2])
    >>> [f.path for f in cols], cols.total_size()
    (['file:/in/a.json', 'file:/in/b.json'], 3)
    """

    __slots__ = ("_store", "_index", "_start", "_stop", "_sorted")

    def __init__(self, store: ColumnStore | None = None, index: Any = None, start: int = 0,
                 stop: int | None = None, known_sorted: bool = False) -> None:
        """``FileColumns()``: a new, empty listing.  (The other arguments make views: the
        storage they read, their positions in it as a numpy int64 array or the range
        ``start:stop``, and whether they are known to be in sorted order.)"""
        self._store = ColumnStore() if store is None else store
        self._index = index
        self._start = start
        #: None: the listing itself, to the storage's current end (it may still grow)
        self._stop = stop
        self._sorted = known_sorted

    # ------------------------------------------------------------------ building
    @classmethod
    def of(cls, entries: Iterable[FileEntry]) -> "FileColumns":
        """The columns of ``entries`` in order: a FileColumns (or view) as it is, else the
        columns of these FileEntry tuples.

        >>> FileColumns.of([FileEntry(5, "a")])[0]
        FileEntry(mtime=5, path='a', size=0)
        """
        if isinstance(entries, FileColumns):
            return entries
        out = cls()
        out.extend(entries)
        return out

    def whole_store(self) -> ColumnStore | None:
        """The storage, when this is a listing and not a view of one (else None)."""
        return self._store if self._index is None and self._stop is None else None

    def _writable(self) -> ColumnStore:
        store = self.whole_store()
        if store is None:
            raise TypeError("a view of a FileColumns is read-only")
        self._sorted = False
        return store

    def add_files(self, prefix: str, names: Sequence[str], mtimes: Iterable[int],
                  sizes: Iterable[int]) -> None:
        """Append files named ``names`` in the directory ``prefix`` (a path ending in ``/``,
        or any string their paths start with), with their mtimes (epoch ms) and sizes; one
        C-level pass per column, no object per file.

        >>> c = FileColumns(); c.add_files("s3a://b/", ["k1"], [3], [9]); c[0].path
        's3a://b/k1'
        """
        self._writable().add_files(prefix, names, mtimes, sizes)

    def append(self, entry: FileEntry) -> None:
        """Append one file (its path is split at the last ``/``).

        >>> c = FileColumns(); c.append(FileEntry(5, "file:/in/a", 3)); c[0]
        FileEntry(mtime=5, path='file:/in/a', size=3)
        """
        mtime, path, size = entry[0], entry[1], (entry[2] if len(entry) > 2 else 0)
        cut = path.rfind("/") + 1
        self.add_files(path[:cut], [path[cut:]], (mtime,), (size,))

    def extend(self, entries: Iterable[FileEntry]) -> None:
        """Append ``entries``; another listing's columns are copied whole (its chunk strings
        are shared, not rebuilt).

        >>> a = FileColumns.of([FileEntry(1, "x/a")]); b = FileColumns.of([FileEntry(2, "y/b")])
        >>> a.extend(b); [f.path for f in a]
        ['x/a', 'y/b']
        """
        store = self._writable()
        other = entries.whole_store() if isinstance(entries, FileColumns) else None
        if other is not None and other is not store:
            store.extend(other)
            return
        for block in _blocks(entries):
            _add_grouped(store, [e[1] for e in block], [e[0] for e in block],
                         [e[2] if len(e) > 2 else 0 for e in block])

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        if self._index is not None:
            return len(self._index)
        return (len(self._store) if self._stop is None else self._stop) - self._start

    def _pos(self, i: int) -> int:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("FileColumns index out of range")
        return int(self._index[i]) if self._index is not None else self._start + i

    @overload
    def __getitem__(self, i: int) -> FileEntry: ...

    @overload
    def __getitem__(self, i: slice) -> "FileColumns": ...

    def __getitem__(self, i: int | slice) -> "FileEntry | FileColumns":
        store = self._store
        store.seal()
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step == 1 and self._index is None:
                return self._view(None, self._start + start, self._start + max(start, stop))
            return self._view(self.positions()[start:stop:step])
        p = self._pos(i)
        return _new_entry(FileEntry, (store.mtimes[p], store.path(p), store.sizes[p]))

    def _view(self, index: Any, start: int = 0, stop: int | None = None,
              known_sorted: bool | None = None) -> "FileColumns":
        if known_sorted is None:
            known_sorted = self._sorted and (index is None or _ascending(index))
        return FileColumns(self._store, index, start,
                           (len(self._store) if stop is None else stop) if index is None
                           else None, known_sorted)

    def positions(self) -> Any:
        """The storage positions of this view's files, in order (numpy int64)."""
        np = _np()
        if self._index is not None:
            return self._index
        return np.arange(self._start, self._start + len(self), dtype=np.int64)

    def __iter__(self) -> Iterator[FileEntry]:
        for at in range(0, len(self), _BLOCK):
            yield from self.entries(at, min(len(self), at + _BLOCK))

    def entries(self, lo: int = 0, hi: int | None = None) -> list[FileEntry]:
        """Files ``lo`` to ``hi`` (default: all) as FileEntry tuples, made at once.

        >>> FileColumns.of([FileEntry(1, "x/a", 2)]).entries()
        [FileEntry(mtime=1, path='x/a', size=2)]
        """
        paths = self.paths(lo, hi)
        lo = max(0, lo)
        hi = lo + len(paths)
        store = self._store
        if self._index is None:
            mt = store.mtimes[self._start + lo:self._start + hi]
            sz = store.sizes[self._start + lo:self._start + hi]
        else:
            idx = self._index[lo:hi]
            mt = store.column(store.mtimes)[idx].tolist()
            sz = store.column(store.sizes)[idx].tolist()
        return list(map(_new_entry, repeat(FileEntry), zip(mt, paths, sz)))

    def paths(self, lo: int = 0, hi: int | None = None) -> list[str]:
        """The paths of files ``lo`` to ``hi`` (default: all) of this listing or view, made
        at once (a chunk's names by one ``split`` of its string).

        >>> FileColumns.of([FileEntry(1, "x/a"), FileEntry(2, "x/b")]).paths(1)
        ['x/b']
        """
        store = self._store
        store.seal()
        n = len(self)
        hi = n if hi is None else min(hi, n)
        lo = max(0, lo)
        if hi <= lo:
            return []
        if self._index is None:
            return store.range_paths(self._start + lo, self._start + hi)
        idx = self._index[lo:hi]
        if _contiguous(idx):
            return store.range_paths(int(idx[0]), int(idx[-1]) + 1)
        return store.paths_at(idx)

    def joined(self, lo: int = 0, hi: int | None = None) -> str:
        """``"\\0".join(self.paths(lo, hi))``, made from the chunks' strings where it can
        (no string per path; the listing fingerprint's text).

        >>> FileColumns.of([FileEntry(1, "x/a"), FileEntry(2, "x/b")]).joined() == "x/a\\0x/b"
        True
        """
        n = len(self)
        hi = n if hi is None else min(hi, n)
        lo = max(0, lo)
        if hi <= lo:
            return ""
        idx = (self._index[lo:hi] if self._index is not None else
               _np().arange(self._start + lo, self._start + hi, dtype=_np().int64))
        text = self._store.joined_at(idx)
        return "\0".join(self.paths(lo, hi)) if text is None else text

    def mtimes_np(self) -> Any:
        """This view's mtimes as a numpy int64 array (a copy).

        >>> FileColumns.of([FileEntry(7, "a")]).mtimes_np().tolist()
        [7]
        """
        return self._column(self._store.mtimes)

    def sizes_np(self) -> Any:
        """This view's sizes as a numpy int64 array (a copy)."""
        return self._column(self._store.sizes)

    def _column(self, col: "array[int]") -> Any:
        whole = self._store.column(col)
        if self._index is not None:
            return whole[self._index]
        return whole[self._start:self._start + len(self)].copy()

    def total_size(self) -> int:
        """The sum of the files' sizes."""
        return int(self.sizes_np().sum()) if len(self) else 0

    def take(self, positions: Any) -> "FileColumns":
        """A view of the files at ``positions`` (indices into this listing or view, any
        order; numpy array or sequence of ints).

        >>> c = FileColumns.of([FileEntry(1, "a"), FileEntry(2, "b"), FileEntry(3, "c")])
        >>> [f.path for f in c.take([2, 0])]
        ['c', 'a']
        """
        np = _np()
        self._store.seal()
        at = np.asarray(positions, dtype=np.int64)
        if at.ndim != 1:
            raise ValueError("positions must be one-dimensional")
        n = len(self)
        if len(at) and (int(at.min()) < 0 or int(at.max()) >= n):
            raise IndexError("FileColumns position out of range")
        if self._index is not None:
            return self._view(self._index[at])
        if _contiguous(at):  # a range of the storage: no index to hold
            lo = self._start + (int(at[0]) if len(at) else 0)
            return self._view(None, lo, lo + len(at))
        return self._view(at + self._start)

    def where(self, mask: Any) -> "FileColumns":
        """A view of the files where the boolean array (or sequence) ``mask`` is true.

        >>> c = FileColumns.of([FileEntry(1, "a"), FileEntry(2, "b")])
        >>> c.where(c.mtimes_np() > 1).paths()
        ['b']
        """
        np = _np()
        return self.take(np.flatnonzero(np.asarray(mask, dtype=bool)))

    def all_under(self, prefix: str) -> bool:
        """Whether every path starts with ``prefix`` (checked on the chunks' directories, and
        on the paths only where a directory is shorter than ``prefix``).

        >>> FileColumns.of([FileEntry(1, "file:/in/a")]).all_under("file:/in/")
        True
        """
        store = self._store
        store.seal()
        if not len(self):
            return True
        np = _np()
        chunks = np.frombuffer(store.chunk, dtype=np.uint32)
        used = np.unique(chunks[self._index] if self._index is not None else
                         chunks[self._start:self._start + len(self)]).tolist()
        short = False
        for c in used:
            pre = store.prefixes[c]
            if len(pre) >= len(prefix):
                if not pre.startswith(prefix):
                    return False
            else:
                short = True
        return not short or all(p.startswith(prefix) for p in self.paths())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (FileColumns, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(map(eq, self, other))

    def __ne__(self, other: object) -> bool:
        same = self.__eq__(other)
        return same if same is NotImplemented else not same

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(map(repr, self.entries(0, 3)))
        return f"FileColumns([{shown}{', ...' if len(self) > 3 else ''}], {len(self)} files)"

    # ------------------------------------------------------------------ order
    def in_order(self) -> "FileColumns":
        """These files in the order of their sorted FileEntry tuples (``(mtime, path,
        size)``, oldest first; equal entries keep their order), as a view known sorted: of
        this listing itself when it is already in that order (checked on the mtimes, and on
        the paths only where mtimes are equal), else of a sorted copy (its chunks rebuilt in
        that order, so that every later pass over it reads its chunks in turn instead of one
        slice per file).

        >>> FileColumns.of([FileEntry(7, "b"), FileEntry(5, "z")]).in_order().paths()
        ['z', 'b']
        """
        if self._sorted:
            return self
        order = self.sorted_positions()
        if _contiguous(order):  # in order already: this listing or view itself
            return self._view(self._index, self._start,
                              self._start + len(self) if self._index is None else None,
                              known_sorted=True)
        copy = self._store.copy_of(self.positions()[order])
        return FileColumns(copy, None, 0, len(copy), known_sorted=True)

    def sorted_positions(self) -> Any:
        """The positions that put this listing in the order of its sorted FileEntry tuples
        (``(mtime, path, size)``, oldest first; equal entries keep their order), computed on
        the mtimes: only files that share an mtime have their paths compared, a block at a
        time, and sorted only where they do not already stand in order.

        >>> c = FileColumns.of([FileEntry(7, "b"), FileEntry(5, "z"), FileEntry(7, "a")])
        >>> c.sorted_positions().tolist()
        [1, 2, 0]
        """
        np = _np()
        n = len(self)
        if self._sorted or n < 2:
            return np.arange(n, dtype=np.int64)
        m = self.mtimes_np()
        if bool((m[1:] >= m[:-1]).all()):
            order = np.arange(n, dtype=np.int64)
            sm = m
        else:
            order = np.argsort(m, kind="stable")
            sm = m[order]
        tied = sm[1:] == sm[:-1]
        if not tied.any():
            return order
        # the runs of equal mtimes, as [start, end) of ``order``, _SORT_BLOCK files at a time
        edges = np.flatnonzero(np.concatenate(([True], ~tied, [True])))
        starts, ends = edges[:-1], edges[1:]
        multi = (ends - starts) > 1
        starts, ends = starts[multi].tolist(), ends[multi].tolist()
        i = 0
        while i < len(starts):
            j = i + 1
            while j < len(starts) and ends[j] - starts[i] <= _SORT_BLOCK:
                j += 1
            lo, hi = starts[i], ends[j - 1]
            view = self.take(order[lo:hi])
            paths = view.paths()
            sizes = view.sizes_np()
            # in order already where every tied pair has path < next path (or equal paths
            # and sizes in order): one C-level comparison per file, no sort
            late = np.fromiter(map(gt, paths[:-1], paths[1:]), dtype=bool, count=hi - lo - 1)
            shrinks = sizes[:-1] > sizes[1:]
            if shrinks.any():
                late |= shrinks & np.fromiter(map(eq, paths[:-1], paths[1:]), dtype=bool,
                                              count=hi - lo - 1)
            late &= tied[lo:hi - 1]
            if late.any():
                span = order[lo:hi].copy()
                for s, e in zip(starts[i:j], ends[i:j]):  # each run out of order: sorted
                    a, b = s - lo, e - lo
                    if not late[a:b - 1].any():
                        continue
                    if shrinks[a:b - 1].any() or (sizes[a:b] != sizes[a]).any():
                        key: Any = list(zip(paths[a:b], sizes[a:b].tolist())).__getitem__
                    else:
                        key = paths[a:b].__getitem__
                    order[s:e] = span[a:b][sorted(range(b - a), key=key)]
            i = j
        return order


def total_size(files: Iterable[FileEntry]) -> int:
    """The sum of the files' sizes (on the size column of a FileColumns).

    >>> total_size([FileEntry(1, "a", 3), FileEntry(2, "b", 4)])
    7
    """
    if isinstance(files, FileColumns):
        return files.total_size()
    return sum(f.size for f in files)


def _blocks(entries: Iterable[FileEntry]) -> Iterator[list[FileEntry]]:
    it = iter(entries)
    while True:
        block = list(islice(it, _BLOCK))
        if not block:
            return
        yield block


def _ascending(index: Any) -> bool:
    return len(index) < 2 or bool((index[1:] > index[:-1]).all())


def _contiguous(index: Any) -> bool:
    """Whether ``index`` is ``k, k+1, k+2, ...`` (or empty)."""
    return not len(index) or (int(index[-1]) - int(index[0]) == len(index) - 1
                              and _ascending(index))


def _add_grouped(store: ColumnStore, paths: list[str], mtimes: list[int],
                 sizes: list[int]) -> None:
    """Append files given by full path, one :meth:`ColumnStore.add_files` per run of paths
    with the same directory."""
    at = 0
    prefix = ""
    names: list[str] = []
    for k, path in enumerate(paths):
        cut = path.rfind("/") + 1
        if names and path[:cut] != prefix:
            store.add_files(prefix, names, mtimes[at:k], sizes[at:k])
            names, at = [], k
        if not names:
            prefix = path[:cut]
        names.append(path[cut:])
    if names:
        store.add_files(prefix, names, mtimes[at:], sizes[at:])
