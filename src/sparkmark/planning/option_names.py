"""Near-misses of sparkmark's own source options: a typo must not reach Spark silently.

A file source's ``options`` mixes sparkmark's options (``maxBand``, ``lateFiles``,
``incrementalListing``, ...) with reader options handed to Spark, and Spark's readers ignore a
name they do not know.  So ``incrementalListings=true`` or ``lateFile=read`` would quietly do
nothing: every run lists everything, late files stay unread.  :func:`refuse_near_miss` refuses a
name that is not sparkmark's but close to one of its names (by :mod:`difflib`), unless Spark's
built-in readers know it (``header``, ``multiLine``, ``modifiedAfter``, ...: never refused).
A name close to none of sparkmark's passes on to Spark, which may know it (a data source's own
options).  Pure: no Spark.

    refuse_near_miss("incrementalListings", ("incrementalListing", "lateFiles"))  # ConfigError
"""
from __future__ import annotations

import difflib
from typing import Iterable

from sparkmark.core.errors import ConfigError

#: similarity (difflib ratio, case-insensitive) from which a name counts as a misspelling
CUTOFF = 0.75

#: the options Spark's built-in file readers know (generic file source options, json, csv,
#: parquet, orc, avro, xml, text), lower case: never taken for a misspelling of sparkmark's
SPARK_READER_OPTIONS = frozenset(name.lower() for name in (
    # every file source
    "ignoreCorruptFiles", "ignoreMissingFiles", "pathGlobFilter", "recursiveFileLookup",
    "modifiedBefore", "modifiedAfter", "basePath", "mergeSchema", "compression", "encoding",
    "charset", "lineSep", "mode", "columnNameOfCorruptRecord", "dateFormat", "timestampFormat",
    "timestampNTZFormat", "enableDateTimeParsingFallback", "locale", "timeZone", "multiLine",
    "samplingRatio", "inferSchema", "schema", "singleVariantColumn",
    # json
    "primitivesAsString", "prefersDecimal", "allowComments", "allowUnquotedFieldNames",
    "allowSingleQuotes", "allowNumericLeadingZeros", "allowBackslashEscapingAnyCharacter",
    "allowUnquotedControlChars", "allowNonNumericNumbers", "dropFieldIfAllNull",
    "inferTimestamp", "ignoreNullFields", "useUnsafeRow",
    # csv
    "sep", "delimiter", "quote", "quoteAll", "escape", "escapeQuotes", "comment", "header",
    "preferDate", "enforceSchema", "ignoreLeadingWhiteSpace", "ignoreTrailingWhiteSpace",
    "nullValue", "nanValue", "positiveInf", "negativeInf", "maxColumns", "maxCharsPerColumn",
    "charToEscapeQuoteEscaping", "emptyValue", "unescapedQuoteHandling", "unicodeEscapes",
    # parquet, orc
    "datetimeRebaseMode", "int96RebaseMode", "binaryAsString",
    # avro
    "avroSchema", "avroSchemaUrl", "ignoreExtension", "positionalFieldMatching",
    "enableStableIdentifiersForUnionType", "stableIdentifierPrefixForUnionType",
    "recursiveFieldMaxDepth",
    # xml
    "rowTag", "excludeAttribute", "attributePrefix", "valueTag", "ignoreSurroundingSpaces",
    "rowValidationXSDPath", "ignoreNamespace", "rootTag", "declaration", "arrayElementName",
    "wildcardColName", "validateName",
    # text
    "wholetext",
))


def closest(key: str, names: Iterable[str]) -> tuple[str, float] | None:
    """The name in ``names`` most like ``key`` (case-insensitive) and its similarity, or None.

    >>> closest("lateFile", ["lateFiles", "maxBand"])[0]
    'lateFiles'
    """
    low = key.lower()
    best: tuple[str, float] | None = None
    for name in names:
        ratio = difflib.SequenceMatcher(None, low, name.lower()).ratio()
        if best is None or ratio > best[1]:
            best = (name, ratio)
    return best


def refuse_near_miss(key: str, own: Iterable[str]) -> None:
    """Raise :class:`ConfigError` if ``key`` is not one of ``own`` (sparkmark's option names)
    but close to one, and Spark's readers do not know it; otherwise return (the option goes
    to Spark).

    >>> refuse_near_miss("header", ["recurse"])
    >>> refuse_near_miss("lateFile", ["lateFiles"])
    Traceback (most recent call last):
    ...
    sparkmark.core.errors.ConfigError: unknown option 'lateFile'; did you mean 'lateFiles'? \
(an option Spark's readers do not know is ignored by them, so this one would do nothing)
    """
    low = key.lower()
    names = list(own)
    if low in SPARK_READER_OPTIONS or low in (n.lower() for n in names):
        return
    best = closest(key, names)
    if best is None or best[1] < CUTOFF:
        return
    spark_best = closest(key, SPARK_READER_OPTIONS)
    if spark_best is not None and spark_best[1] > best[1]:
        return  # nearer to one of Spark's options: Spark's business
    shown = key if len(key) <= 80 else key[:80] + "..."
    raise ConfigError(f"unknown option {shown!r}; did you mean {best[0]!r}? (an option "
                      "Spark's readers do not know is ignored by them, so this one would do "
                      "nothing)")
