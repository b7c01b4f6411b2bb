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
from typing import Callable, Iterator, Sequence

from ..errors import SourceError
from ..jvm import java_error_text
from ..planning.listing import DirEntry, enter, hidden

_MS = 1_000_000


def local_level(dirs: Sequence[str], recurse: bool = True
                ) -> Iterator[tuple[str, list[DirEntry]]]:
    """``(dir, entries)`` for each ``file:`` directory; hidden entries and directories that will
    not be entered are left out here already (they cost a ``stat`` otherwise)."""
    for d in dirs:
        local = d[5:] if d.startswith("file:") else d
        base = d.rstrip("/")
        try:
            it = os.scandir(local)
        except OSError as e:
            raise SourceError(f"cannot list directory {local}: {e.strerror}; check its "
                              "permissions") from None
        out: list[DirEntry] = []
        with it:
            for ent in it:
                name = ent.name
                if hidden(name):
                    continue
                try:
                    if ent.is_dir():
                        if not enter(name, recurse):
                            continue
                        st = ent.stat()
                        m = st.st_mtime_ns // _MS
                        out.append(DirEntry(f"{base}/{name}", True, m, 0,
                                            max(m, st.st_ctime_ns // _MS), name))
                        continue
                    st = ent.stat()
                except FileNotFoundError:
                    continue  # removed while listing
                out.append(DirEntry(f"{base}/{name}", False, st.st_mtime_ns // _MS,
                                    st.st_size, None, name))
        yield d, out


def hadoop_level(list_status: Callable[[list[str]], list[tuple[str, bool, int, int]]],
                 where: str) -> Callable[[Sequence[str]], Iterator[tuple[str, list[DirEntry]]]]:
    """A level lister over ``list_status(dirs) -> [(path, is_dir, size, mtime)]`` (one Hadoop
    ``listStatus(Path[])`` call for the whole level); entries are grouped by parent."""
    def level(dirs: Sequence[str]) -> Iterator[tuple[str, list[DirEntry]]]:
        try:
            statuses = list_status(list(dirs))
        except SourceError:
            raise
        except Exception as e:  # noqa: BLE001 - a Java error from the file system
            raise SourceError(f"cannot list {where}: {java_error_text(e)}") from None
        groups: dict[str, list[DirEntry]] = {d.rstrip("/"): [] for d in dirs}
        for path, is_dir, size, mtime in statuses:
            parent, _, name = path.rstrip("/").rpartition("/")
            groups.setdefault(parent, []).append(
                DirEntry(path, is_dir, mtime, size, mtime if is_dir else None, name))
        for d in dirs:
            yield d, groups.get(d.rstrip("/"), [])
    return level
