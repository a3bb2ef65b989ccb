"""The authority gate: the model proposes, this pure function decides.

``authorize`` checks, in order: the tool is known and granted for this step in the manifest, the
arguments satisfy the contract's schema, the principal holds the tool's scope, a write targets a
resource verified as the principal's, arguments respect verified facts (amount, currency), budget
is left, the write was not already done, and a consequential call carries a matching, unused,
unexpired approval. Malformed proposals are protocol errors (``Deny.protocol_error``) that the
workflow records as ``DecisionRejected``; policy refusals become ``ToolCallDenied``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Literal

from pydantic import JsonValue, ValidationError

from agentledger.domain._model import Frozen
from agentledger.domain.arguments import with_defaults
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.manifest import ExecutionManifest, ToolGrant
from agentledger.domain.principal import APPROVER_ROLE, Principal
from agentledger.domain.state import WorkingState
from agentledger.domain.tools import FactBound, Governed


class Allow(Frozen):
    kind: Literal["allow"] = "allow"
    tool: str
    tool_version: str
    arguments: dict[str, JsonValue]
    arguments_digest: str
    idempotency_key: str | None
    approval_id: str | None = None


class Deny(Frozen):
    kind: Literal["deny"] = "deny"
    reason_code: str
    detail: str
    protocol_error: bool = False


class NeedsApproval(Frozen):
    kind: Literal["needs_approval"] = "needs_approval"
    proposal: ToolCallProposal
    proposal_digest: str
    approver_role: str = APPROVER_ROLE


Authorization = Allow | Deny | NeedsApproval


def arguments_digest(tool: str, arguments: Mapping[str, JsonValue]) -> str:
    return sha256_hex({"tool": tool, "arguments": dict(arguments)})


def proposal_digest(proposal: ToolCallProposal, manifest_hash: str, policy_version: str) -> str:
    """What an approval is bound to: tool, exact arguments, manifest and policy version."""
    return sha256_hex(
        {
            "tool": proposal.tool,
            "arguments": proposal.arguments,
            "manifest_hash": manifest_hash,
            "policy_version": policy_version,
        }
    )


def idempotency_key(run_id: str, operation_id: str, args_digest: str) -> str:
    """Runtime-issued, stable across retries and worker crashes; the system of record keys on it."""
    return "idem_" + sha256_hex([run_id, operation_id, args_digest])[7:39]


def authorize(
    proposal: ToolCallProposal,
    state: WorkingState,
    manifest: ExecutionManifest,
    principal: Principal,
    now: datetime,
    *,
    contracts: Mapping[str, Governed],
    step: str,
    operation_id: str,
    bounds_with_defaults: bool = True,
) -> Authorization:
    """``bounds_with_defaults=False``: bounds see the call as runs recorded before it did."""
    admitted = _admitted(proposal, manifest, contracts, step)
    if isinstance(admitted, Deny):
        return admitted
    contract, grant, arguments = admitted
    refusal = (
        _work_order_refusal(contract, arguments, state, bounds_with_defaults)
        or _handoff_gate_refusal(contract.name, state, manifest)
        or _policy_refusal(contract, grant, arguments, state, principal)
    )
    if refusal is not None:
        return refusal
    digest = arguments_digest(contract.name, arguments)
    key = None
    if contract.idempotency == "runtime_key":
        key = idempotency_key(state.run_id, operation_id, digest)
    if contract.risk == "consequential" or contract.approval.requires_approval(arguments):
        return _with_approval(contract, arguments, digest, key, state, manifest, now)
    return Allow(
        tool=contract.name,
        tool_version=contract.version,
        arguments=arguments,
        arguments_digest=digest,
        idempotency_key=key,
    )


def _admitted(
    proposal: ToolCallProposal,
    manifest: ExecutionManifest,
    contracts: Mapping[str, Governed],
    step: str,
) -> Deny | tuple[Governed, ToolGrant, dict[str, JsonValue]]:
    """A granted tool, under the contract the grant pins, for this step, with arguments that
    fit its schema (as parsed); or why not."""
    contract, grant = contracts.get(proposal.tool), manifest.grant(proposal.tool)
    if grant is None and manifest.handoff_origin is not None:
        origin = manifest.handoff_origin
        return Deny(
            reason_code="outside_handoff_authority",
            detail=f"{proposal.tool} is outside the authority of handoff {origin.handoff!r} "
            f"from run {origin.parent_run_id} (allowed: {', '.join(origin.authority) or 'none'})",
        )
    if contract is None or grant is None:
        return Deny(
            reason_code="unknown_tool",
            detail=f"no tool {proposal.tool!r} is granted",
            protocol_error=True,
        )
    if grant.schema_hash != contract.schema_hash or grant.version != contract.version:
        return Deny(
            reason_code="contract_changed",
            detail=f"{proposal.tool} no longer matches the manifest's pinned contract",
        )
    if step not in grant.steps:
        return Deny(
            reason_code="not_granted_for_step",
            detail=f"{proposal.tool} is not granted for step {step}",
        )
    try:
        parsed = contract.input_model.model_validate(proposal.arguments)
    except ValidationError as exc:
        return Deny(reason_code="invalid_arguments", detail=_brief(exc), protocol_error=True)
    arguments: dict[str, JsonValue] = parsed.model_dump(mode="json")
    return contract, grant, arguments


def _handoff_gate_refusal(
    tool: str, state: WorkingState, manifest: ExecutionManifest
) -> Deny | None:
    """A tool a handoff's verdict gates: refused until that handoff completed with a passing
    value (the verdict is the child's validated output, never the model's word for it)."""
    for contract in manifest.handoffs:
        for gate in (g for g in contract.gates if g.tool == tool):
            output = state.handoff_output(contract.name)
            if output is None:
                return Deny(
                    reason_code="handoff_verdict_required",
                    detail=f"{tool} needs a completed {contract.name} handoff first",
                )
            if output.get(gate.field) not in gate.passes:
                return Deny(
                    reason_code="handoff_verdict_blocks",
                    detail=f"{contract.name} returned {gate.field}={output.get(gate.field)!r}; "
                    f"{tool} needs one of {list(gate.passes)}",
                )
    return None


def _work_order_refusal(
    contract: Governed, arguments: dict[str, JsonValue], state: WorkingState, fill: bool
) -> Deny | None:
    """The work order's own grants: only its tools, within its bounds (defaults filled)."""
    tool, order = contract.name, state.work_order
    if order is None or order.grants is None:
        return None
    grant = next((g for g in order.grants if g.tool == tool), None)
    if grant is None:
        return Deny(
            reason_code="not_in_work_order", detail=f"the work order does not authorise {tool}"
        )
    normal = with_defaults(contract.input_schema, arguments) if fill else arguments
    for bound in grant.bounds:
        value = normal.get(bound.argument)
        if value not in bound.allowed:
            return Deny(
                reason_code="argument_not_authorised",
                detail=f"{tool}: {bound.argument}={value!r} is outside what the work order "
                f"authorises ({len(bound.allowed)} allowed value(s))",
            )
    return None


