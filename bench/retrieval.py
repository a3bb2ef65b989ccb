"""Retrieval benchmark: filters vs no filters on the same index, and deletion propagation.

    python -m bench.retrieval

On SQLite (FTS5) and PostgreSQL (tsvector + GIN), each with 10,000 policy passages (500
documents x 20 passages, 10 tenants, every other document with a superseded revision) and
10,000 memories (10 tenants x 100 users x 10):

(a) median latency of the full-text query with the production filters (tenant or global,
    approved, effective now; for memories: tenant, the user's own or tenant-wide scope,
    published) vs the same query with no filter on the same index; target ratio <= 1.5.
    Queries alternate between the two sides. The end-to-end ``MemoryStore.retrieve`` (domain
    read rules, citations, ContextItems) and ``SqlRetriever.search`` are shown for information.
(b) deletion propagation: from the start of ``MemoryStore.delete`` until a retrieval for the
    owner (cache warmed beforehand) no longer returns the memory; median of 25.

The JSON line's ratios are the worse of passages and memories per backend;
``deletion_propagation_ms`` is the worse backend's median.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, insert, text

from agentledger.activities.ledger._engine import build_engine
from agentledger.activities.memory import MemoryStore
from agentledger.activities.memory import _persist as memdb
from agentledger.activities.memory import _retrieve as memread
from agentledger.activities.memory import install as install_memory
from agentledger.activities.memory._sealing import IN_CLEAR
from agentledger.activities.memory._tables import FTS_TABLE, records
from agentledger.activities.retrieval import SqlRetriever, install, parse_markdown, query_terms
from agentledger.activities.retrieval import _search as passage_search
from agentledger.domain.memory import MemoryProposal, MemoryScope, admit
from agentledger.domain.principal import Principal
from bench.ledger import postgres_url, sqlite_url

NOW = datetime(2026, 8, 24, 14, tzinfo=UTC)
TENANTS, DOCS, PASSAGES_PER_DOC = 10, 500, 20
USERS_PER_TENANT, MEMORIES_PER_USER = 100, 10
QUERIES, ROUNDS, DELETIONS = 40, 5, 25
rng = random.Random(7)
_VOCAB = (
    "refund late delivery parcel damaged return warranty invoice shipping courier express "
    "replacement credit voucher exchange defective order customer address billing payment "
    "tracking lost window days review approval policy store currency method photo item"
)
VOCAB = _VOCAB.split()
FILLER = [f"w{i}" for i in range(3000)]


def words(n: int) -> str:
    return " ".join(
        rng.choice(VOCAB) if rng.random() < 0.3 else rng.choice(FILLER) for _ in range(n)
    )


def load_passages(engine: Engine) -> None:
    retriever = SqlRetriever(engine)
    for d in range(DOCS):
        tenant = "*" if d % 10 == 0 else f"t{d % TENANTS}"
        revisions = ("v1", "v2") if d % 2 else ("v1",)
        per = PASSAGES_PER_DOC // len(revisions)
        for n, revision in enumerate(revisions):
            body = "".join(f"## {words(3)} {{#s{i}}}\n{words(40)}\n" for i in range(per))
            retriever.add_document(
                parse_markdown(f"# Doc {d}\n{body}"),
                tenant_id=tenant,
                document_id=f"doc-{d}",
                revision=revision,
                effective_from=NOW - timedelta(days=30 - n * 10),
                now=NOW,
            )
            retriever.approve(tenant, f"doc-{d}", revision, approved_by="bench")


def principal(t: int, u: int) -> Principal:
    return Principal(user_id=f"u{u}", tenant_id=f"t{t}")


def load_memories(engine: Engine) -> None:
    """Records admitted by the real lifecycle, written in bulk (events skipped: not read here)."""
    rows = []
    for t in range(TENANTS):
        for u in range(USERS_PER_TENANT):
            who = principal(t, u)
            for m in range(MEMORIES_PER_USER):
                proposal = MemoryProposal(
                    memory_id=f"m_{t}_{u}_{m}",
                    category="user_preference",
                    content={f"pref_{m}": words(8)},
                    scope=MemoryScope(tenant_id=who.tenant_id, user_id=who.user_id),
                    writer="principal",
                    source=f"principal:{who.user_id}",
                    trust="user_claim",
                )
                record = admit(proposal, who, [], NOW).record
                assert record is not None and record.state == "published"
                rows.append(_row(record))
    with engine.begin() as conn:
        conn.execute(insert(records), rows)
        if conn.dialect.name == "sqlite":
            conn.execute(
                text(
                    f"INSERT INTO {FTS_TABLE}(rowid, content_text) "
                    "SELECT row_id, content_text FROM memory_records"
                )
            )


def _row(record: Any) -> dict[str, Any]:
    return {
        "memory_id": record.memory_id,
        "tenant_id": record.scope.tenant_id,
        "user_id": record.scope.user_id,
        "category": record.category,
        "state": record.state,
        "claim_key": record.claim_key,
        "expires_at": record.expires_at,
        "content_text": memdb.content_text(record),
        "record": record.model_dump(mode="json"),
    }


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


def side_by_side(
    filtered: Callable[[str], object], unfiltered: Callable[[str], object]
) -> tuple[float, float]:
    queries = [" ".join(rng.sample(VOCAB, 3)) for _ in range(QUERIES)]
    for q in queries[:5]:  # warm caches and plans
        filtered(q), unfiltered(q)
    a: list[float] = []
    b: list[float] = []
    for _ in range(ROUNDS):
        for q in queries:
            for fn, out in ((filtered, a), (unfiltered, b)):
                start = time.perf_counter()
                fn(q)
                out.append(time.perf_counter() - start)
    return median_ms(a), median_ms(b)


def measure(url: str) -> dict[str, float]:
    engine = build_engine(url, sqlite_synchronous="NORMAL")
    install(engine)
    install_memory(engine)
    started = time.perf_counter()
    load_passages(engine)
    load_memories(engine)
    print(f"  loaded 10,000 passages and 10,000 memories in {time.perf_counter() - started:.1f} s")
    store = MemoryStore(engine)
    with engine.connect() as conn:
        who = principal(3, 42)
        p = side_by_side(
            lambda q: passage_search.search(conn, q, 3, passage_search.Filters("t3", NOW)),
            lambda q: passage_search.search(conn, q, 3, None),
        )
        m = side_by_side(
            lambda q: memread.search_index(conn, who, query_terms(q), 10, IN_CLEAR),
            lambda q: memread.search_index(conn, None, query_terms(q), 10, IN_CLEAR),
        )
    retriever = SqlRetriever(engine)
    e2e = side_by_side(
        lambda q: retriever.search(q, tenant_id="t3", now=NOW),
        lambda q: store.retrieve(who, NOW, query=q, limit=10, use_cache=False),
    )
    deletion = median_ms([propagate(store, t) for t in range(DELETIONS)])
    engine.dispose()
    result = {
        "passages_filtered_ms": p[0],
        "passages_unfiltered_ms": p[1],
        "passages_ratio": round(p[0] / p[1], 3),
        "memories_filtered_ms": m[0],
        "memories_unfiltered_ms": m[1],
        "memories_ratio": round(m[0] / m[1], 3),
        "search_e2e_ms": e2e[0],
        "memory_retrieve_e2e_ms": e2e[1],
        "deletion_propagation_ms": deletion,
    }
    for key, value in result.items():
        print(f"  {key:28} {value}")
    return result


def propagate(store: MemoryStore, i: int) -> float:
    who = principal(i % TENANTS, i)
    memory_id = f"m_{who.tenant_id[1:]}_{i}_0"
    assert memory_id in {h.item.id for h in store.retrieve(who, NOW).hits}  # cache warm
    start = time.perf_counter()
    store.delete(memory_id, who, NOW)
    gone = memory_id not in {h.item.id for h in store.retrieve(who, NOW).hits}
    elapsed = time.perf_counter() - start
    assert gone, memory_id
    return elapsed


def main() -> None:
    results = {}
    for name, url_of in (("sqlite", sqlite_url), ("postgres", postgres_url)):
        print(f"{name}:")
        with url_of() as url:
            results[name] = measure(url)
    summary = {
        f"{name}_filtered_vs_unfiltered_ratio": max(r["passages_ratio"], r["memories_ratio"])
        for name, r in results.items()
    }
    summary["deletion_propagation_ms"] = max(r["deletion_propagation_ms"] for r in results.values())
    summary |= {f"{n}_{k}": v for n, r in results.items() for k, v in r.items()}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
