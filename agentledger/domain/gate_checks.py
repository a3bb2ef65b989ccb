"""The authority gate's checks against what the run has verified: a handoff's verdict that
gates a tool, the work order's own grants and bounds, the resource a write targets and the
verified facts its arguments are bound by (``domain.governance`` runs them in order)."""

from __future__ import annotations

from pydantic import JsonValue

from agentledger.domain.arguments import with_defaults
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState
from agentledger.domain.tools import FactBound, Governed
from agentledger.domain.verdicts import Deny


def fork_refusal(contract: Governed, manifest: ExecutionManifest) -> Deny | None:
    """A dry fork's consequential calls and writes: refused, so it acts on nothing."""
    origin = manifest.fork_origin
    if origin is None or not origin.dry:
        return None
    if contract.scope != "write" and contract.risk != "consequential":
        return None
    return Deny(
        reason_code="fork_dry",
        detail=f"{contract.name} is consequential, and this is a dry fork of {origin.run_id} "
        f"at #{origin.seq}: it acts on nothing",
    )


def handoff_gate_refusal(
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


def work_order_refusal(
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


def resource_refusal(
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
        refusal = bound_refusal(bound, arguments, state, resource_id)
        if refusal is not None:
            return refusal
    return None


def bound_refusal(
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
