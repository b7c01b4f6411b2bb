"""An invertible Bloom lookup table (IBLT) of 64-bit keys: the cells of the late-file sketch
(:mod:`sparkmark.planning.latefiles`), with the mixer that places and checks a key.

Two tables subtracted decode to the keys only in one and only in the other, up to about
:data:`CAPACITY` differences with high probability, in a fixed :data:`CELLS` cells (16 bytes
each).  Pure: plain data in, plain data out.

>>> a, b = IBLT(), IBLT()
>>> a.add_all([1, 2, 3]); b.add_all([2, 3, 4])
>>> a.minus(b).decode()
({1}, {4}, True)
"""
from __future__ import annotations

import base64
import struct
import zlib
from array import array
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

M64 = (1 << 64) - 1
K = 3                 # cells per key (one in each of K sub-tables)
WIDTH = 256           # cells per sub-table
CELLS = K * WIDTH     # 768 cells x 16 bytes = 12 KiB (16 KiB as base64), whatever the history
CAPACITY = 400        # differences that decode with high probability (tested)
_CELL = struct.Struct("<iQI")
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # splitmix64's multipliers
_CHECK_SALT = 0xD6E8FEB86659FD93  # a key's check is the mix of the key XOR this


def mix64(x: int) -> int:
    """splitmix64's finalizer: a bijective 64-bit mixer."""
    x = ((x ^ (x >> 30)) * _MIX1) & M64
    x = ((x ^ (x >> 27)) * _MIX2) & M64
    return x ^ (x >> 31)


def _check(key: int) -> int:
    return mix64(key ^ _CHECK_SALT) >> 32


def _cells(key: int) -> tuple[int, int, int]:
    h = mix64(key)
    return (h & 0xFF, WIDTH + ((h >> 21) & 0xFF), 2 * WIDTH + ((h >> 42) & 0xFF))


#: keys from which :meth:`IBLT.add_all` sums on numpy arrays (a first run's sketch of a
#: million files: ~1.7 s of Python loop, ~0.1 s on arrays; below it the loop is cheaper)
_ARRAY_FROM = 4096
#: keys summed per batch: the arrays of a batch take ~160 bytes per key, so a million keys at
#: once held ~150 MB more at the peak of a first run (measured); a batch holds ~10 MB
_ARRAY_CHUNK = 65_536


def _mix64_array(x: Any) -> Any:
    """:func:`mix64` of every element of a ``uint64`` array (products wrap modulo 2**64)."""
    import numpy as np
    x = (x ^ (x >> np.uint64(30))) * np.uint64(_MIX1)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(_MIX2)
    return x ^ (x >> np.uint64(31))


