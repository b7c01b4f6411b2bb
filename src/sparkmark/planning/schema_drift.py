"""Schema drift for file sources: the pure decisions (option ``schemaEvolution``).

A file source keeps a *known schema* in its bookmark element.  Each run compares the columns
it sees in the new files with that schema and decides, by mode, what the run returns:

``rescue`` (default)
    The known schema only; values that do not fit it (new columns, values of another type,
    rows that cannot be parsed) go into a ``_rescued_data`` JSON string column.  Nothing is
    lost, nothing fails, the target's schema stays the same.
``addNewColumns``
    New columns are added (with the type seen) and become part of the known schema; values of
    another type still go into ``_rescued_data``.
``failOnNewColumns``
    A new column fails the run (the error names the files and columns); values of another
    type go into ``_rescued_data``.
``none``
    The known schema only, no ``_rescued_data``: what does not fit is counted in the ledger.

Whether a run needs Spark's schema inference over its new files is decided here too
(:func:`choose_read`): only when nothing is known yet, or when the mode must know the new
files' columns (and their types) before the DataFrame is returned.  The steady state of
``rescue`` and ``none`` reads under the known schema and finds what does not fit while the
job's own action reads the rows (JSON: each line's top-level keys against the known names; CSV:
each file's header line, read on the driver, parsed by :func:`csv_header`).

Everything here is plain data: a schema is a sequence of ``(name, type)`` pairs, the type in
Spark's ``simpleString`` spelling.  Example::

    >>> p = plan_drift([("id", "bigint")], [("id", "string"), ("note", "string")], "rescue")
    >>> [c for c, _ in p.columns], p.extra, p.changed
    (['id'], ('note',), (('id', 'bigint', 'string'),))
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from sparkmark.core.errors import ConfigError

RESCUED = "_rescued_data"
#: the internal column Spark fills with a record it could not parse whole (never returned)
CORRUPT = "_sm_corrupt_record"
#: the key under which ``_rescued_data`` keeps a record that could not be parsed at all
CORRUPT_KEY = "_corrupt_record"
#: the key under which ``_rescued_data`` names the file the values came from
FILE_KEY = "_file_path"
MODES = ("rescue", "addNewColumns", "failOnNewColumns", "none")
DEFAULT_MODE = "rescue"
DRIFT_FORMATS = ("json", "csv")
OPTION = "schemaEvolution"

Field = tuple[str, str]


def parse_mode(value: Any) -> str:
    """The canonical spelling of a ``schemaEvolution`` value (case-insensitive), or one
    :class:`ConfigError`.

    >>> parse_mode("addnewcolumns")
    'addNewColumns'
    """
    if value is None:
        return DEFAULT_MODE
    text = str(value).strip()
    for mode in MODES:
        if text.lower() == mode.lower():
            return mode
    raise ConfigError(f"option schemaEvolution={value!r} is not a mode; use one of "
                      f"{', '.join(MODES)} (default {DEFAULT_MODE}, see docs/files.md)")


def split_drift_option(fmt: str, options: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """Take ``schemaEvolution`` out of the reader options: ``(mode, rest)``.

    ``mode`` is ``None`` when drift handling does not apply: a format other than json/csv,
    or an explicit Spark ``mode`` (the user asked for Spark's own handling).  Giving both, or
    ``schemaEvolution`` for another format, is a :class:`ConfigError`.

    >>> split_drift_option("json", {"multiLine": "true"})
    ('rescue', {'multiLine': 'true'})
    >>> split_drift_option("json", {"mode": "FAILFAST"})
    (None, {'mode': 'FAILFAST'})
    """
    rest = {k: v for k, v in options.items() if str(k).lower() != OPTION.lower()}
    given = [v for k, v in options.items() if str(k).lower() == OPTION.lower()]
    mode = parse_mode(given[0]) if given else None
    if fmt not in DRIFT_FORMATS:
        if given:
            raise ConfigError(f"option schemaEvolution is supported for json and csv sources, "
                              f"not {fmt!r}; remove it")
        return None, rest
    spark_mode = [k for k in rest if str(k).lower() in ("mode", "columnnameofcorruptrecord")]
    if spark_mode:
        if given:
            raise ConfigError(f"options schemaEvolution and {spark_mode[0]} were both given; "
                              "schemaEvolution handles bad records itself (into "
                              f"{RESCUED}): keep one of them")
        return None, rest
    return mode or DEFAULT_MODE, rest


@dataclass(frozen=True)
class DriftPlan:
    """What one run returns: ``columns`` typed (in order), ``extra`` seen columns read as
    strings only to be rescued or counted, ``known`` the schema to commit, ``new`` columns not
    in the known schema, ``changed`` ``(name, known type, seen type)``, ``missing`` known
    columns the new files do not have, ``rescue`` whether ``_rescued_data`` is returned,
    ``inference`` why Spark's schema inference ran over the new files (empty: it did not; see
    :func:`choose_read`)."""

    mode: str
    columns: tuple[Field, ...]
    extra: tuple[str, ...]
    known: tuple[Field, ...]
    new: tuple[str, ...]
    changed: tuple[tuple[str, str, str], ...]
    missing: tuple[str, ...]
    rescue: bool
    inference: str = ""

    @property
    def fails(self) -> bool:
        """``failOnNewColumns`` and a new column was seen."""
        return self.mode == "failOnNewColumns" and bool(self.new)

    def info(self) -> dict[str, Any]:
        """The ledger's view (only what is not empty)."""
        out: dict[str, Any] = {"schema_evolution": self.mode}
        if self.new:
            out["new_columns"] = list(self.new)
        if self.changed:
            out["changed_columns"] = [f"{n}: {k} -> {s}" for n, k, s in self.changed]
        if self.missing:
            out["missing_columns"] = list(self.missing)
        if self.inference:
            out["schema_inference"] = self.inference
        return out


