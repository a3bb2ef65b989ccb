"""The memory review queue over HTTP: tenant-scoped, the domain's curator rules, typed
refusals, and deletion with its receipt."""

from __future__ import annotations

from datetime import UTC, datetime

from agentledger.activities.ledger import erasure
from agentledger.activities.memory import MemoryStore
from agentledger.domain.memory import MemoryProposal, MemoryScope
from tests._temporal import Harness
from tests.api.conftest import Http, Signer
from tests.api.test_authentication import problem_type


def held_preference(harness: Harness) -> str:
    """A preference a run (not the user) wrote: policy leaves it for a person to approve."""
    store = MemoryStore.of(harness.runtime.ledger)
    proposal = MemoryProposal(
        memory_id="pref_acme_usr_73_channel",
        category="user_preference",
        content={"channel": "email"},
        scope=MemoryScope(tenant_id="acme", user_id="usr_73"),
        writer="run",
        source="run:run_x",
        trust="user_claim",
    )
    admission = store.propose(proposal, harness.principal("usr_73"), datetime.now(UTC))
    assert admission.record is not None and admission.record.state == "evaluated"
    return proposal.memory_id


async def test_only_a_curator_of_the_tenant_publishes_a_held_memory(
    http: Http, harness: Harness, external_signer: Signer
) -> None:
    memory_id = held_preference(harness)
    curator = http("")
    token = external_signer.token("curator@acme", org="acme", groups=["memory_curator"])
    curator.headers["Authorization"] = f"Bearer {token}"

    queue = (await http("ops_lead_1").get("/api/memory/queue")).json()["memories"]
    assert [m["memory_id"] for m in queue] == [memory_id]
    assert (await http("ops_globex").get("/api/memory/queue")).json()["memories"] == []
    foreign = await http("ops_globex").post(f"/api/memory/{memory_id}/approve")
    assert foreign.status_code == 404

    not_curator = await http("ops_lead_1").post(f"/api/memory/{memory_id}/approve")
    assert not_curator.status_code == 403 and problem_type(not_curator) == "not-a-curator"
    published = await curator.post(f"/api/memory/{memory_id}/approve")
    assert published.json()["memory"]["state"] == "published"
    again = await curator.post(f"/api/memory/{memory_id}/approve")
    assert again.status_code == 409 and problem_type(again) == "wrong-state"
    assert (await curator.get("/api/memory/queue")).json()["memories"] == []


async def test_a_curator_corrects_rejects_and_deletes_with_a_receipt(
    http: Http, harness: Harness, external_signer: Signer
) -> None:
    memory_id = held_preference(harness)
    curator = http("")
    token = external_signer.token("curator@acme", org="acme", groups=["memory_curator"])
    curator.headers["Authorization"] = f"Bearer {token}"

    corrected = await curator.post(
        f"/api/memory/{memory_id}/correct", json={"content": {"channel": "phone"}}
    )
    assert corrected.status_code == 200, corrected.text
    new = corrected.json()["memory"]
    assert new["content"] == {"channel": "phone"} and new["supersedes"] == memory_id

    rejected = await curator.post(f"/api/memory/{new['memory_id']}/reject", json={"reason": "no"})
    assert new["state"] == "evaluated"  # a curator's write still waits for approval
    assert rejected.json()["memory"]["state"] == "revoked"
    twice = await curator.post(f"/api/memory/{new['memory_id']}/reject", json={"reason": "no"})
    assert twice.status_code == 409 and problem_type(twice) == "wrong-state"
    deleted = await curator.delete(f"/api/memory/{memory_id}")
    assert deleted.status_code == 200, deleted.text
    receipt = deleted.json()["receipt"]
    assert receipt["deleted_by"] == "curator@acme" and memory_id in receipt["purged_records"]
    assert (await curator.delete("/api/memory/nope")).status_code == 404


async def test_a_customers_memory_is_not_rewritten_once_their_erasure_began(
    http: Http, harness: Harness, external_signer: Signer
) -> None:
    """A correction is a new memory about them: refused (409, ``subject-erased``), not a 500;
    approving the one already stored still works until the erasure deletes it."""
    memory_id = held_preference(harness)
    curator = http("")
    token = external_signer.token("curator@acme", org="acme", groups=["memory_curator"])
    curator.headers["Authorization"] = f"Bearer {token}"
    erasure.begin(harness.runtime.ledger, "acme", "usr_73")

    corrected = await curator.post(
        f"/api/memory/{memory_id}/correct", json={"content": {"channel": "phone"}}
    )
    assert corrected.status_code == 409 and problem_type(corrected) == "subject-erased"
    published = await curator.post(f"/api/memory/{memory_id}/approve")
    assert published.status_code == 200 and published.json()["memory"]["state"] == "published"
