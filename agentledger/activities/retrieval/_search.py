"""The two full-text queries: SQLite FTS5 (bm25) and PostgreSQL (ts_rank over a GIN index).

Both take the same filters: the tenant (or global documents), approved revisions only, and the
revision effective at ``now``. ``filters=None`` searches every row on the same index — for audit
and for measuring what the filters cost, never for a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, DateTime, RowMapping, bindparam, text

from agentledger.activities._terms import fts5_query, query_terms, tsquery, utc
from agentledger.activities.retrieval._model import GLOBAL_TENANT, PassageHit, RetrievalReason
from agentledger.activities.retrieval._tables import FTS_TABLE

_COLUMNS = (
    "p.source_id, p.document_id, p.revision, p.anchor, p.title, p.text, p.content_hash, p.tenant_id"
)
_FILTERS = (
    " AND p.tenant_id IN (:tenant, :global_tenant) AND p.approved"
    " AND p.effective_from <= :now AND (p.effective_until IS NULL OR p.effective_until > :now)"
)
# Title matches weigh more than body matches: a heading names what its clause is about.
_SQLITE = (
    f"SELECT {_COLUMNS}, -bm25({FTS_TABLE}, 4.0, 1.0) AS score "
    f"FROM {FTS_TABLE} JOIN retrieval_passages p ON p.passage_id = {FTS_TABLE}.rowid "
    f"WHERE {FTS_TABLE} MATCH :q{{filters}} "
    f"ORDER BY bm25({FTS_TABLE}, 4.0, 1.0), p.source_id, p.revision LIMIT :k"
)
_POSTGRES = (
    f"SELECT {_COLUMNS}, ts_rank(p.tsv, q) AS score "
    "FROM retrieval_passages p, to_tsquery('english', :q) q "
    "WHERE p.tsv @@ q{filters} ORDER BY score DESC, p.source_id, p.revision LIMIT :k"
)


@dataclass(frozen=True)
class Filters:
    tenant_id: str
    now: datetime


def search(conn: Connection, query: str, limit: int, filters: Filters | None) -> list[PassageHit]:
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    postgres = conn.dialect.name == "postgresql"
    template = _POSTGRES if postgres else _SQLITE
    params: dict[str, object] = {"q": tsquery(terms) if postgres else fts5_query(terms), "k": limit}
    statement = text(template.format(filters=_FILTERS if filters else ""))
    if filters is not None:
        params |= {"tenant": filters.tenant_id, "global_tenant": GLOBAL_TENANT}
        params["now"] = utc(filters.now)
        statement = statement.bindparams(bindparam("now", type_=DateTime(timezone=True)))
    rows = conn.execute(statement, params).mappings().all()
    return [_hit(row, rank) for rank, row in enumerate(rows, start=1)]


def _hit(row: RowMapping, rank: int) -> PassageHit:
    score = float(row["score"])
    reason = RetrievalReason(retriever="fulltext", rank=rank, score=score)
    return PassageHit(**{**row, "score": score, "retrieved_by": (reason,)})


def index(conn: Connection, passage_ids: list[int]) -> None:
    """SQLite: copy new rows into the external-content FTS5 index (PostgreSQL generates it)."""
    if conn.dialect.name == "postgresql" or not passage_ids:
        return
    conn.execute(
        text(
            f"INSERT INTO {FTS_TABLE}(rowid, title, text) "
            "SELECT passage_id, title, text FROM retrieval_passages WHERE passage_id IN :ids"
        ).bindparams(bindparam("ids", expanding=True)),
        {"ids": passage_ids},
    )
