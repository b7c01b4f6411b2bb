"""Directory listers for :func:`sparkmark.planning.listing.walk`: thin I/O, no decisions.

``local_level`` lists ``file:`` directories with ``os.scandir`` (a directory's change time is the
later of its mtime and ctime: a copy that preserves the mtime still gets a new ctime);
``hadoop_level`` lists a whole level through Hadoop's FileSystem in one ``listStatus(Path[])``
call (HDFS, and any other Hadoop file system; directory change time = mtime).

Example::

    res = walk(["file:/data/in"], local_level, recurse=False, previous=None, mode="full",
               listing_ts=0)
"""
from __future__ import annotations

import os
import re
import stat
from itertools import repeat
from operator import floordiv
from typing import Callable, Iterator, Sequence, TypeVar

from sparkmark.core.errors import SourceError
from sparkmark.engine.jvm import storage_error_text
from sparkmark.core.secrets import mask_url
from sparkmark.planning.filecolumns import FileColumns
from sparkmark.planning.listing import DirEntry, Level, enter, hidden

_MS = 1_000_000
_CHUNK = 4096
_DIR_FD = os.stat in os.supports_dir_fd  # stat by name relative to the directory (no path walk)


#: a local path whose Hadoop form is itself: absolute, no empty, ``.`` or ``..`` segment, and only
#: characters that a URI leaves alone (anything else takes Hadoop's own ``Path``)
_PLAIN_LOCAL = re.compile(r"/(?:(?!\.\.?(?:/|$))[A-Za-z0-9._=+,@~-]+/)*(?!\.\.?$)[A-Za-z0-9._=+,@~-]+/?")


