"""Keeping secrets out of messages, the ledger and ``report`` (pure, no Spark, no database).

Every password form is masked: ``user:pw@host`` in a URL, ``?password=``/``&pwd=``/``;passwd=``
query and JDBC properties (SQL Server's ``;password=...;``), and the values of secret-like
properties given to a run, wherever they appear in an error text::

    >>> mask_url("postgresql://u:pw@h/db?sslpassword=x&password=y")
    'postgresql://u:***@h/db?sslpassword=***&password=***'
    >>> s = SecretSet(); s.add_properties({"user": "u", "passwd": "hunter2"})
    >>> s.scrub("login failed for u with hunter2")
    'login failed for u with ***'
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

MASK = "***"
#: Substrings of a property or query-parameter name that mark its value as secret.
SECRET_WORDS = ("password", "passwd", "pwd", "secret", "token", "credential", "apikey",
                "api_key", "accesskey", "access_key", "sas", "signature", "privatekey",
                "private_key", "auth")
_QUERY = re.compile(r"(?i)([?&;]\s*([A-Za-z0-9_.\-]+)\s*=)([^&;\s'\"]*)")
_USERINFO = re.compile(r"(//[^/:@\s]+:)[^@/\s]*@")

#: Connection properties that are stored in the ledger (``sm_runs.outputs``); every other key
#: is kept in memory for the run only, never written anywhere.
SAFE_PROPERTIES = ("user", "driver", "fetchsize", "batchsize", "isolationlevel",
                   "querytimeout", "numpartitions", "truncate", "createtableoptions",
                   "createtablecolumntypes", "customschema", "currentschema", "ssl", "sslmode")


def is_secret_key(key: str) -> bool:
    """Whether a property/parameter name looks like it holds a secret.

    >>> is_secret_key("javax.net.ssl.trustStorePassword"), is_secret_key("user")
    (True, False)
    """
    k = key.lower().replace("-", "")
    return any(w in k for w in SECRET_WORDS)


def mask_url(text: str) -> str:
    """``text`` (a URL, or a message holding URLs) with every password form masked."""
    text = _USERINFO.sub(rf"\1{MASK}@", text)
    return _QUERY.sub(lambda m: m.group(1) + (MASK if is_secret_key(m.group(2)) and m.group(3)
                                              else m.group(3)), text)


def url_secrets(url: str) -> list[str]:
    """The secret values written in a URL (``user:pw@`` and secret query parameters)."""
    out = [m.group(0)[len(m.group(1)):-1] for m in _USERINFO.finditer(url)]
    out += [m.group(3) for m in _QUERY.finditer(url) if is_secret_key(m.group(2)) and m.group(3)]
    return [v for v in out if v]


def safe_properties(props: Mapping[str, Any]) -> dict[str, str]:
    """The properties that may be stored (the allowlist :data:`SAFE_PROPERTIES`)."""
    return {k: str(v) for k, v in props.items() if k.lower() in SAFE_PROPERTIES}


class SecretSet:
    """Secret values given to a run (property values, URL passwords), scrubbed from any text
    before it is written to the ledger."""

    def __init__(self, values: Iterable[str] = ()):
        self.values: set[str] = set()
        for v in values:
            self.add(v)

    def add(self, value: Any) -> None:
        text = "" if value is None else str(value)
        if len(text) >= 3:  # a 1-2 character "secret" would mask half the message
            self.values.add(text)

    def add_url(self, url: str | None) -> None:
        for v in url_secrets(url or ""):
            self.add(v)

    def add_properties(self, props: Mapping[str, Any] | None) -> None:
        for k, v in (props or {}).items():
            if str(k).lower() == "url":
                self.add_url(str(v))
            elif is_secret_key(str(k)):
                self.add(v)

    def scrub(self, text: str) -> str:
        """``text`` with every known secret value and every password form masked."""
        for v in sorted(self.values, key=len, reverse=True):
            text = text.replace(v, MASK)
        return mask_url(text)
