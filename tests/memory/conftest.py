"""A memory store on a fresh database per backend, principals, and proposal helpers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest
from pydantic import JsonValue
from sqlalchemy import text

from agentledger.activities.ledger import Ledger, Sealer
from agentledger.activities.ledger._engine import build_engine
from agentledger.activities.memory import MemoryStore, install
from agentledger.domain.memory import (
    CURATOR_ROLE,
    MemoryCategory,
    MemoryProposal,
    MemoryScope,
    WriterKind,
)
from agentledger.domain.principal import Principal
from bench.context_fixtures import CUSTOMER, NOW
from tests.contract._ring import RING

OTHER_CUSTOMER = CUSTOMER.model_copy(update={"user_id": "usr_88", "display_name": "Tomás"})
GLOBEX_USER = CUSTOMER.model_copy(update={"tenant_id": "globex", "user_id": "usr_73"})
CURATOR = Principal(user_id="curator_1", tenant_id="acme", roles=frozenset({CURATOR_ROLE}))


@pytest.fixture(params=["clear", "sealed"])
def store(database_url: str, request: pytest.FixtureRequest) -> Iterator[MemoryStore]:
    """Every memory test twice: over a ledger in clear, and over a sealed one, where what is
    about a customer is sealed under their key and indexed as keyed digests."""
    if request.param == "clear":
        engine = build_engine(database_url)
        install(engine)
        yield MemoryStore(engine)
        engine.dispose()
        return
    with Ledger.open(database_url) as ledger:
        ledger.seal_with(Sealer(RING))
        install(ledger.engine)
        yield MemoryStore.of(ledger)


def proposal(
    memory_id: str,
    content: dict[str, JsonValue],
    who: Principal = CUSTOMER,
    *,
    category: MemoryCategory = "user_preference",
    writer: WriterKind = "principal",
    trust: str = "user_claim",
    evidence: tuple[str, ...] = (),
    expires_at: datetime | None = None,
    user_scoped: bool = True,
) -> MemoryProposal:
    return MemoryProposal.model_validate(
        {
            "memory_id": memory_id,
            "category": category,
            "content": content,
            "scope": MemoryScope(
                tenant_id=who.tenant_id, user_id=who.user_id if user_scoped else None
            ),
            "writer": writer,
            "source": f"principal:{who.user_id}" if writer == "principal" else "run:r1#30",
            "trust": trust,
            "evidence": evidence,
            "expires_at": expires_at,
        }
    )


def remember(
    store: MemoryStore, memory_id: str, key: str, value: str, who: Principal = CUSTOMER
) -> None:
    admitted = store.propose(proposal(memory_id, {key: value}, who), who, NOW)
    assert admitted.published, admitted


def scalar(store: MemoryStore, sql: str, **params: object) -> object:
    with store.engine.connect() as conn:
        return conn.execute(text(sql), params).scalar()


def remember_convention(store: MemoryStore, text: str) -> None:
    """A tenant-wide memory (no user: no one's personal data), published by the curator."""
    convention = proposal(
        "mem_conv",
        {"convention": text},
        CURATOR,
        category="project_convention",
        writer="curator",
        evidence=("doc:returns-2026-08#refund-method",),
        user_scoped=False,
    )
    store.approve(store.propose(convention, CURATOR, NOW).record.memory_id, CURATOR, NOW)  # type: ignore[union-attr]