def _policy_refusal(
    contract: Governed,
    grant: ToolGrant,
    arguments: dict[str, JsonValue],
    state: WorkingState,
    principal: Principal,
) -> Deny | None:
    if contract.required_scope not in principal.scopes:
        return Deny(
            reason_code="scope_missing",
            detail=f"{principal.user_id} lacks scope {contract.required_scope}",
        )
    if state.remaining_tool_calls() <= 0:
        return Deny(reason_code="budget_exhausted", detail="no tool calls left in the budget")
    if contract.scope == "write":
        refusal = _resource_refusal(contract, arguments, state, principal)
        if refusal is not None:
            return refusal
        digest = arguments_digest(contract.name, arguments)
        earlier = state.settled_write(digest)
        if "succeeded" in earlier:
            return Deny(
                reason_code="already_done",
                detail=f"{contract.name} already succeeded with these arguments in this run",
            )
        if "unknown" in earlier:
            return Deny(
                reason_code="outcome_unknown",
                detail=f"{contract.name} with these arguments may already have run; a person "
                "must check before it is repeated",
            )
    return None


def _resource_refusal(
    contract: Governed,
    arguments: dict[str, JsonValue],
    state: WorkingState,
    principal: Principal,
) -> Deny | None:
    """A write must target a resource a tool has verified as the principal's own."""
    if contract.resource_argument is None:
        return None
    resource_id = str(arguments.get(contract.resource_argument))
    resource = state.resources.get(resource_id)
    if resource is None:
        return Deny(
            reason_code="resource_not_verified",
            detail=f"{resource_id} has not been read from the system of record",
        )
    if resource.owner_user_id != principal.user_id or resource.tenant_id != principal.tenant_id:
        return Deny(
            reason_code="resource_not_owned",
            detail=f"{resource_id} does not belong to {principal.user_id}",
        )
    for bound in contract.fact_bounds:
        refusal = _bound_refusal(bound, arguments, state, resource_id)
        if refusal is not None:
            return refusal
    return None


def _bound_refusal(
    bound: FactBound, arguments: dict[str, JsonValue], state: WorkingState, resource_id: str
) -> Deny | None:
    fact = state.fact(resource_id, bound.fact)
    value = arguments.get(bound.argument)
    if fact is None:
        return Deny(
            reason_code="fact_not_verified",
            detail=f"{bound.fact} of {resource_id} is not a verified fact",
        )
    if bound.relation == "equals" and value != fact.value:
        return Deny(
            reason_code="argument_mismatch",
            detail=f"{bound.argument}={value!r} but verified {bound.fact}={fact.value!r}",
        )
    if bound.relation == "at_most" and not (
        isinstance(value, int | float)
        and isinstance(fact.value, int | float)
        and value <= fact.value
    ):
        return Deny(
            reason_code="exceeds_verified_limit",
            detail=f"{bound.argument}={value!r} exceeds verified {bound.fact}={fact.value!r}",
        )
    return None


def _with_approval(
    contract: Governed,
    arguments: dict[str, JsonValue],
    digest: str,
    key: str | None,
    state: WorkingState,
    manifest: ExecutionManifest,
    now: datetime,
) -> Allow | Deny | NeedsApproval:
    proposal = ToolCallProposal(tool=contract.name, arguments=arguments)
    bound_to = proposal_digest(proposal, manifest.hash, manifest.policy_version)
    same = [a for a in state.approvals.values() if a.proposal_digest == bound_to]
    for approval in same:
        if approval.decision == "rejected":
            return Deny(
                reason_code="approval_previously_rejected",
                detail=f"{approval.decided_by} rejected this exact proposal "
                f"({approval.approval_id}): {approval.reason or 'no reason given'}",
            )
    # Single use: a spent grant never authorises a second call.
    usable = [a for a in same if a.decision == "granted" and not a.used]
    for approval in usable:
        if approval.expires_at > now:
            return Allow(
                tool=contract.name,
                tool_version=contract.version,
                arguments=arguments,
                arguments_digest=digest,
                idempotency_key=key,
                approval_id=approval.approval_id,
            )
    if usable:
        return Deny(
            reason_code="approval_expired",
            detail=f"approval {usable[0].approval_id} expired before dispatch",
        )
    return NeedsApproval(proposal=proposal, proposal_digest=bound_to)


def _brief(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors()[:5]
    )
