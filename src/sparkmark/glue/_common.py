"""Shared pieces of ``sparkmark.glue``: the "not supported" errors and the config-file loader."""
from __future__ import annotations

import json
import os
from typing import Any, Mapping

from sparkmark.core.errors import ConfigError

DOCS = "docs/glue-migration.md"


class GlueUnsupportedError(ConfigError):
    """A part of AWS Glue's API that ``sparkmark.glue`` does not provide.

        raise GlueUnsupportedError(unsupported_message("GlueContext.x"))
    """


class GlueUnsupportedAttributeError(GlueUnsupportedError, AttributeError):
    """The same, raised from an object's ``__getattr__`` (so ``hasattr`` answers False)."""


def as_options(value: Any, what: str) -> dict[str, Any]:
    """An optional mapping of option names to values (``None`` is empty); else a clear error.

        as_options(None, "format_options")  # {}
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{what} must be a dict of option names to values, not "
                          f"{type(value).__name__}")
    return dict(value)


def unsupported_message(what: str, hint: str | None = None) -> str:
    """The text of a :class:`GlueUnsupportedError`: the call, and the way to do it instead.

        unsupported_message("Spigot.apply", "use frame.toDF().limit(n)")
    """
    text = f"{what} is not supported by sparkmark.glue"
    if hint:
        text += f"; {hint}"
    else:
        text += "; use the Spark DataFrame API (frame.toDF()) or sparkmark.Job directly"
    return f"{text} (see {DOCS})"


def attribute_error(owner: str, name: str, hints: Mapping[str, str]) -> AttributeError:
    """The error an object's ``__getattr__`` raises for a name it does not have.

        raise attribute_error("DynamicFrame", "spigot", {"spigot": "..."})
    """
    if name.startswith("_"):  # Python's own probes (__deepcopy__, _repr_html_, ...)
        return AttributeError(f"{owner!r} object has no attribute {name!r}")
    return GlueUnsupportedAttributeError(unsupported_message(f"{owner}.{name}", hints.get(name)))


def module_getattr(module: str, hints: Mapping[str, str]):
    """A module-level ``__getattr__``: ``from sparkmark.glue.x import Missing`` says why.

    It raises :class:`GlueUnsupportedError` (not an ``AttributeError``, which ``from ... import``
    would turn into a bare "cannot import name").
    """
    def __getattr__(name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        if module == "sparkmark.glue":  # a submodule not imported yet
            import importlib.util
            if importlib.util.find_spec(f"{module}.{name}") is not None:
                return importlib.import_module(f"{module}.{name}")
        raise GlueUnsupportedError(unsupported_message(f"{module}.{name}", hints.get(name)))
    return __getattr__


def load_mapping_file(path: str, what: str, env: str) -> dict[str, Any]:
    """Read a JSON or YAML mapping file (by extension; else JSON, then YAML) into a dict.

        load_mapping_file("catalog.yaml", "catalog mapping", "SPARKMARK_GLUE_CATALOG")
    """
    if not os.path.isfile(path):
        raise ConfigError(f"{what} file {path!r} (from env {env}) does not exist; create it or "
                          f"unset {env}")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read {what} file {path!r} (from env {env}): {e.strerror}") \
            from None
    lower = path.lower()
    try:
        if lower.endswith((".yaml", ".yml")):
            data = _yaml(text)
        elif lower.endswith(".json"):
            data = json.loads(text)
        else:
            try:
                data = json.loads(text)
            except ValueError:
                data = _yaml(text)
    except Exception as e:  # noqa: BLE001 - any parse error is the user's file
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError(f"{what} file {path!r} (from env {env}) is not valid JSON or YAML: "
                          f"{first}; fix the file") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{what} file {path!r} (from env {env}) must hold a mapping "
                          f"(an object), not a {type(data).__name__}")
    return data


def _yaml(text: str) -> Any:
    import yaml
    return yaml.safe_load(text)
