"""The two full-text queries: SQLite FTS5 (bm25) and PostgreSQL (ts_rank over a GIN index).

Both take the same filters: the tenant (or global documents), approved revisions only, and the
revision effective at ``now``. ``filters=None`` searches every row on the same index — for audit
and for measuring what the filters cost, never for a run.

Terms are OR-ed, so a passage that shares one incidental word with a question ("get", "account")
is still a hit, ranked by that word's rarity. Alone that is harmless (it is what a keyword search
finds); in a fusion it is not: ranked first, such a hit counts as much as the semantic retriever's
first, and pulls a passage neither retriever really supports above the right one. So a fusion
takes only the full-text hits that match most of the query's terms (``most_terms``), the way a
``minimum_should_match`` of "more than half" does: a query in the policy's own words keeps its
hit, a paraphrase's one-word coincidences are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, DateTime, RowMapping, bindparam, text

from agentledger.activities._terms import fts5_query, query_terms, tsquery, utc
from agentledger.activities.retrieval._model import GLOBAL_TENANT, PassageHit, RetrievalReason
from agentledger.activities.retrieval._tables import FTS_TABLE

_COLUMNS = (
    "p.passage_id, p.source_id, p.document_id, p.revision, p.anchor, p.title, p.text, "
    "p.content_hash, p.tenant_id"
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


def search(
    conn: Connection,
    query: str,
    limit: int,
    filters: Filters | None,
    *,
    most_terms: bool = False,
) -> list[PassageHit]:
    """The ``limit`` best hits, best first; with ``most_terms``, only those among them that match
    more than half of the query's terms (each keeps its rank among all the hits)."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    rows = _ranked(conn, terms, limit, filters)
    if most_terms and rows:
        matched = _matched_terms(conn, terms, [row["passage_id"] for row in rows])
        searchable = _searchable_terms(conn, terms)
        admitted = {i for i, n in matched.items() if 2 * n > searchable}
        ranked = [(rank, row) for rank, row in enumerate(rows, 1) if row["passage_id"] in admitted]
        return [_hit(row, rank) for rank, row in ranked]
    return [_hit(row, rank) for rank, row in enumerate(rows, start=1)]


def _ranked(
    conn: Connection, terms: list[str], limit: int, filters: Filters | None
) -> Sequence[RowMapping]:
    postgres = conn.dialect.name == "postgresql"
    template = _POSTGRES if postgres else _SQLITE
    params: dict[str, object] = {"q": tsquery(terms) if postgres else fts5_query(terms), "k": limit}
    statement = text(template.format(filters=_FILTERS if filters else ""))
    if filters is not None:
        params |= {"tenant": filters.tenant_id, "global_tenant": GLOBAL_TENANT}
        params["now"] = utc(filters.now)
        statement = statement.bindparams(bindparam("now", type_=DateTime(timezone=True)))
    return conn.execute(statement, params).mappings().all()


def _matched_terms(conn: Connection, terms: list[str], passage_ids: list[int]) -> dict[int, int]:
    """How many of ``terms`` each of ``passage_ids`` matches, on the same index and stemming as
    the search (one lookup per term, bounded to the given rows)."""
    if conn.dialect.name == "postgresql":
        one = (
            "SELECT p.passage_id AS id FROM retrieval_passages p "
            "WHERE p.tsv @@ to_tsquery('english', :t{n}) AND p.passage_id IN :ids"
        )
    else:
        fts = FTS_TABLE
        one = f"SELECT rowid AS id FROM {fts} WHERE {fts} MATCH :t{{n}} AND rowid IN :ids"
    union = " UNION ALL ".join(one.format(n=n) for n in range(len(terms)))
    statement = text(f"SELECT id, count(*) AS n FROM ({union}) m GROUP BY id").bindparams(
        bindparam("ids", expanding=True)
    )
    quoted = terms if conn.dialect.name == "postgresql" else [fts5_query([t]) for t in terms]
    params: dict[str, object] = {f"t{n}": term for n, term in enumerate(quoted)}
    return {int(i): int(n) for i, n in conn.execute(statement, params | {"ids": passage_ids})}


def _searchable_terms(conn: Connection, terms: list[str]) -> int:
    """The terms the index can match at all: PostgreSQL's English configuration drops its stop
    words (a query term no passage can contain must not count against every passage)."""
    if conn.dialect.name != "postgresql":
        return len(terms)
    columns = ", ".join(f"numnode(to_tsquery('english', :t{n})) > 0" for n in range(len(terms)))
    row = conn.execute(text(f"SELECT {columns}"), {f"t{n}": t for n, t in enumerate(terms)}).one()
    return sum(bool(kept) for kept in row)


def _hit(row: RowMapping, rank: int) -> PassageHit:
    score = float(row["score"])
    reason = RetrievalReason(retriever="fulltext", rank=rank, score=score)
    fields = {k: v for k, v in row.items() if k != "passage_id"}
    return PassageHit(**{**fields, "score": score, "retrieved_by": (reason,)})


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
