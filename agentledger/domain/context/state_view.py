"""The working-state fields a step sees, rendered as compact typed JSON.

Only typed fields are shown, never prose: a receipt stays ``{tool, operation_id, status,
receipt_id}`` however long the run gets, so a summary can never rewrite a number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Literal

from pydantic import JsonValue

from agentledger.domain.state import WorkingState

StateField = Literal[
    "references",
    "verified_facts",
    "completed_actions",
    "pending_approvals",
    "approvals",
    "remaining_budget",
    "rejected_options",
    "unresolved_errors",
    "proposed_action",
    "source_versions",
]

HISTORY_FIELDS: tuple[StateField, ...] = ("completed_actions", "rejected_options")
"""Fields that are history and may be collapsed to their latest entries when space is short.
Pending approvals, errors and facts are current obligations and are never dropped."""


def iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat().replace("+00:00", "Z")


def _references(state: WorkingState) -> JsonValue:
    return dict(sorted(state.work_order.references.items())) if state.work_order else {}


def _verified_facts(state: WorkingState) -> JsonValue:
    return {
        key: {"value": fact.value, "observed_at": iso(fact.observed_at)}
        for key, fact in sorted(state.verified_facts.items())
    }


def _completed_actions(state: WorkingState) -> JsonValue:
    # ``resource_id`` only where the run recorded one: packets of runs recorded before keep
    # their exact text (and hash).
    return [
        {
            "tool": a.tool,
            "operation_id": a.operation_id,
            "status": a.status,
            "receipt_id": a.receipt_id,
            **({"resource_id": a.resource_id} if a.resource_id is not None else {}),
        }
        for a in state.completed_actions
    ]


def _pending_approvals(state: WorkingState) -> JsonValue:
    return [
        {
            "approval_id": p.approval_id,
            "tool": p.proposal.tool,
            "operation_id": p.operation_id,
            "approver_role": p.approver_role,
            "expires_at": iso(p.expires_at),
        }
        for _, p in sorted(state.pending_approvals.items())
    ]


def _approvals(state: WorkingState) -> JsonValue:
    return [
        {"approval_id": a.approval_id, "decision": a.decision, "used": a.used}
        for _, a in sorted(state.approvals.items())
    ]


def _remaining_budget(state: WorkingState) -> JsonValue:
    return {
        "tool_calls_remaining": state.remaining_tool_calls(),
        "tokens_remaining": state.remaining_tokens(),
        "steps_remaining": state.remaining_steps(),
    }


def _rejected_options(state: WorkingState) -> JsonValue:
    return [
        {"step": r.step, "option": r.option, "reason_code": r.reason_code, "detail": r.detail}
        for r in state.rejected_options
    ]


def _unresolved_errors(state: WorkingState) -> JsonValue:
    return [
        {
            "error_id": e.error_id,
            "code": e.code,
            "message": e.message,
            "operation_id": e.operation_id,
        }
        for _, e in sorted(state.unresolved_errors.items())
    ]


def _proposed_action(state: WorkingState) -> JsonValue:
    p = state.proposed_action
    return None if p is None else {"tool": p.tool, "arguments": p.arguments}


def _source_versions(state: WorkingState) -> JsonValue:
    return dict(sorted(state.source_versions.items()))


RENDERERS: Mapping[StateField, Callable[[WorkingState], JsonValue]] = MappingProxyType(
    {
        "references": _references,
        "verified_facts": _verified_facts,
        "completed_actions": _completed_actions,
        "pending_approvals": _pending_approvals,
        "approvals": _approvals,
        "remaining_budget": _remaining_budget,
        "rejected_options": _rejected_options,
        "unresolved_errors": _unresolved_errors,
        "proposed_action": _proposed_action,
        "source_versions": _source_versions,
    }
)


def state_view(state: WorkingState, fields: Sequence[StateField]) -> dict[str, JsonValue]:
    """The selected fields, in the order asked for, as JSON-ready values."""
    return {field: RENDERERS[field](state) for field in fields}


def compact_view(view: Mapping[str, JsonValue], keep_last: int) -> dict[str, JsonValue]:
    """Keep the latest ``keep_last`` entries of each history list and count the rest."""
    out: dict[str, JsonValue] = {}
    for key, value in view.items():
        if key in HISTORY_FIELDS and isinstance(value, list) and len(value) > keep_last:
            out[key] = value[len(value) - keep_last :]
            out[f"{key}_earlier_count"] = len(value) - keep_last
        else:
            out[key] = value
    return out