def _internal(name: str) -> bool:
    return name in (CORRUPT, RESCUED)


def plan_drift(known: Sequence[Field] | None, seen: Sequence[Field], mode: str) -> DriftPlan:
    """Compare the ``seen`` columns of this run's files with the ``known`` schema (``None``:
    nothing known yet, the first run's columns become known).  Names compare
    case-insensitively, like Spark's; the known spelling wins.

    >>> plan_drift(None, [("id", "bigint")], "rescue").known
    (('id', 'bigint'),)
    >>> p = plan_drift([("id", "bigint")], [("ID", "bigint"), ("x", "double")], "addNewColumns")
    >>> p.columns, p.known == p.columns, p.new
    ((('id', 'bigint'), ('x', 'double')), True, ('x',))
    """
    mode = parse_mode(mode)
    seen = [(n, t) for n, t in seen if not _internal(n)]
    if known is None:
        cols = tuple(dict((n.lower(), (n, t)) for n, t in reversed(seen)).values())[::-1]
        return DriftPlan(mode, cols, (), cols, (), (), (), mode != "none")
    known = tuple((n, t) for n, t in known if not _internal(n))
    by_name = {n.lower(): (n, t) for n, t in known}
    new: list[Field] = []
    changed: list[tuple[str, str, str]] = []
    seen_names = set()
    for n, t in seen:
        key = n.lower()
        if key in seen_names:
            continue
        seen_names.add(key)
        if key not in by_name:
            new.append((n, t))
        elif by_name[key][1] != t:
            changed.append((by_name[key][0], by_name[key][1], t))
    missing = tuple(n for n, _ in known if n.lower() not in seen_names)
    if mode == "addNewColumns":
        columns = known + tuple(new)
        extra: tuple[str, ...] = ()
    else:
        columns = known
        extra = tuple(n for n, _ in new)
    return DriftPlan(mode, columns, extra, columns, tuple(n for n, _ in new), tuple(changed),
                     missing, mode != "none")


def merge_seen(schemas: Sequence[Sequence[Field]]) -> list[Field]:
    """The columns of several groups of files (CSV files with different headers), in order of
    first appearance; a column seen with different types is a ``string``, which holds any.

    >>> merge_seen([[("a", "int"), ("b", "int")], [("b", "double"), ("c", "int")]])
    [('a', 'int'), ('b', 'string'), ('c', 'int')]
    """
    out: dict[str, Field] = {}
    for schema in schemas:
        for n, t in schema:
            key = n.lower()
            if key not in out:
                out[key] = (n, t)
            elif out[key][1] != t:
                out[key] = (out[key][0], "string")
    return list(out.values())


def name_paths(paths: Sequence[str], at_most: int = 5) -> str:
    """The first paths of a list for an error text (pure).

    >>> name_paths(["a", "b", "c"], at_most=2)
    'a, b (and 1 more)'
    """
    more = f" (and {len(paths) - at_most} more)" if len(paths) > at_most else ""
    return ", ".join(paths[:at_most]) + more


def skip_hint(job: str | None, ctx: str | None, paths: Sequence[str], *, limit: int = 3) -> str:
    """The way out of a wedge, as the command a user types (no Python needed).

    >>> print(skip_hint("orders", "src", ["file:/in/bad.json"]))
    skip the file with: sparkmark bookmark set orders --ctx src --processed file:/in/bad.json
    """
    if not paths:
        return ""
    shown = " ".join(f"--processed {_shell(p)}" for p in paths[:limit])
    more = f" (and the {len(paths) - limit} other file(s))" if len(paths) > limit else ""
    what = "the file" if len(paths) == 1 else "the files"
    return (f"skip {what} with: sparkmark bookmark set {_shell(job or 'JOB')} --ctx "
            f"{_shell(ctx or 'CTX')} {shown}{more}")


