"""An in-memory file system under ``sim://`` with :class:`sparkmark.engine.fs.HadoopFS`'s
interface, every call a yield point of the simulated world (where a fault may strike).

    register_scheme("sim", lambda path: SimFS(world, path))
    file_system(spark, "sim://lake/out").files("sim://lake/out")
"""
from __future__ import annotations

import fnmatch
from typing import Any, Callable, Sequence

from sparkmark.engine.fs import ArrowPath

from chaos_harness.sim.world import SimFile, World


def norm(p: Any) -> str:
    s = str(p)
    return s.rstrip("/") if s.count("/") > 3 or not s.endswith("//") else s


def parents(p: str) -> list[str]:
    """``sim://b/x/y`` -> ``[sim://b/x, sim://b]``."""
    out = []
    head = p
    while head.count("/") > 2:
        head = head.rsplit("/", 1)[0]
        out.append(head)
    return out


class SimFS:
    """The world's files through HadoopFS's interface (paths spelled ``sim://bucket/key``)."""

    def __init__(self, world: World, path: str):
        self.world = world
        self.root = ArrowPath(norm(path))

    # -------------------------------------------------------------- paths
    def path(self, p: Any) -> ArrowPath:
        return ArrowPath(norm(p))

    qualify = path

    def store_key(self) -> str:
        return "sim"

    def list_requests(self) -> int | None:
        return None

    def _io(self, op: str, p: Any) -> None:
        self.world.io("fs." + op, str(p).replace("sim://lake/", ""))

    # -------------------------------------------------------------- reads
    def _is_dir(self, p: str) -> bool:
        return p in self.world.dirs

    def exists(self, p: Any) -> bool:
        self._io("exists", p)
        q = norm(p)
        return q in self.world.files or self._is_dir(q)

    def is_file(self, p: Any) -> bool:
        self._io("is_file", p)
        return norm(p) in self.world.files

    def _below(self, q: str) -> list[str]:
        pre = q + "/"
        return sorted(f for f in self.world.files if f.startswith(pre))

    def files(self, p: Any) -> list[str]:
        self._io("files", p)
        return [f for f in self._below(norm(p))
                if not f.rsplit("/", 1)[-1].startswith((".", "_"))]

    def _children(self, q: str) -> list[tuple[str, bool]]:
        pre = q + "/"
        out: dict[str, bool] = {}
        for f in self.world.files:
            if f.startswith(pre):
                rest = f[len(pre):]
                out.setdefault(rest.split("/", 1)[0], "/" in rest)
        for d in self.world.dirs:
            if d.startswith(pre):
                out[d[len(pre):].split("/", 1)[0]] = True
        return sorted(out.items())

    def children(self, p: Any) -> list[str]:
        self._io("children", p)
        return [name for name, _ in self._children(norm(p))]

    def _status(self, q: str) -> list[tuple[str, bool, int, int]]:
        f = self.world.files.get(q)
        if f is not None:
            return [(q, False, f.size, f.mtime)]
        if self._is_dir(q):
            return [(q, True, 0, 0)]
        return []

    def status_of(self, p: Any) -> list[tuple[str, bool, int, int]]:
        self._io("stat", p)
        return self._status(norm(p))

    def glob(self, p: Any) -> list[tuple[str, bool, int, int]]:
        self._io("glob", p)
        pat = norm(p)
        every = set(self.world.files) | self.world.dirs
        return sorted(s for q in every if fnmatch.fnmatchcase(q, pat) for s in self._status(q))

    def list_level(self, dirs: Sequence[str]) -> list[tuple[str, bool, int, int]]:
        out = []
        for d in dirs:
            self._io("list", d)
            q = norm(d)
            for name, _ in self._children(q):
                out.extend(self._status(f"{q}/{name}"))
        return out

    def list_tree(self, root: str, descend: Callable[[str], bool],
                  skip: Callable[[str], bool]) -> list[tuple[str, int, int]]:
        self._io("list_tree", root)
        out = []
        stack = [norm(root)]
        while stack:
            q = stack.pop()
            for name, _ in self._children(q):
                if skip(name):
                    continue
                path = f"{q}/{name}"
                f = self.world.files.get(path)
                if f is None:
                    if descend(name):
                        stack.append(path)
                else:
                    out.append((path, f.size, f.mtime))
        return out

    # -------------------------------------------------------------- writes
    def mkdirs(self, p: Any) -> bool:
        self._io("mkdirs", p)
        q = norm(p)
        if q in self.world.files:
            return False
        self.world.dirs.add(q)
        self.world.dirs.update(x for x in parents(q) if x.count("/") > 2)
        return True

    def rename(self, src: Any, dst: Any) -> bool:
        self._io("rename", src)
        s, t = norm(src), norm(dst)
        w = self.world
        if t in w.files or t in w.dirs or (s not in w.files and s not in w.dirs):
            return False
        if s in w.files:
            w.files[t] = w.files.pop(s)
        else:
            for f in self._below(s):
                w.files[t + f[len(s):]] = w.files.pop(f)
            for d in [d for d in w.dirs if d == s or d.startswith(s + "/")]:
                w.dirs.discard(d)
                w.dirs.add(t + d[len(s):])
        w.dirs.update(x for x in parents(t) if x.count("/") > 2)
        return True

    def delete(self, p: Any) -> None:
        self._io("delete", p)
        q = norm(p)
        w = self.world
        w.files.pop(q, None)
        for f in self._below(q):
            del w.files[f]
        for d in [d for d in w.dirs if d == q or d.startswith(q + "/")]:
            w.dirs.discard(d)

    # -------------------------------------------------------------- data (the engine's)
    def write_file(self, p: str, rows: tuple) -> None:
        self._io("write", p)
        q = norm(p)
        self.world.files[q] = SimFile(rows, self.world.now)
        self.world.dirs.update(x for x in parents(q) if x.count("/") > 2)

    def read_file(self, p: str) -> tuple:
        self._io("read", p)
        f = self.world.files.get(norm(p))
        if f is None:
            raise FileNotFoundError(f"File {p} does not exist (sim)")
        return f.rows
