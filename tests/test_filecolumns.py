"""FileColumns (the listing as columns) against the plain list of FileEntry tuples it stands
for: every read, slice, view and sort gives what the list gives."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from sparkmark.planning import filecolumns
from sparkmark.planning.filecolumns import FileColumns
from sparkmark.planning.listing import FileEntry

names = st.text(alphabet="ab/.=\n\tü\0 ", min_size=0, max_size=6)
dirs = st.sampled_from(["file:/in/", "file:/in/dt=1/", "s3a://b/", "", "file:/in/a/", "x"])
entries = st.lists(st.builds(lambda d, n, m, s: FileEntry(m, d + n, s), dirs, names,
                             st.integers(-5, 5), st.integers(0, 3)), max_size=40)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    """Chunks of 3 names and blocks of 5, so that small listings cross their edges."""
    monkeypatch.setattr(filecolumns, "CHUNK", 3)
    monkeypatch.setattr(filecolumns, "_BLOCK", 5)
    monkeypatch.setattr(filecolumns, "_SORT_BLOCK", 4)


@settings(max_examples=300, deadline=None)
@given(entries, entries, st.data())
def test_columns_read_as_the_list_they_were_built_from(a, b, data):
    cols = FileColumns.of(a)
    for e in b[: len(b) // 2]:  # one at a time, then in bulk, then another listing's columns
        cols.append(e)
    cols.extend(b[len(b) // 2:])
    other = FileColumns.of(a[:3])
    cols.extend(other)
    model = a + b + a[:3]
    assert len(cols) == len(model)
    assert list(cols) == model and cols == model and cols == tuple(model)
    assert cols.paths() == [e.path for e in model]
    assert cols.mtimes_np().tolist() == [e.mtime for e in model]
    assert cols.total_size() == sum(e.size for e in model)
    if model:
        i = data.draw(st.integers(-len(model), len(model) - 1))
        assert cols[i] == model[i]
    lo = data.draw(st.integers(0, len(model)))
    hi = data.draw(st.integers(0, len(model)))
    assert list(cols[lo:hi]) == model[lo:hi]
    assert cols.paths(lo, hi) == [e.path for e in model[lo:hi]]
    picks = data.draw(st.lists(st.integers(0, max(0, len(model) - 1)), max_size=12)) \
        if model else []
    view = cols.take(picks)
    assert list(view) == [model[j] for j in picks]
    sub = data.draw(st.lists(st.integers(0, max(0, len(picks) - 1)), max_size=6)) if picks else []
    assert list(view.take(sub)) == [model[picks[j]] for j in sub]
    assert list(view[1:]) == [model[j] for j in picks][1:]
    assert view.paths() == [model[j].path for j in picks]
    for v, want in ((cols, model), (view, [model[j] for j in picks]),
                    (cols.take(sorted(set(picks))), [model[j] for j in sorted(set(picks))])):
        assert v.joined() == "\0".join(e.path for e in want)
        assert v.joined(1, 3) == "\0".join(e.path for e in want[1:3])
    assert view.mtimes_np().tolist() == [model[j].mtime for j in picks]
    ordered = sorted(model)
    assert [model[j] for j in cols.sorted_positions().tolist()] == ordered
    assert list(cols.in_order()) == ordered and list(view.in_order()) == sorted(view)
    assert cols.in_order().in_order().sorted_positions().tolist() == list(range(len(model)))
    for prefix in ("file:/in/", "file:/in/d", "s3a://", "", "x"):
        assert cols.all_under(prefix) == all(e.path.startswith(prefix) for e in model)
        assert view.all_under(prefix) == all(model[j].path.startswith(prefix) for j in picks)


def test_a_view_is_read_only_and_bad_positions_are_refused():
    cols = FileColumns.of([FileEntry(1, "a"), FileEntry(2, "b")])
    with pytest.raises(TypeError):
        cols.take([0]).append(FileEntry(3, "c"))
    with pytest.raises(IndexError):
        cols.take([2])
    with pytest.raises(IndexError):
        cols[2]
    with pytest.raises(ValueError):
        FileColumns().add_files("d/", ["a", "b"], [1], [1, 2])


def test_a_listing_is_about_forty_bytes_a_file():
    """The point of the columns (issue 26): 100,000 files of one directory, by tracemalloc."""
    import tracemalloc
    names = [f"part-{i:07d}.json" for i in range(100_000)]
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    cols = FileColumns()
    filecolumns.CHUNK = 4096
    for at in range(0, len(names), 4096):
        part = names[at:at + 4096]
        cols.add_files("file:/data/in/", part, range(at, at + len(part)), [0] * len(part))
    cols.paths(0, 1)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    per_file = used / len(names)
    assert per_file < 28 + 17 + 8, per_file  # the arrays, the name's characters, slack
