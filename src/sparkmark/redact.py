"""Credentials never reach a message, the ledger or an output: the one place URLs are masked.

    >>> from sparkmark.redact import redact_url
    >>> redact_url("jdbc:postgresql://db/hr?user=etl&password=s3cret")
    'jdbc:postgresql://db/hr?user=etl&password=***'
    >>> redact_url("postgresql://etl:s3cret@db/state")
    'postgresql://etl:***@db/state'
"""
from __future__ import annotations

import re

_QUERY_SECRET = re.compile(r"(?i)((?:password|passwd|pwd)=)[^&;]*")
_USERINFO_SECRET = re.compile(r"(//[^/:@]+:)[^@/]*@")


def redact_url(url: str) -> str:
    """``url`` with every password form masked (``user:pw@`` and ``password=`` parameters)."""
    return _USERINFO_SECRET.sub(r"\1***@", _QUERY_SECRET.sub(r"\1***", url))


def url_has_secret(url: str) -> bool:
    """Whether ``url`` carries a password (then it is not stored anywhere)."""
    return redact_url(url) != url
