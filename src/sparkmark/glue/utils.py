"""``getResolvedOptions``: Glue's job arguments, with Glue's reserved keys.

Like Glue it returns ``job_bookmark_option`` (``job-bookmark-disable`` unless given; the old
``--continuation-option`` values are translated), ``job_bookmark_from``/``job_bookmark_to``,
``JOB_ID``, ``JOB_RUN_ID``, ``SECURITY_CONFIGURATION``, ``encryption_type``, ``TempDir`` and
``RedshiftTempDir`` (``None`` when absent), plus every option asked for (required).  Arguments
nobody asked for are ignored.  A bad value is a :class:`~sparkmark.core.errors.ConfigError` (Glue
exits through argparse instead).
"""
from __future__ import annotations

from typing import Any, Sequence

from sparkmark.core.errors import ConfigError
from sparkmark.core.options import BOOKMARK_OPTIONS, DISABLE, ENABLE, PAUSE, parse_job_args
from sparkmark.glue._common import module_getattr

CONTINUATION = {"continuation-enabled": ENABLE, "continuation-readonly": PAUSE,
                "continuation-ignore": DISABLE}
_RESERVED = ("job-bookmark-option", "continuation-option", "job-bookmark-from",
             "job-bookmark-to", "JOB_ID", "JOB_RUN_ID", "SECURITY_CONFIGURATION",
             "encryption-type")
_OPTIONAL = ("JOB_ID", "JOB_RUN_ID", "SECURITY_CONFIGURATION", "RedshiftTempDir", "TempDir")


def _dest(name: str) -> str:
    """argparse's key for ``--name``."""
    return name.replace("-", "_")


def _tokens(args: Sequence[str]) -> dict[str, str]:
    """``--key value`` / ``--key=value`` pairs after the program name (argv[0])."""
    out: dict[str, str] = {}
    items = [str(a) for a in list(args)[1:]]
    i = 0
    while i < len(items):
        item = items[i]
        if not item.startswith("--") or item == "--":
            i += 1  # Glue ignores arguments it does not know
            continue
        key = item[2:]
        if "=" in key:
            key, value = key.split("=", 1)
            i += 1
        elif i + 1 < len(items) and not items[i + 1].startswith("--"):
            value = items[i + 1]
            i += 2
        else:
            value = None
            i += 1
        if key in out and out[key] != value:
            raise ConfigError(f"job argument --{key} is given twice ({out[key]!r} and "
                              f"{value!r}); give it once")
        out[key] = value  # type: ignore[assignment]
    return out


def getResolvedOptions(args: Sequence[str], options: Sequence[str]) -> dict[str, Any]:
    """Glue's ``getResolvedOptions(sys.argv, ['JOB_NAME', ...])``."""
    if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
        raise ConfigError("getResolvedOptions needs the argument list, e.g. sys.argv")
    if isinstance(options, str) or not isinstance(options, Sequence):
        raise ConfigError("getResolvedOptions needs a list of option names, e.g. ['JOB_NAME']")
    for name in options:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"option names must be non-empty strings, not {name!r}")
        if name in _RESERVED or _dest(name) in (_dest(r) for r in _RESERVED):
            raise ConfigError(f"{name!r} is a reserved Glue argument; it is always returned, "
                              "do not ask for it in getResolvedOptions")
    given = _tokens(args)

    def value(name: str) -> Any:
        v = given.get(name)
        if name in given and v is None:
            raise ConfigError(f"job argument --{name} has no value; pass '--{name} VALUE'")
        return v

    out: dict[str, Any] = {}
    option = value("job-bookmark-option")
    continuation = value("continuation-option")
    if option is None and continuation is not None:
        if continuation not in CONTINUATION:
            raise ConfigError(f"unknown --continuation-option {continuation!r}; use one of "
                              f"{', '.join(CONTINUATION)} (or --job-bookmark-option)")
        option = CONTINUATION[continuation]
    option = DISABLE if option is None else option
    if option not in BOOKMARK_OPTIONS:
        raise ConfigError(f"unknown --job-bookmark-option {option!r}; use one of "
                          f"{', '.join(BOOKMARK_OPTIONS)}")
    out["job_bookmark_option"] = option
    out["job_bookmark_from"] = value("job-bookmark-from")
    out["job_bookmark_to"] = value("job-bookmark-to")
    for name in _OPTIONAL:
        out[name] = value(name)
    out["encryption_type"] = value("encryption-type")
    if out["TempDir"] is not None:
        out["RedshiftTempDir"] = out["TempDir"]
    elif out["RedshiftTempDir"] is not None:
        out["TempDir"] = out["RedshiftTempDir"]
    missing = []
    for name in options:
        if name in ("TempDir", "RedshiftTempDir"):
            continue
        v = value(name)
        if v is None:
            missing.append(f"--{name}")
        out[_dest(name)] = v
    if missing:
        raise ConfigError(f"missing job argument(s) {', '.join(missing)}; pass them as "
                          f"'{missing[0]} VALUE' on the command line")
    parse_job_args({k: v for k, v in out.items()
                    if k in ("job_bookmark_option", "job_bookmark_from", "job_bookmark_to")})
    return out


__getattr__ = module_getattr("sparkmark.glue.utils", {
    "GlueArgumentParser": "use getResolvedOptions, or argparse for your own arguments",
})
