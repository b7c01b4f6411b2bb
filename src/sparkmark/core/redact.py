"""Credentials never reach a message, the ledger or an output: the one place URLs are masked.

    >>> from sparkmark.core.redact import redact_url
    >>> redact_url("jdbc:postgresql://db/hr?user=etl&password=s3cret")
    'jdbc:postgresql://db/hr?user=etl&password=***'
    >>> redact_url("postgresql://etl:s3cret@db/state")
    'postgresql://etl:***@db/state'
"""
from __future__ import annotations


def redact_url(url: str) -> str:
    """``url`` with every password form masked (``user:pw@`` and any secret-like parameter:
    ``password=``, ``pwd=``, ``passwd=``, ``sslpassword=``, ``token=``...; see
    :mod:`sparkmark.core.secrets`)."""
    from sparkmark.core.secrets import mask_url
    return mask_url(url)


def url_has_secret(url: str) -> bool:
    """Whether ``url`` carries a password (then it is not stored anywhere)."""
    from sparkmark.core.secrets import url_secrets
    return bool(url_secrets(url))
