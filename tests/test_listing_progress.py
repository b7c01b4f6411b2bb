"""Progress reports of long listings (sparkmark.core.listing_progress) on a real directory tree,
with a fake monotonic clock: silent before `after_s`, throttled to `every_s`, a final report."""
from __future__ import annotations

import functools

from sparkmark.core.listing_progress import ListingProgress, counting, finish, watch_listing
from sparkmark.planning.listing import walk
from sparkmark.sources.dirlisting import local_level


class Ticks:
    """A monotonic clock that moves `step` seconds each time it is read."""

    def __init__(self, step: float):
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def tree(tmp_path, parts=5, files=3):
    for p in range(parts):
        d = tmp_path / f"p={p}"
        d.mkdir()
        for i in range(files):
            (d / f"{i}.json").write_text("{}")
    return f"file:{tmp_path}"


def list_all(root):
    lister = counting(functools.partial(local_level, recurse=True), root)
    res = walk([root], lister, recurse=True, previous=None, mode="full", listing_ts=0,
               started_ms=0, margin_ms=0, took_ms=lambda: 0, roots_key=[root])
    finish(lister)
    return res


def test_nothing_is_reported_without_a_watcher_or_before_after_s(tmp_path):
    root = tree(tmp_path)
    lister = functools.partial(local_level, recurse=True)
    assert counting(lister, root) is lister  # no one watches: the lister is unchanged
    seen: list[ListingProgress] = []
    with watch_listing(seen.append, after_s=1000, clock=Ticks(1.0)):
        res = list_all(root)
    assert len(res.files) == 15 and seen == []


def test_a_long_listing_reports_counts_so_far_and_its_end(tmp_path):
    root = tree(tmp_path)
    seen: list[ListingProgress] = []
    with watch_listing(seen.append, after_s=2.0, every_s=0.0, clock=Ticks(1.0)):
        list_all(root)
    assert seen, "a listing longer than after_s reports"
    assert all(p.root == root and p.elapsed_s >= 2.0 for p in seen)
    assert [p.files for p in seen] == sorted(p.files for p in seen)  # counts only grow
    assert seen[-1].done and seen[-1].files == 15 and seen[-1].dirs == 6
    assert not any(p.done for p in seen[:-1])


def test_reports_are_throttled(tmp_path):
    root = tree(tmp_path, parts=20, files=1)
    every: list[ListingProgress] = []
    with watch_listing(every.append, after_s=0.0, every_s=0.0, clock=Ticks(0.1)):
        list_all(root)
    throttled: list[ListingProgress] = []
    with watch_listing(throttled.append, after_s=0.0, every_s=1.0, clock=Ticks(0.1)):
        list_all(root)
    assert len(every) == 22  # 21 directories and the end
    assert 1 < len(throttled) < len(every)


def test_a_failing_display_never_breaks_the_listing(tmp_path):
    root = tree(tmp_path)

    def broken(_):
        raise RuntimeError("display gone")
    with watch_listing(broken, after_s=0.0, clock=Ticks(1.0)):
        assert len(list_all(root).files) == 15