def _cell_sums(keys: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """``(cell, keys added, XOR of the keys, XOR of their checks)`` for every cell that
    ``keys`` touch: what ``add`` of each key adds up to, computed on arrays.

    >>> t = IBLT(); t.add(7)
    >>> sorted(i for i, *_ in _cell_sums([7])) == [i for i in range(CELLS) if t.counts[i]]
    True
    """
    import numpy as np
    k = np.array(keys, dtype=np.uint64)
    h = _mix64_array(k)
    c = _mix64_array(k ^ np.uint64(_CHECK_SALT)) >> np.uint64(32)  # _check
    byte = np.uint64(0xFF)
    cells = np.concatenate((h & byte, np.uint64(WIDTH) + ((h >> np.uint64(21)) & byte),
                            np.uint64(2 * WIDTH) + ((h >> np.uint64(42)) & byte))
                           ).astype(np.intp)
    order = np.argsort(cells, kind="stable")
    by_cell = cells[order]
    counts = np.bincount(cells, minlength=CELLS)
    touched = np.flatnonzero(counts)
    starts = np.searchsorted(by_cell, touched)
    key_x = np.bitwise_xor.reduceat(np.concatenate((k, k, k))[order], starts)
    check_x = np.bitwise_xor.reduceat(np.concatenate((c, c, c))[order], starts)
    return list(zip(touched.tolist(), counts[touched].tolist(), key_x.tolist(),
                    check_x.tolist()))


# ---------------------------------------------------------------------- the IBLT
@dataclass
class IBLT:
    """An invertible Bloom lookup table of 64-bit keys (count, key XOR, check XOR per cell).

    >>> a, b = IBLT(), IBLT()
    >>> for k in (1, 2, 3): a.add(k)
    >>> for k in (2, 3, 4): b.add(k)
    >>> a.minus(b).decode()
    ({1}, {4}, True)
    """

    counts: list[int] = field(default_factory=lambda: [0] * CELLS)
    keys: list[int] = field(default_factory=lambda: [0] * CELLS)
    checks: list[int] = field(default_factory=lambda: [0] * CELLS)

    def add(self, key: int, sign: int = 1) -> None:
        c = _check(key)
        counts, keys, checks = self.counts, self.keys, self.checks
        for i in _cells(key):
            counts[i] += sign
            keys[i] ^= key
            checks[i] ^= c

    def add_all(self, keys: Iterable[int]) -> None:
        """``add`` of each key, with the mixer inlined (this loop builds whole sketches); from
        :data:`_ARRAY_FROM` keys on, the same sums on arrays (:func:`_cell_sums`)."""
        if not isinstance(keys, (list, tuple, array)):
            keys = list(keys)
        counts, cell_keys, checks = self.counts, self.keys, self.checks
        if len(keys) >= _ARRAY_FROM:
            for start in range(0, len(keys), _ARRAY_CHUNK):  # bounded arrays: ~10 MB
                for i, n, kx, cx in _cell_sums(keys[start:start + _ARRAY_CHUNK]):
                    counts[i] += n
                    cell_keys[i] ^= kx
                    checks[i] ^= cx
            return
        c1, c2, salt = _MIX1, _MIX2, _CHECK_SALT  # locals: this loop builds whole sketches
        for key in keys:
            x = ((key ^ (key >> 30)) * c1) & M64
            x = ((x ^ (x >> 27)) * c2) & M64
            h = x ^ (x >> 31)                       # mix64(key)
            x = key ^ salt
            x = ((x ^ (x >> 30)) * c1) & M64
            x = ((x ^ (x >> 27)) * c2) & M64
            c = (x ^ (x >> 31)) >> 32                # _check(key)
            for i in (h & 0xFF, WIDTH + ((h >> 21) & 0xFF), 2 * WIDTH + ((h >> 42) & 0xFF)):
                counts[i] += 1
                cell_keys[i] ^= key
                checks[i] ^= c

    def copy(self) -> "IBLT":
        return IBLT(list(self.counts), list(self.keys), list(self.checks))

    def minus(self, other: "IBLT") -> "IBLT":
        return IBLT([a - b for a, b in zip(self.counts, other.counts)],
                    [a ^ b for a, b in zip(self.keys, other.keys)],
                    [a ^ b for a, b in zip(self.checks, other.checks)])

    def decode(self) -> tuple[set[int], set[int], bool]:
        """Peel pure cells: (keys only in self, keys only in the subtracted table, complete?)."""
        t = self.copy()
        plus: set[int] = set()
        minus: set[int] = set()
        queue = [i for i in range(CELLS) if t.counts[i] in (1, -1)]
        while queue:
            i = queue.pop()
            sign = t.counts[i]
            if sign not in (1, -1):
                continue
            key = t.keys[i]
            if t.checks[i] != _check(key):
                continue
            (plus if sign == 1 else minus).add(key)
            t.add(key, -sign)
            queue.extend(j for j in _cells(key) if t.counts[j] in (1, -1))
        complete = not any(t.counts) and not any(t.keys) and not any(t.checks)
        return plus, minus, complete

    def encode(self) -> str:
        raw = b"".join(_CELL.pack(c, k, h) for c, k, h in zip(self.counts, self.keys, self.checks))
        return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")

    @classmethod
    def decode_text(cls, text: str) -> "IBLT":
        raw = zlib.decompress(base64.b64decode(text.encode("ascii")))
        if len(raw) != CELLS * _CELL.size:
            raise ValueError(f"sketch has {len(raw)} bytes, expected {CELLS * _CELL.size}")
        counts, keys, checks = [], [], []
        for c, k, h in _CELL.iter_unpack(raw):
            counts.append(c)
            keys.append(k)
            checks.append(h)
        return cls(counts, keys, checks)
