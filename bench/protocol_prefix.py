"""What the pure protocol runs start from: the manifest every run froze (the support profile,
an approval living two minutes, one pinned issuer), the directory, and the start of a refund run
as the workflow records it (the order read and verified, the model drafting its answer);
``bench.protocol_world`` takes it from there."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import JsonValue

from agentledger.app.identity import Issuer
from agentledger.app.registry import get_pack
from agentledger.domain import events as ev
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.decisions import CallTool, ProceedToAnswer, ToolCallProposal
from agentledger.domain.manifest import resolve_manifest
from agentledger.domain.principal import Principal
from agentledger.domain.tools import Receipt, ResourceRef, VerifiedFact
from agentledger.domain.workorder import WorkOrder
from agentledger.packs.support.profile import SUPPORT_PROFILE

POLICY_VERSION = "returns-2026-08"
T0 = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)
TTL_SECONDS = 120
"""An approval's lifetime here: a few clock steps reach it."""
ASSERTION_SECONDS = 300
ORDERS = ("ord_1", "ord_2")
REFUNDABLE = 40.0

ISSUER = Issuer(Ed25519PrivateKey.generate(), "agentledger-local")
"""The issuer every run pins."""
FORGER = Issuer(Ed25519PrivateKey.generate(), "agentledger-local")
"""Same name, a key no run pinned."""
CONTRACTS = get_pack("support").contracts
MANIFEST = resolve_manifest(
    SUPPORT_PROFILE.model_copy(update={"approval_ttl_seconds": TTL_SECONDS}),
    attempt_id="att-deep",
    work_order_digest=sha256_hex("protocol-deep"),
    memory_snapshot="memory:empty",
    policy_version=POLICY_VERSION,
    contracts=CONTRACTS,
    trusted_keys=(ISSUER.trusted_key(),),
)
_SCOPES = frozenset({"orders:read", "policies:read", "refunds:request", "messages:send"})
REQUESTER = Principal(user_id="usr_73", tenant_id="acme", scopes=_SCOPES)
APPROVERS = ("ops_lead_1", "ops_lead_2")
DIRECTORY = {
    **{a: Principal(user_id=a, tenant_id="acme", roles=frozenset({"approver"})) for a in APPROVERS},
    "usr_73": REQUESTER,
    "agent_2": Principal(user_id="agent_2", tenant_id="acme"),  # no approver role
    "ops_globex": Principal(
        user_id="ops_globex", tenant_id="globex", roles=frozenset({"approver"})
    ),
}
"""Who the directory knows; ``mallory`` is not in it."""


def read_the_order(
    run_id: str, order_id: str, who: Principal, at: datetime, manifest_hash: str
) -> list[ev.RunEvent]:
    """Started, ``get_order`` called and answered with the order's verified facts (40 EUR
    refundable, ``who``'s own), then on to ``draft_answer``."""
    order = WorkOrder(
        objective="resolve a refund request",
        request_text=f"Can I get a refund for order {order_id}? It arrived late.",
        principal=who,
        pack="support",
        agent_profile_id="support-refunds",
        references={"order_id": order_id},
    )
    values: dict[str, JsonValue] = {
        "order_status": "delivered_late", "amount": 40.0, "refundable_amount": 40.0,
        "currency": "EUR",
    }  # fmt: skip
    receipt = Receipt(
        operation_id="op_read",
        tool="get_order",
        tool_version="1.0.0",
        status="succeeded",
        receipt_id="rcpt-read",
        facts=tuple(
            VerifiedFact(name=k, value=v, resource_id=order_id, observed_at=at)
            for k, v in values.items()
        ),
        resources=(
            ResourceRef(
                resource_id=order_id,
                kind="order",
                owner_user_id=who.user_id,
                tenant_id=who.tenant_id,
            ),
        ),
        observed_at=at,
    )
    read: dict[str, JsonValue] = {"order_id": order_id}
    shapes: list[tuple[type[ev.Envelope], dict[str, Any]]] = [
        (ev.RunStarted, {"work_order": order, "policy_version": POLICY_VERSION}),
        (ev.StepStarted, {"step": "choose_next_action"}),
        (ev.DecisionRecorded, {
            "step": "choose_next_action", "model_profile": "small",
            "decision": CallTool(proposal=ToolCallProposal(tool="get_order", arguments=read),
                                 rationale="need the facts"),
        }),
        (ev.ToolCallAuthorised, {
            "operation_id": "op_read", "tool": "get_order", "tool_version": "1.0.0",
            "arguments": read, "arguments_digest": sha256_hex(read), "idempotency_key": None,
        }),
        (ev.ToolReceiptRecorded, {"receipt": receipt}),
        (ev.DecisionRecorded, {
            "step": "choose_next_action", "model_profile": "small",
            "decision": ProceedToAnswer(rationale="enough is known"),
        }),
        (ev.StepStarted, {"step": "draft_answer"}),
    ]  # fmt: skip
    return [
        cls(run_id=run_id, seq=n, recorded_at=at, manifest_hash=manifest_hash, **fields)  # type: ignore[misc]
        for n, (cls, fields) in enumerate(shapes, start=1)
    ]
