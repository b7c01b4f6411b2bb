"""``onModified``: what a file source does with a file it read before and that changed since.

Pure planning over plain data.  The band rule reads a file again whenever its modification time
moves past the bookmark (Glue's behaviour): a file rewritten in place is new input to it.  The
per-file audit (``sm_files``) remembers which paths a job's committed runs read and the
``(mtime, size)`` they had; a selected file whose path was read before *with another version*
is a **rewrite**.  (The same version again is not: that happens after ``bookmark reset`` or a
rewind, and reading it again is the point of those.  Reads of runs rolled back since do not
count at all: the store leaves them out of ``read_before``.)

- ``reprocess`` (the default, Glue's behaviour): rewrites are read again, and counted;
- ``ignore``: a file is read once, whatever happens to it later (Auto Loader's default without
  ``allowOverwrites``): rewrites are left out, and counted;
- ``fail``: the run fails, naming the files (nothing is committed).

The audit has a retention (``Job(files_retention_days=30)``): a file rewritten after its
first read left the audit is new input again, whatever the mode.

Example::

    plan = plan_rewrites(selected, {"file:/in/a.json": {(1000, 12)}}, "ignore")
    plan.selected, plan.rewritten   # a.json (now mtime 2000) is in rewritten, not selected
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Sequence

from sparkmark.core.errors import ConfigError
from sparkmark.planning.listing import FileEntry

#: values of the ``onModified`` option
MODIFIED_MODES = ("reprocess", "ignore", "fail")


def modified_mode(raw: Any) -> str:
    """Validate the ``onModified`` option (``reprocess`` when not given).

    Example: ``modified_mode("Ignore") == "ignore"``
    """
    if raw is None or raw == "":
        return "reprocess"
    value = str(raw).strip().lower()
    if value not in MODIFIED_MODES:
        raise ConfigError(f"option onModified={raw!r} is not one of {', '.join(MODIFIED_MODES)};"
                          " e.g. onModified=reprocess (read a rewritten file again, Glue's way) "
                          "or onModified=ignore (read each file once)")
    return value


@dataclass(frozen=True)
class RewritePlan:
    """``selected``: what the run reads; ``rewritten``: the selected-by-the-band files that
    were read before in another version (read again unless the mode is ``ignore``)."""

    selected: Sequence[FileEntry]
    rewritten: list[FileEntry] = field(default_factory=list)
    mode: str = "reprocess"

    def info(self) -> dict[str, Any]:
        """The ledger's report: ``rewritten`` (a count), and ``rewritten_skipped`` for
        ``ignore``."""
        out: dict[str, Any] = {"rewritten": len(self.rewritten)}
        if self.mode == "ignore" and self.rewritten:
            out["rewritten_skipped"] = len(self.rewritten)
        return out


def plan_rewrites(selected: Sequence[FileEntry],
                  read_before: Mapping[str, Collection[tuple[int | None, int | None]]],
                  mode: str) -> RewritePlan:
    """Split ``selected`` by the audit's ``read_before`` (``{path: {(mtime, size)}}``).

    A file is a rewrite when its path was read before and none of the versions read then is
    its own ``(mtime, size)``.  ``fail`` is decided by the caller (it needs the paths for the
    message): this returns the plan either way.
    """
    if not read_before:  # nothing read before (a first run): no pass over the files
        return RewritePlan(selected, [], mode)
    rewritten = [f for f in selected
                 if f.path in read_before and (f.mtime, f.size) not in read_before[f.path]]
    if mode == "ignore" and rewritten:
        drop = set(rewritten)
        return RewritePlan([f for f in selected if f not in drop], rewritten, mode)
    return RewritePlan(selected, rewritten, mode)
