"""A superseded policy revision is never cited: not returned, and not packed if still held."""

from __future__ import annotations

from agentledger.activities.retrieval import SqlRetriever
from agentledger.domain.context import cited_ids_present
from agentledger.domain.state import EvidenceRef
from agentledger.packs.support.steps import DRAFT_ANSWER
from bench.context_fixtures import build, candidates, state_after
from tests.retrieval.conftest import LATE, NOW, RETURNS, add_revision


def as_evidence(retriever: SqlRetriever) -> EvidenceRef:
    top = retriever.search(LATE, tenant_id="acme", now=NOW)[0].evidence()
    return EvidenceRef(**top.model_dump(exclude={"score"}), operation_id=None)


def test_a_run_holding_the_old_revision_cites_only_the_new_one(retriever: SqlRetriever) -> None:
    old = as_evidence(retriever)
    add_revision(retriever, "v2", RETURNS.replace("within 30 days", "within 60 days"))
    retriever.approve("*", "returns-2026-08", "v2", approved_by="ops_lead_1")
    new = as_evidence(retriever)
    state = state_after().model_copy(update={"evidence": (old, new)})

    packet = build(DRAFT_ANSWER, state, candidates(state))

    (passage,) = [p for p in packet.items_of_kind("policy_passage") if p.id == new.source_id]
    assert (old.revision, new.revision, passage.revision) == ("v1", "v2", "v2")
    assert "60 days" in str(passage.content)
    assert any(o.reason == "superseded" for o in packet.omissions)
    assert cited_ids_present(packet, [new.source_id]) == ()
