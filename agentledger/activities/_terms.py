"""Query text to search terms, the same way on both backends (policy retrieval and memory).

Terms are OR-ed and ranked (bm25 / ts_rank), not AND-ed: a question rarely repeats every word of
the clause that answers it. Only ``[a-z0-9]`` runs survive, so nothing a user types can reach the
FTS5 or tsquery syntax.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import overload

WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = (
    "the and for are but not you your with this that from have has was were can could would "
    "should will what when where which who how why does did any all our its"
)
STOPWORDS = frozenset(_STOPWORDS.split())
MAX_TERMS = 16


def query_terms(query: str) -> list[str]:
    terms: list[str] = []
    for word in WORD.findall(query.lower()):
        if len(word) > 2 and word not in STOPWORDS and word not in terms:
            terms.append(word)
    return terms[:MAX_TERMS]


def fts5_query(terms: list[str]) -> str:
    return " OR ".join(f'"{t}"' for t in terms)


def tsquery(terms: list[str]) -> str:
    return " | ".join(terms)


def utc(value: datetime) -> datetime:
    """Stored and compared in UTC: SQLite keeps datetimes as text, without an offset."""
    if value.tzinfo is None:
        raise ValueError("datetimes must be timezone-aware")
    return value.astimezone(UTC)


@overload
def aware(value: datetime) -> datetime: ...
@overload
def aware(value: None) -> None: ...
def aware(value: datetime | None) -> datetime | None:
    """Read back: SQLite returns naive UTC datetimes."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)
