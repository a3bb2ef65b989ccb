"""Approving a different call than proposed: an approver's edits to a pending call's arguments.

An edit is bound like any decision: the approver signs ``edit_digest``, the digest of the pending
proposal's digest and the exact overrides, so one signature covers what was shown *and* what
replaced it. The edited call must fit the tool's schema, must be one the approver may approve
(the role its amount asks for), and may only ask for less than the proposal did (``widening``)
unless the contract's rule names a ``widen_role`` the approver holds. The workflow then puts it
through the gate like any proposal (scope, resource, verified facts, budget); the grant is bound
to the edited call's digest (``ApprovalEdit.approved_digest``), so that call and no other is
dispatched, under an idempotency key derived from its own arguments.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue, ValidationError

from agentledger.domain.approvals import ApprovalRefusal
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.decisions import ApprovalEdit, ArgumentChange, ToolCallProposal
from agentledger.domain.governance import proposal_digest
from agentledger.domain.limits import json_problem
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.principal import Principal
from agentledger.domain.state import ApprovalRequest
from agentledger.domain.tools import Governed

MAX_EDITS = 20
"""Arguments one decision may change: an amendment, not a new call."""


def edit_digest(proposal_digest: str, edits: Mapping[str, JsonValue]) -> str:
    """What an approver signs to approve ``proposal_digest``'s call with ``edits`` applied."""
    return sha256_hex({"proposal_digest": proposal_digest, "edits": dict(edits)})


def edited_call(
    pending: ApprovalRequest,
    edits: Mapping[str, JsonValue],
    contract: Governed | None,
    manifest: ExecutionManifest,
    approver: Principal,
) -> ApprovalEdit | ApprovalRefusal:
    """The pending call with ``edits`` applied, or why ``approver`` may not approve it so."""
    if pending.elicitation is not None or contract is None:
        return _refusal("edit_not_allowed", "this approval answers a tool server; send content")
    problem = json_problem(dict(edits), "edits")
    if problem is not None or not edits or len(edits) > MAX_EDITS:
        return _refusal("invalid_edit", problem or f"an edit changes 1 to {MAX_EDITS} arguments")
    proposed = pending.proposal.arguments
    try:
        parsed = contract.input_model.model_validate({**proposed, **edits})
    except ValidationError as exc:
        brief = "; ".join(str(e["msg"]) for e in exc.errors()[:3])
        return _refusal("invalid_edit", f"the edited call does not fit {contract.name}: {brief}")
    approved: dict[str, JsonValue] = parsed.model_dump(mode="json")
    changes = _changes(proposed, approved)
    if not changes:
        return _refusal("empty_edit", "the edits leave the proposed call as it was")
    refusal = _authority_refusal(contract, proposed, approved, approver)
    if refusal is not None:
        return refusal
    edited = ToolCallProposal(tool=contract.name, arguments=approved)
    return ApprovalEdit(
        edits=dict(edits),
        proposed=proposed,
        approved=approved,
        changes=changes,
        approved_digest=proposal_digest(edited, manifest.hash, manifest.policy_version),
    )


def widening(
    contract: Governed, proposed: Mapping[str, JsonValue], approved: Mapping[str, JsonValue]
) -> str | None:
    """How the approved call asks for more than the proposed one (another resource, a larger
    number), or ``None`` when it asks for the same or less."""
    resource = contract.resource_argument
    if resource is not None and approved.get(resource) != proposed.get(resource):
        return f"{resource} {proposed.get(resource)!r} -> {approved.get(resource)!r} is another"
    for name, before in proposed.items():
        after = approved.get(name)
        if _number(before) and _number(after) and after > before:  # type: ignore[operator]
            return f"{name} {before!r} -> {after!r} asks for more than was proposed"
    return None


def _authority_refusal(
    contract: Governed,
    proposed: Mapping[str, JsonValue],
    approved: Mapping[str, JsonValue],
    approver: Principal,
) -> ApprovalRefusal | None:
    rule = contract.approval
    widened = widening(contract, proposed, approved)
    if widened is not None and not (rule.widen_role and approver.has_role(rule.widen_role)):
        may = f"only a {rule.widen_role} may widen it" if rule.widen_role else "none may widen it"
        return _refusal("edit_widens", f"{widened}; {contract.name}'s terms say {may}")
    role = rule.approver_role(dict(approved))
    if not approver.has_role(role):
        return _refusal("missing_role", f"{approver.user_id} lacks the {role} role the edit needs")
    return None


def _changes(
    proposed: Mapping[str, JsonValue], approved: Mapping[str, JsonValue]
) -> tuple[ArgumentChange, ...]:
    names = sorted(set(proposed) | set(approved))
    return tuple(
        ArgumentChange(argument=n, proposed=proposed.get(n), approved=approved.get(n))
        for n in names
        if proposed.get(n) != approved.get(n) or type(proposed.get(n)) is not type(approved.get(n))
    )


def _number(value: object) -> bool:
    return type(value) in (int, float)


def _refusal(reason_code: str, detail: str) -> ApprovalRefusal:
    return ApprovalRefusal(reason_code=reason_code, detail=detail)
