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

from pydantic import JsonValue, ValidationError

from agentledger.domain.canonical import sha256_hex
from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.gate_checks import (
    fork_refusal,
    handoff_gate_refusal,
    resource_refusal,
    work_order_refusal,
)
from agentledger.domain.manifest import ExecutionManifest, ToolGrant
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState
from agentledger.domain.tools import Governed
from agentledger.domain.verdicts import Allow as Allow
from agentledger.domain.verdicts import Authorization as Authorization
from agentledger.domain.verdicts import Deny as Deny
from agentledger.domain.verdicts import NeedsApproval as NeedsApproval


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
        work_order_refusal(contract, arguments, state, bounds_with_defaults)
        or fork_refusal(contract, manifest)
        or handoff_gate_refusal(contract.name, state, manifest)
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
        refusal = resource_refusal(contract, arguments, state, principal)
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
