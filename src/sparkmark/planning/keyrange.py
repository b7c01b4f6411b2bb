"""Key-range planning for bookmarked JDBC sources — pure: no Spark, no database.

A JDBC bookmark is one compound key ``(k1, ..., kn)`` compared lexicographically in a sort order
(``asc``: new rows have larger keys; ``desc``: smaller).  A run reads the rows strictly *after* the
last committed key and *through* (including) the upper bound read once at run start, then commits
that upper bound.  Everything here works on plain data:

- option handling (``bookmark_keys`` / ``jobBookmarkKeys``, the sort order and its two Glue
  spellings),
- the state element (encode / validate / decode; values are JSON-safe and round-trip exactly),
- predicates as a tiny expression tree that is both rendered to SQL (identifiers quoted, literals
  escaped) and evaluated in Python (the reference for the property tests),
- the read plan for each bookmark mode, and the partitioning of a large range on the first key.

Predicate nodes are tuples::

    ("true",) | ("false",) | ("cmp", i, op, value) | ("isnull", i) | ("notnull", i)
    | ("and", (p, ...)) | ("or", (p, ...))

where ``i`` is the index of a key column and ``op`` one of ``< <= = >= >``.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Mapping, Sequence

from sparkmark.core.errors import ConfigError, StateCorruptError

ASC, DESC = "asc", "desc"
SORT_ORDERS = (ASC, DESC)

#: key types sparkmark can bookmark on (mapped from java.sql.Types by the JDBC source)
KEY_TYPES = ("int", "decimal", "string", "date", "timestamp", "timestamptz")
#: key types the first key may have for the read to be split into partitions
PARTITIONABLE = ("int", "decimal", "date", "timestamp")

KEYS_OPTION = "jobBookmarkKeys"
SORT_OPTIONS = ("jobBookmarkKeysSortOrder", "jobBookmarksKeysSortOrder")  # Glue's two spellings

Pred = tuple
TRUE: Pred = ("true",)
FALSE: Pred = ("false",)

_OPS = ("<", "<=", "=", ">=", ">")
_DECIMAL_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TS_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(\.\d{1,9})?$")
_TSTZ_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(\.\d{1,9})?"
                      r"(Z|[+-]\d{2}(:?\d{2}(:?\d{2})?)?)$")


# ---------------------------------------------------------------------------------- options
@dataclass(frozen=True)
class KeyOptions:
    """The bookmark keys asked for (``None``: use the primary key) and the sort order."""

    keys: tuple[str, ...] | None
    sort_order: str


def resolve_key_options(bookmark_keys: Sequence[str] | str | None, sort_order: str | None,
                        options: Mapping[str, Any] | None) -> tuple[KeyOptions, dict[str, Any]]:
    """Merge the ``bookmark_keys``/``sort_order`` arguments with Glue's options.

    Returns the key options and the remaining (reader) options.  Glue's option names are matched
    case-insensitively; giving the same setting twice with different values is an error.
    """
    rest: dict[str, Any] = {}
    opt_keys = None
    opt_orders: dict[str, Any] = {}
    for name, value in dict(options or {}).items():
        low = str(name).lower()
        if low == KEYS_OPTION.lower():
            opt_keys = value
        elif low in (s.lower() for s in SORT_OPTIONS):
            opt_orders[str(name)] = value
        else:
            rest[str(name)] = value

    keys = _key_list(bookmark_keys, "bookmark_keys")
    from_opts = _key_list(opt_keys, KEYS_OPTION)
    if keys is not None and from_opts is not None and keys != from_opts:
        raise ConfigError(
            f"bookmark_keys={list(keys)} and options {KEYS_OPTION}={list(from_opts)} disagree; "
            "give the bookmark keys once")
    keys = keys if keys is not None else from_opts

    orders = {n: _sort_order(v, n) for n, v in opt_orders.items()}
    if len(set(orders.values())) > 1:
        raise ConfigError(
            f"the sort order is given twice with different values ({orders}); give "
            f"{SORT_OPTIONS[0]} once")
    arg_order = _sort_order(ASC if sort_order is None else sort_order, "sort_order")
    order = arg_order
    if orders:
        opt_order = next(iter(orders.values()))
        # sort_order's default is "asc": an explicit "desc" that the options contradict is an error
        if arg_order != ASC and opt_order != arg_order:
            raise ConfigError(
                f"sort_order={arg_order!r} and options {next(iter(orders))}={opt_order!r} "
                "disagree; give the sort order once")
        order = opt_order
    return KeyOptions(keys=keys, sort_order=order), rest


def _key_list(value: Any, what: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise ConfigError(f"{what} {value!r} is not a JSON list of column names; "
                                  'use e.g. ["empno"]') from None
        else:
            value = [p.strip() for p in text.split(",")]
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{what} must be a list of column names, not {type(value).__name__}")
    keys = tuple(value)
    if not keys:
        raise ConfigError(f"{what} is empty; give at least one column, or leave it out to use "
                          "the table's primary key")
    for k in keys:
        if not isinstance(k, str) or not k.strip():
            raise ConfigError(f"{what} must be non-empty column names, got {k!r}")
    lowered = [k.lower() for k in keys]
    if len(set(lowered)) != len(lowered):
        raise ConfigError(f"{what} {list(keys)} names a column twice; give each key once")
    return keys


def _sort_order(value: Any, what: str) -> str:
    text = str(value).strip().lower() if isinstance(value, str) else None
    if text not in SORT_ORDERS:
        raise ConfigError(f"{what} must be 'asc' or 'desc', not {value!r}")
    return text


# ---------------------------------------------------------------------------------- values
def canonical(key_type: str, value: Any) -> Any:
    """The JSON-safe canonical form of a key value (what the state element stores).

    ``int``: a Python int; ``decimal``: its decimal text as the database gave it; ``string``: the
    string; ``date``: ``YYYY-MM-DD``; ``timestamp``: ``YYYY-MM-DD HH:MM:SS[.f...]``;
    ``timestamptz``: the same with an offset.  Raises ``ValueError`` for anything else.
    """
    if key_type == "int":
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value.strip()):
            return int(value.strip())
        raise ValueError(f"{value!r} is not an integer")
    if key_type == "decimal":
        if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and _DECIMAL_RE.match(value.strip()):
            return value.strip()
        raise ValueError(f"{value!r} is not a decimal number")
    if key_type == "string":
        if isinstance(value, str):
            if "\x00" in value:
                raise ValueError("a string key value contains a NUL character")
            return value
        raise ValueError(f"{value!r} is not a string")
    if key_type == "date":
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return value.isoformat()
        if isinstance(value, str) and _DATE_RE.match(value):
            dt.date.fromisoformat(value)
            return value
        raise ValueError(f"{value!r} is not a date (YYYY-MM-DD)")
    if key_type == "timestamp":
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            return value.isoformat(sep=" ")
        if isinstance(value, str) and _TS_RE.match(value):
            _parse_ts(value)
            return value.replace("T", " ", 1)
        raise ValueError(f"{value!r} is not a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff])")
    if key_type == "timestamptz":
        if isinstance(value, str) and _TSTZ_RE.match(value):
            _parse_tstz(value)
            return value.replace("T", " ", 1)
        raise ValueError(f"{value!r} is not a timestamp with a time zone offset")
    raise ValueError(f"unknown key type {key_type!r}")


def python_value(key_type: str, value: Any) -> Any:
    """A Python value that orders like the canonical value (the reference model's order)."""
    value = canonical(key_type, value)
    if key_type == "decimal":
        return Decimal(value)
    if key_type == "date":
        return dt.date.fromisoformat(value)
    if key_type == "timestamp":
        return _parse_ts(value)
    if key_type == "timestamptz":
        return _parse_tstz(value)
    return value


def _frac_to_us(frac: str | None) -> int:
    return int((frac or ".0")[1:].ljust(6, "0")[:6])


def _parse_ts(text: str) -> dt.datetime:
    m = _TS_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a timestamp")
    base = dt.datetime.fromisoformat(f"{m.group(1)} {m.group(2)}")
    return base.replace(microsecond=_frac_to_us(m.group(3)))


def _parse_tstz(text: str) -> dt.datetime:
    m = _TSTZ_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a timestamp with time zone")
    off = m.group(4)
    if off == "Z":
        tz = dt.timezone.utc
    else:
        sign = -1 if off[0] == "-" else 1
        digits = off[1:].replace(":", "")
        hh, mm, ss = int(digits[0:2]), int(digits[2:4] or 0), int(digits[4:6] or 0)
        tz = dt.timezone(sign * dt.timedelta(hours=hh, minutes=mm, seconds=ss))
    base = dt.datetime.fromisoformat(f"{m.group(1)} {m.group(2)}")
    return base.replace(microsecond=_frac_to_us(m.group(3)), tzinfo=tz)


def render_literal(key_type: str, value: Any) -> str:
    """A SQL literal for a key value: strings quoted with ``'`` doubled, dates and timestamps
    as standard ``CAST('...' AS ...)`` (accepted by PostgreSQL, Derby and most databases)."""
    value = canonical(key_type, value)
    if key_type == "int":
        return str(value)
    if key_type == "decimal":
        return value
    quoted = "'" + value.replace("'", "''") + "'"
    if key_type == "string":
        return quoted
    if key_type == "date":
        return f"CAST({quoted} AS DATE)"
    if key_type == "timestamp":
        return f"CAST({quoted} AS TIMESTAMP)"
    return f"CAST({quoted} AS TIMESTAMP WITH TIME ZONE)"


def quote_identifier(name: str, quote: str = '"') -> str:
    """``name`` quoted with ``quote`` (``"`` by default), the quote character doubled inside."""
    if not quote or quote == " ":
        return name
    close = "]" if quote == "[" else quote
    return quote + name.replace(close, close + close) + close


# ---------------------------------------------------------------------------------- predicates
def cmp(i: int, op: str, value: Any) -> Pred:
    if op not in _OPS:
        raise ValueError(f"unknown operator {op!r}")
    return ("cmp", i, op, value)


def and_(*parts: Pred) -> Pred:
    out: list[Pred] = []
    for p in parts:
        if p == FALSE:
            return FALSE
        if p == TRUE:
            continue
        out.extend(p[1] if p[0] == "and" else [p])
    if not out:
        return TRUE
    return out[0] if len(out) == 1 else ("and", tuple(out))


def or_(*parts: Pred) -> Pred:
    out: list[Pred] = []
    for p in parts:
        if p == TRUE:
            return TRUE
        if p == FALSE:
            continue
        out.extend(p[1] if p[0] == "or" else [p])
    if not out:
        return FALSE
    return out[0] if len(out) == 1 else ("or", tuple(out))


def _ops(order: str) -> tuple[str, str, str, str]:
    """(strictly after, at or after, strictly before, at or before) in ``order``."""
    return (">", ">=", "<", "<=") if order == ASC else ("<", "<=", ">", ">=")


def lex_after(values: Sequence[Any], order: str, inclusive: bool = False) -> Pred:
    """Keys strictly after ``values`` in ``order`` (or equal too, with ``inclusive``).

    Expanded to ``k1 > v1 OR (k1 = v1 AND k2 > v2) OR ...`` (row-value comparisons are not
    portable), with a redundant ``k1 >= v1`` in front so that an index on ``k1`` bounds the scan.
    """
    gt, ge, _, _ = _ops(order)
    n = len(values)
    terms = []
    for j in range(n):
        last = j == n - 1
        op = ge if (last and inclusive) else gt
        terms.append(and_(*[cmp(i, "=", values[i]) for i in range(j)], cmp(j, op, values[j])))
    pred = or_(*terms)
    return and_(cmp(0, ge, values[0]), pred) if n > 1 else pred


def lex_through(values: Sequence[Any], order: str) -> Pred:
    """Keys at or before ``values`` in ``order``."""
    _, _, lt, le = _ops(order)
    n = len(values)
    terms = []
    for j in range(n):
        op = le if j == n - 1 else lt
        terms.append(and_(*[cmp(i, "=", values[i]) for i in range(j)], cmp(j, op, values[j])))
    pred = or_(*terms)
    return and_(cmp(0, le, values[0]), pred) if n > 1 else pred


def not_null(n: int) -> Pred:
    return and_(*[("notnull", i) for i in range(n)])


def range_predicate(after: Sequence[Any] | None, through: Sequence[Any] | None,
                    order: str) -> Pred:
    """``after < key <= through`` in ``order`` (``None`` leaves that side open)."""
    return and_(lex_after(after, order) if after is not None else TRUE,
                lex_through(through, order) if through is not None else TRUE)


def render(pred: Pred, columns: Sequence[str], types: Sequence[str]) -> str:
    """SQL text of ``pred``; ``columns`` are already-quoted identifiers."""
    kind = pred[0]
    if kind == "true":
        return "1 = 1"
    if kind == "false":
        return "1 = 0"
    if kind == "cmp":
        _, i, op, value = pred
        return f"{columns[i]} {op} {render_literal(types[i], value)}"
    if kind == "isnull":
        return f"{columns[pred[1]]} IS NULL"
    if kind == "notnull":
        return f"{columns[pred[1]]} IS NOT NULL"
    joiner = " AND " if kind == "and" else " OR "
    return "(" + joiner.join(render(p, columns, types) for p in pred[1]) + ")"


def evaluate(pred: Pred, row: Sequence[Any], types: Sequence[str] | None = None) -> bool:
    """Evaluate ``pred`` on ``row`` in Python (``None`` is SQL NULL: comparisons are unknown,
    which for these negation-free predicates is the same as false)."""
    kind = pred[0]
    if kind == "true":
        return True
    if kind == "false":
        return False
    if kind == "isnull":
        return row[pred[1]] is None
    if kind == "notnull":
        return row[pred[1]] is not None
    if kind == "and":
        return all(evaluate(p, row, types) for p in pred[1])
    if kind == "or":
        return any(evaluate(p, row, types) for p in pred[1])
    _, i, op, value = pred
    if row[i] is None:
        return False
    a, b = row[i], value
    if types is not None:
        a, b = python_value(types[i], a), python_value(types[i], b)
    return {"<": a < b, "<=": a <= b, "=": a == b, ">=": a >= b, ">": a > b}[op]


# ---------------------------------------------------------------------------------- state
SOURCE_KIND = "jdbc"


def make_element(table: str, keys: Sequence[str], key_types: Sequence[str], sort_order: str,
                 last: Sequence[Any] | None) -> dict[str, Any]:
    """The state element a JDBC source commits (JSON-safe)."""
    return {
        "source": SOURCE_KIND,
        "table": table,
        "keys": list(keys),
        "key_types": list(key_types),
        "sort_order": sort_order,
        "last": None if last is None else [canonical(t, v) for t, v in zip(key_types, last)],
    }


def read_element(element: Any, ctx: str, keys: Sequence[str], key_types: Sequence[str],
                 sort_order: str, role: str = "last committed") -> tuple[Any, ...] | None:
    """The ``last`` key of a stored element, after checking it matches this read's keys.

    Raises :class:`ConfigError` when the element was made with other keys, key types or sort
    order (a changed job), :class:`StateCorruptError` when it cannot be decoded.
    """
    if element is None:
        return None
    fix = ("read with the same keys, or reset the job's bookmark (sparkmark bookmark reset JOB) "
           "or use a new transformation_ctx to start over")
    if not isinstance(element, dict):
        raise StateCorruptError(f"the {role} bookmark of transformation_ctx {ctx!r} is not an "
                                f"object ({element!r}); reset the job's bookmark")
    if element.get("source") != SOURCE_KIND:
        raise ConfigError(
            f"transformation_ctx {ctx!r} holds a bookmark of a {element.get('source')!r} source, "
            f"not of a JDBC table; give this JDBC read its own transformation_ctx")
    if list(element.get("keys") or []) != list(keys):
        raise ConfigError(
            f"the {role} bookmark of transformation_ctx {ctx!r} was made with bookmark keys "
            f"{element.get('keys')}, this read uses {list(keys)}; {fix}")
    if element.get("sort_order") != sort_order:
        raise ConfigError(
            f"the {role} bookmark of transformation_ctx {ctx!r} was made with sort order "
            f"{element.get('sort_order')!r}, this read uses {sort_order!r}; {fix}")
    if list(element.get("key_types") or []) != list(key_types):
        raise ConfigError(
            f"the key columns {list(keys)} of transformation_ctx {ctx!r} changed type from "
            f"{element.get('key_types')} to {list(key_types)}; {fix}")
    last = element.get("last")
    if last is None:
        return None
    if not isinstance(last, list) or len(last) != len(keys):
        raise StateCorruptError(
            f"the {role} bookmark of transformation_ctx {ctx!r} has a malformed last key "
            f"{last!r}; reset the job's bookmark (sparkmark bookmark reset JOB)")
    try:
        return tuple(canonical(t, v) for t, v in zip(key_types, last))
    except ValueError as e:
        raise StateCorruptError(
            f"the {role} bookmark of transformation_ctx {ctx!r} has an undecodable last key "
            f"{last!r} ({e}); reset the job's bookmark (sparkmark bookmark reset JOB)") from None


# ---------------------------------------------------------------------------------- read plan
ALL, INCREMENTAL, REPLAY = "all", "incremental", "replay"


@dataclass(frozen=True)
class ReadPlan:
    """What one run reads: rows strictly after ``after`` and through ``through`` (inclusive).

    ``empty``: nothing to read.  ``commit_last``: the last key the run's element records.
    ``new_input``: whether the range can hold new rows.
    """

    mode: str
    after: tuple | None
    through: tuple | None
    empty: bool
    commit_last: tuple | None
    new_input: bool

    def predicate(self, order: str) -> Pred:
        if self.empty:
            return FALSE
        return range_predicate(self.after, self.through, order)


def plan_read(mode: str, previous_last: tuple | None, upper_last: tuple | None) -> ReadPlan:
    """The range a run reads.

    - ``all`` (no bookmark: disabled, or no transformation_ctx): everything.
    - ``incremental`` (enable, or pause without from/to): after ``previous_last`` (``None``:
      from the start) through ``upper_last``, the upper bound read at run start (``None``: the
      table has no rows); commits ``upper_last``.
    - ``replay`` (pause with from/to): after the key committed by ``from`` through the key
      committed by ``to`` (``upper_last``; ``None``: ``to`` had read nothing, so nothing).
    """
    if mode == ALL:
        return ReadPlan(ALL, None, None, False, None, True)
    if mode not in (INCREMENTAL, REPLAY):
        raise ValueError(f"unknown mode {mode!r}")
    if upper_last is None or (previous_last is not None and tuple(previous_last) ==
                              tuple(upper_last)):
        return ReadPlan(mode, previous_last, upper_last, True,
                        previous_last if mode == INCREMENTAL else upper_last, False)
    return ReadPlan(mode, previous_last, tuple(upper_last), False, tuple(upper_last), True)


def first_key_span(plan: ReadPlan, order: str) -> tuple[Any | None, Any | None]:
    """(low, high) of the first key inside the plan's range as far as the plan knows it;
    ``None`` where the database must be asked (an open side)."""
    a = plan.after[0] if plan.after is not None else None
    t = plan.through[0] if plan.through is not None else None
    return (a, t) if order == ASC else (t, a)


# ---------------------------------------------------------------------------------- partitions
@dataclass(frozen=True)
class PartitionPlan:
    bounds: tuple          # canonical boundary values of the first key, increasing
    predicates: tuple      # one predicate on the first key per partition; together they cover all

    @property
    def count(self) -> int:
        return len(self.predicates)


def plan_partitions(key_type: str, low: Any, high: Any, max_partitions: int,
                    rows_per_partition: int) -> PartitionPlan:
    """Split the first key's span ``[low, high]`` into at most ``max_partitions`` ranges.

    Integers and decimals: one partition per ``rows_per_partition`` key values of span (dense
    keys make that the row count).  Dates and timestamps: as many partitions as
    ``max_partitions`` allows, at least one day / one second wide.  Partition predicates are
    ``k1 < b1 OR k1 IS NULL``, ``b1 <= k1 < b2``, ..., ``k1 >= bn``: every value (and NULL)
    falls into exactly one.
    """
    one = PartitionPlan((), (TRUE,))
    if key_type not in PARTITIONABLE or low is None or high is None or max_partitions <= 1:
        return one
    if key_type in ("int", "decimal"):
        lo = math.floor(python_value(key_type, low))
        hi = math.ceil(python_value(key_type, high))
        span = hi - lo + 1
        if span <= 1:
            return one
        n = min(max_partitions, span, max(1, -(-span // max(1, rows_per_partition))))
        bounds = [lo + span * i // n for i in range(1, n)]
        bounds = [b if key_type == "int" else str(b) for b in bounds]
    elif key_type == "date":
        lo_d, hi_d = python_value("date", low), python_value("date", high)
        days = (hi_d - lo_d).days + 1
        n = min(max_partitions, days)
        if n <= 1:
            return one
        bounds = [(lo_d + dt.timedelta(days=days * i // n)).isoformat() for i in range(1, n)]
    else:  # timestamp
        lo_t, hi_t = python_value("timestamp", low), python_value("timestamp", high)
        secs = int((hi_t - lo_t).total_seconds())
        n = min(max_partitions, secs)
        if n <= 1:
            return one
        total_us = (hi_t - lo_t) // dt.timedelta(microseconds=1)
        bounds = [(lo_t + dt.timedelta(microseconds=total_us * i // n)).isoformat(
            sep=" ", timespec="microseconds") for i in range(1, n)]
    dedup: list = []
    for b in bounds:
        if not dedup or b != dedup[-1]:
            dedup.append(b)
    if not dedup:
        return one
    preds = [or_(cmp(0, "<", dedup[0]), ("isnull", 0))]
    preds += [and_(cmp(0, ">=", dedup[i]), cmp(0, "<", dedup[i + 1]))
              for i in range(len(dedup) - 1)]
    preds.append(cmp(0, ">=", dedup[-1]))
    return PartitionPlan(tuple(dedup), tuple(preds))


def encode_key(key_types: Sequence[str], values: Sequence[Any] | None) -> list | None:
    return None if values is None else [canonical(t, v) for t, v in zip(key_types, values)]