def local_root(raw: str, default_fs: Callable[[], str]
               ) -> list[tuple[str, bool, int, int]] | None:
    """``[(qualified path, True, 0, mtime ms)]`` for the local input directory ``raw``,
    ``[]`` when nothing is there, found without Hadoop; ``None`` when Hadoop must resolve it
    (a file, another file system, a relative or unusual path, an error other than "not
    there").

    Hadoop qualifies ``/data/in``, ``file:/data/in/`` and ``file:///data/in`` to
    ``file:/data/in`` (a bare path when the default file system, ``default_fs()``, is
    ``file:``); doing that here saves a run the eleven py4j round trips of opening the file
    system and asking it.  ``tests/test_dirlisting.py`` holds it to Hadoop's answer.

    Example: ``local_root("file:///data/in", lambda: "file:///")`` ->
    ``[("file:/data/in", True, 0, 1732700000000)]``
    """
    if raw.startswith("file:"):
        path = raw[5:]
        if path.startswith("///"):
            path = path[2:]
        elif path.startswith("//"):
            return None  # an authority
    elif raw.startswith("/"):
        if not default_fs().startswith("file:"):
            return None  # a bare path on HDFS or an object store
        path = raw
    else:
        return None
    if not _PLAIN_LOCAL.fullmatch(path):
        return None
    path = path.rstrip("/")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return []
    except OSError:
        return None  # Hadoop's message
    if not stat.S_ISDIR(st.st_mode):
        return None
    return [("file:" + path, True, 0, st.st_mtime_ns // _MS)]


def local_level(dirs: Sequence[str], recurse: bool = True) -> Iterator[Level]:
    """A :class:`Level` for each ``file:`` directory: its visible files (Spark's hidden rule),
    and the subdirectories the walk may enter (others would cost a ``stat``).

    The loop is the hot path of a listing (one pass per file), so it does no more per entry
    than ``os.scandir`` must: names go to a list, and every :data:`_CHUNK` names the files are
    stat'ed by name relative to the open directory (``dir_fd``: no path walk per file; ~11%
    faster than ``DirEntry.stat``) and go into the level's
    :class:`~sparkmark.planning.filecolumns.FileColumns` as columns (no object per file)."""
    for d in dirs:
        yield _local_dir(d, recurse)


def _local_dir(d: str, recurse: bool) -> Level:
    local = d[5:] if d.startswith("file:") else d
    base = d.rstrip("/") + "/"
    try:
        it = os.scandir(local)
    except OSError as e:
        raise SourceError(f"cannot list directory {local}: {e.strerror}; check its "
                          "permissions") from None
    files = FileColumns()
    names: list[str] = []
    subdirs: list[DirEntry] = []
    with it:
        for ent in it:
            name = ent.name
            if (name[0] in "._" or name.endswith("._COPYING_")) and hidden(name):
                continue
            try:
                if ent.is_dir():
                    if not enter(name, recurse):
                        continue
                    st = ent.stat()
                    m = st.st_mtime_ns // _MS
                    subdirs.append(DirEntry(base + name, True, m, 0,
                                            max(m, st.st_ctime_ns // _MS), name))
                    continue
            except FileNotFoundError:
                continue  # removed while listing
            names.append(name)
            if len(names) >= _CHUNK:  # bound the side lists: a flat 1M-file directory
                _flush(files, local, base, names)
    _flush(files, local, base, names)
    return Level(d, files, subdirs)


def _stat_names(local: str, names: Sequence[str]) -> tuple[list[str], list[int], list[int]]:
    """``(names, mtimes ns, sizes)`` of the files ``names`` in directory ``local`` (one
    ``stat`` each, following links as ``DirEntry.stat`` does); a file removed since the
    directory was read is left out, and so is everything when the directory is gone."""
    kept: list[str] = []
    times: list[int] = []
    sizes: list[int] = []
    stat = os.stat
    if not _DIR_FD:
        names = [os.path.join(local, name) for name in names]
    try:
        fd = os.open(local, os.O_RDONLY) if _DIR_FD else None
    except FileNotFoundError:
        return kept, times, sizes  # the directory was removed while listing
    try:
        for name in names:
            try:
                st = stat(name, dir_fd=fd)
            except FileNotFoundError:
                continue  # removed while listing
            kept.append(name)
            times.append(st.st_mtime_ns)
            sizes.append(st.st_size)
    finally:
        if fd is not None:
            os.close(fd)
    if not _DIR_FD:
        kept = [os.path.basename(p) for p in kept]
    return kept, times, sizes


def _flush(files: FileColumns, local: str, base: str, names: list[str]) -> None:
    """Append the files ``names`` (in ``local``, whose paths start with ``base``), then clear
    it."""
    kept, times, sizes = _stat_names(local, names)
    files.add_files(base, kept, map(floordiv, times, repeat(_MS)), sizes)
    names.clear()


_T = TypeVar("_T")


def _listed(call: Callable[[], _T], where: str) -> _T:
    """``call()``, with a Java error from the file system as one SourceError."""
    try:
        return call()
    except SourceError:
        raise
    except Exception as e:  # noqa: BLE001 - a Java error from the file system
        raise SourceError(f"cannot list {mask_url(where)}: {storage_error_text(e, where)}; "
                          "nothing was read or committed: the next run reads the same "
                          "input") from None


def hadoop_level(list_status: Callable[[list[str]], list[tuple[str, bool, int, int]]],
                 where: str) -> Callable[[Sequence[str]], Iterator[Level]]:
    """A level lister over ``list_status(dirs) -> [(path, is_dir, size, mtime)]`` (one Hadoop
    ``listStatus(Path[])`` call for the whole level); entries are grouped by parent and hidden
    files left out."""
    def level(dirs: Sequence[str]) -> Iterator[Level]:
        statuses = _listed(lambda: list_status(list(dirs)), where)
        groups: dict[str, Level] = {d.rstrip("/"): Level(d, FileColumns(), []) for d in dirs}
        #: per parent, its files' names, mtimes and sizes (added as columns at the end)
        found: dict[str, tuple[list[str], list[int], list[int]]] = {}
        for path, is_dir, size, mtime in statuses:
            parent, _, name = path.rstrip("/").rpartition("/")
            group = groups.get(parent)
            if group is None:
                group = groups[parent] = Level(parent, FileColumns(), [])
            if is_dir:
                group.dirs.append(DirEntry(path, True, mtime, size, mtime, name))
            elif not hidden(name):
                names, mtimes, sizes = found.setdefault(parent, ([], [], []))
                names.append(name)
                mtimes.append(mtime)
                sizes.append(size)
        for parent, (names, mtimes, sizes) in found.items():
            files = groups[parent].files
            assert isinstance(files, FileColumns)
            files.add_files(parent + "/", names, mtimes, sizes)
        for d in dirs:
            yield groups[d.rstrip("/")]
    return level


def hadoop_after(list_after: Callable[[str, str], list[tuple[str, bool, int, int]] | None],
                 where: str) -> Callable[[str, str], Level | None]:
    """A root lister for lexical listings: ``list_after(root, name)`` returns the root's entries
    that sort after ``name`` (one S3 ``ListObjectsV2`` with ``StartAfter`` per 1,000), or None
    where the file system cannot; grouped like :func:`hadoop_level`."""
    def after(root: str, name: str) -> Level | None:
        statuses = _listed(lambda: list_after(root, name), where)
        if statuses is None:
            return None
        return next(iter(hadoop_level(lambda _dirs: statuses, where)([root])))
    return after
