"""Job arguments, spelled exactly as AWS Glue spells them.

``args`` may be Glue's resolved dict (``{"JOB_NAME": ..., "job_bookmark_option": ...}``; the
hyphenated spellings with or without ``--`` are accepted too) or an argv list
(``["--job-bookmark-option", "job-bookmark-enable", "--JOB_NAME", "orders"]``, ``--key=value``
also works).  Everything here is pure: no Spark, no database.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from sparkmark.core.errors import ConfigError

ENABLE = "job-bookmark-enable"
DISABLE = "job-bookmark-disable"
PAUSE = "job-bookmark-pause"
BOOKMARK_OPTIONS = (ENABLE, DISABLE, PAUSE)

# canonical key -> accepted spellings (compared after stripping leading dashes)
_KEYS = {
    "job_bookmark_option": ("job_bookmark_option", "job-bookmark-option"),
    "job_bookmark_from": ("job_bookmark_from", "job-bookmark-from"),
    "job_bookmark_to": ("job_bookmark_to", "job-bookmark-to"),
    "JOB_NAME": ("JOB_NAME", "job-name", "job_name"),
}
_CANON = {spelling: key for key, spellings in _KEYS.items() for spelling in spellings}


@dataclass(frozen=True)
class BookmarkArgs:
    """The bookmark-related part of a job's arguments."""

    option: str = DISABLE
    from_run: str | None = None
    to_run: str | None = None
    job_name: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        """``enable``, ``disable`` or ``pause``."""
        return self.option.rsplit("-", 1)[-1]

    def as_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"job_bookmark_option": self.option}
        if self.from_run:
            out["job_bookmark_from"] = self.from_run
            out["job_bookmark_to"] = self.to_run
        return out


def argv_to_dict(argv: Sequence[str]) -> dict[str, str]:
    """Turn ``["--a", "1", "--b=2", "--flag"]`` into ``{"a": "1", "b": "2", "flag": "true"}``.

    A leading program name (anything before the first ``--`` argument) is ignored, so
    ``sys.argv`` can be passed as it is.
    """
    out: dict[str, str] = {}
    items = list(argv)
    i = 0
    while i < len(items) and not str(items[i]).startswith("--"):
        i += 1
    while i < len(items):
        item = str(items[i])
        if not item.startswith("--"):
            raise ConfigError(
                f"unexpected argument {item!r}: job arguments are '--name value' pairs, "
                "e.g. ['--job-bookmark-option', 'job-bookmark-enable']")
        key = item[2:]
        if "=" in key:
            key, value = key.split("=", 1)
            i += 1
        elif i + 1 < len(items) and not str(items[i + 1]).startswith("--"):
            value = str(items[i + 1])
            i += 2
        else:
            value = "true"
            i += 1
        out[key] = value
    return out


def parse_job_args(args: Mapping[str, Any] | Sequence[str] | None) -> BookmarkArgs:
    """Validate and normalise job arguments. Raises :class:`ConfigError` with a clear message."""
    if args is None:
        raw: dict[str, Any] = {}
    elif isinstance(args, Mapping):
        raw = dict(args)
    elif isinstance(args, (list, tuple)):
        raw = argv_to_dict(args)
    else:
        raise ConfigError(
            f"job arguments must be a dict or an argv list, not {type(args).__name__}")
    found: dict[str, Any] = {}
    extra: dict[str, str] = {}
    for key, value in raw.items():
        canon = _CANON.get(str(key).lstrip("-"))
        if canon is None:
            _refuse_near_miss(str(key))
            extra[str(key).lstrip("-")] = value
            continue
        if canon in found and found[canon] != value:
            raise ConfigError(f"job argument {canon} is given twice with different values "
                              f"({found[canon]!r} and {value!r}); give it once")
        found[canon] = value

    option = found.get("job_bookmark_option")
    option = DISABLE if option in (None, "") else str(option).strip()
    if option not in BOOKMARK_OPTIONS:
        raise ConfigError(
            f"unknown --job-bookmark-option {option!r}; use one of "
            f"{', '.join(BOOKMARK_OPTIONS)}")
    from_run = _opt_str(found.get("job_bookmark_from"))
    to_run = _opt_str(found.get("job_bookmark_to"))
    if (from_run is None) != (to_run is None):
        given, missing = (("--job-bookmark-from", "--job-bookmark-to") if from_run
                          else ("--job-bookmark-to", "--job-bookmark-from"))
        raise ConfigError(f"{given} was given without {missing}: give both run ids or neither")
    if from_run is not None and option != PAUSE:
        raise ConfigError(
            "--job-bookmark-from/--job-bookmark-to only apply to "
            f"--job-bookmark-option {PAUSE} (got {option})")
    name = _opt_str(found.get("JOB_NAME"))
    return BookmarkArgs(option=option, from_run=from_run, to_run=to_run, job_name=name,
                        extra=extra)


def _squash(key: str) -> str:
    return "".join(ch for ch in key.lower() if ch.isalnum())


_BOOKMARK_KEYS = {"jobbookmarkoption": "--job-bookmark-option",
                  "jobbookmarkfrom": "--job-bookmark-from",
                  "jobbookmarkto": "--job-bookmark-to"}


def _refuse_near_miss(key: str) -> None:
    """A key that looks like a bookmark argument but is not one would silently mean "disable"
    (read everything, every run); refuse it naming the right spelling.

    >>> _refuse_near_miss("--job-bookmark-options")
    Traceback (most recent call last):
    ...
    sparkmark.core.errors.ConfigError: unknown job argument '--job-bookmark-options': did you mean \
--job-bookmark-option (or job_bookmark_option in a dict)?
    """
    import difflib
    squashed = _squash(key)
    if "bookmark" not in squashed and not difflib.get_close_matches(
            squashed, list(_BOOKMARK_KEYS), n=1, cutoff=0.8):
        return
    best = difflib.get_close_matches(squashed, list(_BOOKMARK_KEYS), n=1, cutoff=0.7)
    right = _BOOKMARK_KEYS[best[0]] if best else "--job-bookmark-option"
    shown = key if len(key) <= 80 else key[:80] + "..."
    raise ConfigError(f"unknown job argument {shown!r}: did you mean {right} (or "
                      f"{right[2:].replace('-', '_')} in a dict)?")


def _opt_str(value: Any) -> str | None:
    if value is None:
        return None
    s = str(value).strip()
    return s or None
