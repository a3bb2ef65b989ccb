"""A run starts only as its requester signed it and with the grants the worker planned.

Anyone who reaches the Temporal frontend can start a workflow. These starts go past every
client check, through the raw SDK and the bare `temporal` binary, as such a starter would: an
unsigned start, one signed for another work order, run, user or purpose, one signed with a key
the run does not trust, and a work order carrying wider grants than its request plans are each
refused, recorded (``run_started`` then ``run_failed`` with the reason), and nothing is refunded.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from agentledger.app.devserver import temporal_binary
from agentledger.app.registry import get_pack
from agentledger.domain.assertions import start_audience
from agentledger.domain.events import RunFailed, RunStarted
from agentledger.domain.workorder import ArgumentBound, Budget, WorkGrant, WorkOrder
from agentledger.domain.workorder import work_order_digest as digest_of
from agentledger.workflows import RunInput
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST, refund_rows

pytestmark = [
    pytest.mark.temporal,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),  # identity, not storage
]


def _order(harness: Harness) -> WorkOrder:
    return get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))


def _claims(run_id: str, order: WorkOrder, **changed: Any) -> dict[str, Any]:
    now = int(time.time())
    return {
        "iss": "agentledger-local",
        "sub": order.principal.user_id,
        "aud": start_audience(run_id),
        "iat": now,
        "nbf": now,
        "exp": now + 120,
        "jti": uuid.uuid4().hex,
        "digest": digest_of(order),
        "decision": "start",
        **changed,
    }


async def _start_raw(harness: Harness, order: WorkOrder, assertion: str, run_id: str) -> None:
    params = RunInput(run_id=run_id, work_order=order, requester_assertion=assertion)
    await harness.client.start_workflow(
        "AgentRun", params, id=run_id, task_queue=harness.settings.task_queue
    )


async def _refusal(harness: Harness, run_id: str) -> str:
    """The recorded refusal of a start: the run's only events are its start and its failure."""
    events = await harness.finish(run_id)
    assert [e.kind for e in events] == ["run_started", "run_failed"], events
    failed = events[-1]
    assert isinstance(failed, RunFailed)
    return f"{failed.reason_code}: {failed.message}"


Forgery = Callable[[Harness, str, WorkOrder], str]
_MALLORY = Ed25519PrivateKey.generate()


def _own(harness: Harness, claims: dict[str, Any]) -> str:
    key = harness.issuer
    return jwt.encode(claims, key.key, algorithm="EdDSA", headers={"kid": key.kid})


FORGERIES: dict[str, Forgery] = {
    "assertion_missing": lambda h, run_id, order: "",
    "assertion_untrusted_key": lambda h, run_id, order: jwt.encode(
        _claims(run_id, order), _MALLORY, algorithm="EdDSA", headers={"kid": "mallory"}
    ),
    "assertion_bad_signature": lambda h, run_id, order: jwt.encode(
        _claims(run_id, order), _MALLORY, algorithm="EdDSA", headers={"kid": h.issuer.kid}
    ),
    "assertion_wrong_audience": lambda h, run_id, order: h.issuer.start_assertion(
        order, run_id="run_another"
    ),
    "assertion_wrong_digest": lambda h, run_id, order: h.issuer.start_assertion(
        order.model_copy(update={"request_text": "Where is my order ord_4822?"}), run_id=run_id
    ),
    "assertion_wrong_decision": lambda h, run_id, order: _own(
        h, _claims(run_id, order, decision="approve")
    ),
    "assertion_expired": lambda h, run_id, order: _own(
        h, _claims(run_id, order, iat=int(time.time()) - 300, exp=int(time.time()) - 60)
    ),
    "assertion_subject_mismatch": lambda h, run_id, order: _own(
        h, _claims(run_id, order, sub="usr_99")
    ),
}


@pytest.mark.parametrize("reason", sorted(FORGERIES))
async def test_a_start_its_requester_did_not_sign_is_refused_and_recorded(
    harness: Harness, reason: str
) -> None:
    run_id, order = f"run_{uuid.uuid4().hex[:12]}", _order(harness)
    await _start_raw(harness, order, FORGERIES[reason](harness, run_id, order), run_id)
    assert (await _refusal(harness, run_id)).startswith(f"{reason}: ")
    assert refund_rows(harness) == 0


async def test_a_start_with_a_larger_budget_than_was_signed_is_refused(harness: Harness) -> None:
    run_id, order = f"run_{uuid.uuid4().hex[:12]}", _order(harness)
    signed = harness.issuer.start_assertion(order, run_id=run_id)
    greedy = order.model_copy(update={"budget": Budget(steps=3)})  # any change moves the digest
    await _start_raw(harness, greedy, signed, run_id)
    assert (await _refusal(harness, run_id)).startswith("assertion_wrong_digest: ")