def _shell(word: str) -> str:
    import shlex
    return shlex.quote(str(word))


@dataclass(frozen=True)
class ReadChoice:
    """How a run reads its new files: ``infer`` (Spark's schema inference over them first) or
    not (the known schema only); ``why`` says why a pass runs (the ledger's
    ``schema_inference``), empty when none does.

    >>> choose_read("json", "rescue", [("id", "bigint")], {})
    ReadChoice(infer=False, why='')
    """

    infer: bool
    why: str = ""


def _true(opts: dict[str, str], name: str) -> bool:
    return str(opts.get(name.lower(), "false")).strip().lower() == "true"


def choose_read(fmt: str, mode: str, known: Sequence[Field] | None, opts: dict[str, Any],
                headers: Sequence[Sequence[str] | None] | None = None) -> ReadChoice:
    """Whether this run needs an inference pass over its new files (see the module docstring).

    ``known`` is the known (or given) schema, ``None`` on a first run; ``opts`` the reader
    options; ``headers`` the parsed header of each group of CSV files (``None`` for one that
    :func:`csv_header` could not parse), when ``header=true``.

    >>> choose_read("json", "rescue", None, {}).why
    'first run: the known schema is learnt from the files'
    >>> choose_read("json", "addNewColumns", [("id", "bigint")], {}).infer
    True
    >>> choose_read("csv", "rescue", [("id", "int")], {"header": "true", "inferSchema": "true"},
    ...             [("id", "note")]).infer
    False
    """
    mode = parse_mode(mode)
    o = {str(k).lower(): str(v) for k, v in opts.items()}
    if known is None:
        return ReadChoice(True, "first run: the known schema is learnt from the files")
    enc = (o.get("encoding") or o.get("charset") or "utf-8").lower().replace("-", "")
    if enc.replace("_", "") not in ("utf8",):
        return ReadChoice(True, f"encoding {o.get('encoding') or o.get('charset')}")
    if fmt == "json":
        if _true(o, "multiLine"):
            return ReadChoice(True, "multiLine: a record is not a line")
        if mode in ("addNewColumns", "failOnNewColumns"):
            return ReadChoice(True, f"{mode}: new columns are found before the read")
        return ReadChoice(False)
    if not _true(o, "header"):
        return ReadChoice(False)
    if headers is None or any(h is None for h in headers):
        return ReadChoice(True, "a header line sparkmark does not parse itself")
    names = {n.lower() for n, _ in known}
    new = sorted({h for hs in headers if hs is not None for h in hs if h.lower() not in names})
    if new and mode == "addNewColumns" and _true(o, "inferSchema"):
        return ReadChoice(True, f"new column(s) {', '.join(new)}: their types are inferred")
    return ReadChoice(False)


def _csv_char(value: str | None, default: str) -> str | None:
    """A CSV option's one character (Spark's ``\\t`` and ``\\u0001`` spellings too), or None."""
    text = default if value is None else value
    if text == "\\t":
        return "\t"
    if text.startswith("\\u") and len(text) == 6:
        try:
            return chr(int(text[2:], 16))
        except ValueError:
            return None
    return text if len(text) == 1 else None


def csv_header(line: str | None, opts: dict[str, Any]) -> tuple[str, ...] | None:
    """The column names of a CSV header line as Spark reads them, or ``None`` when this parser
    would not be sure to agree with Spark's (then Spark infers them): an empty or commented
    line, a byte-order mark, a multi-character separator, an empty or repeated name.

    >>> csv_header('id,"a,b",note\\r', {})
    ('id', 'a,b', 'note')
    >>> csv_header("id;id", {"sep": ";"}) is None
    True
    """
    import csv
    if line is None:
        return None
    o = {str(k).lower(): str(v) for k, v in opts.items()}
    sep = _csv_char(o.get("sep", o.get("delimiter")), ",")
    quote = _csv_char(o.get("quote"), '"')
    escape = _csv_char(o.get("escape"), "\\")
    comment = o.get("comment")
    text = line[:-1] if line.endswith("\r") else line
    if (sep is None or quote is None or escape is None or not text.strip() or "\ufeff" in text
            or (comment and text.startswith(comment)) or sep in ("\r", "\n")):
        return None
    try:
        rows = list(csv.reader([text], delimiter=sep, quotechar=quote,
                               escapechar=None if escape == quote else escape,
                               doublequote=True, strict=True))
    except csv.Error:
        return None
    if len(rows) != 1:
        return None
    trim_l, trim_r = _true(o, "ignoreLeadingWhiteSpace"), _true(o, "ignoreTrailingWhiteSpace")
    names = tuple(n.strip() if trim_l and trim_r else n.lstrip() if trim_l else
                  n.rstrip() if trim_r else n for n in rows[0])
    lows = [n.lower() for n in names]
    if not names or any(not n for n in names) or len(set(lows)) != len(lows):
        return None
    return names