async def _start_with_binary(harness: Harness, params: RunInput) -> None:
    raw = params.model_dump(mode="json")
    proc = await asyncio.create_subprocess_exec(
        temporal_binary(), "workflow", "start",
        "--address", harness.settings.temporal_address or "",
        "--type", "AgentRun", "--task-queue", harness.settings.task_queue,
        "--workflow-id", params.run_id, "--input", json.dumps(raw),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, out  # Temporal starts anything; the run refuses it


async def test_an_unsigned_start_by_the_bare_temporal_binary_is_refused(harness: Harness) -> None:
    run_id, order = f"run_{uuid.uuid4().hex[:12]}", _order(harness)
    await _start_with_binary(harness, RunInput(run_id=run_id, work_order=order))
    assert (await _refusal(harness, run_id)).startswith("assertion_missing: ")
    assert refund_rows(harness) == 0


async def test_wider_grants_sent_by_the_bare_temporal_binary_are_refused(harness: Harness) -> None:
    run_id, order = f"run_{uuid.uuid4().hex[:12]}", _wider(_order(harness))
    signed = harness.issuer.start_assertion(order, run_id=run_id)
    await _start_with_binary(
        harness, RunInput(run_id=run_id, work_order=order, requester_assertion=signed)
    )
    refusal = await _refusal(harness, run_id)
    assert refusal.startswith("preparation_failed: ") and "grants refused" in refusal, refusal
    assert refund_rows(harness) == 0


def _wider(order: WorkOrder) -> WorkOrder:
    """The order's own plan, with the refund tool's order bound dropped: any order at all."""
    assert order.grants is not None
    unbound = tuple(
        WorkGrant(tool=g.tool) if g.tool == "create_refund" else g for g in order.grants
    )
    return order.model_copy(update={"grants": unbound})


def _another_order(order: WorkOrder) -> WorkOrder:
    assert order.grants is not None
    bound = ArgumentBound(argument="order_id", allowed=("ord_4821", "ord_4900"))
    widened = tuple(
        WorkGrant(tool=g.tool, bounds=(bound,)) if g.tool == "create_refund" else g
        for g in order.grants
    )
    return order.model_copy(update={"grants": widened})


@pytest.mark.parametrize("widen", [_wider, _another_order], ids=["unbound", "another-order"])
async def test_a_signed_work_order_with_wider_grants_than_its_plan_is_refused(
    harness: Harness, widen: Callable[[WorkOrder], WorkOrder]
) -> None:
    """Even signed: the grants are the worker's to plan from the request; a key holder (a
    service, a script with the issuer key) may narrow them, never widen them."""
    run_id, order = f"run_{uuid.uuid4().hex[:12]}", widen(_order(harness))
    await _start_raw(harness, order, harness.issuer.start_assertion(order, run_id=run_id), run_id)
    refusal = await _refusal(harness, run_id)
    assert refusal.startswith("preparation_failed: ") and "grants refused" in refusal, refusal
    assert refund_rows(harness) == 0


async def test_a_work_order_sent_without_grants_runs_with_the_planned_ones(
    harness: Harness,
) -> None:
    """Omitting grants used to leave a run with every tool of its profile, on any resource."""
    run_id, planned = f"run_{uuid.uuid4().hex[:12]}", _order(harness)
    bare = planned.model_copy(update={"grants": None})
    await _start_raw(harness, bare, harness.issuer.start_assertion(bare, run_id=run_id), run_id)
    await harness.until_approval_or_end(run_id)
    (started,) = [e for e in harness.runtime.ledger.read(run_id) if isinstance(e, RunStarted)]
    assert started.work_order.grants == planned.grants


async def test_a_narrower_signed_work_order_keeps_its_own_grants(harness: Harness) -> None:
    run_id, order = f"run_{uuid.uuid4().hex[:12]}", _order(harness)
    assert order.grants is not None
    narrow = order.model_copy(
        update={"grants": tuple(g for g in order.grants if g.tool != "create_refund")}
    )
    await _start_raw(harness, narrow, harness.issuer.start_assertion(narrow, run_id=run_id), run_id)
    events = await harness.finish(run_id)
    (started,) = [e for e in events if isinstance(e, RunStarted)]
    assert started.work_order.grants == narrow.grants
    assert refund_rows(harness) == 0  # the refund it no longer grants is denied, not made
