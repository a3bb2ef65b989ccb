"""The data behind the UI's two main pages, gathered from the ledger in one place."""

from __future__ import annotations

from typing import Any

from agentledger.activities.ledger import RunRow
from agentledger.api import proposals, views
from agentledger.api.auth import Caller
from agentledger.api.deps import ApiContext, is_staff
from agentledger.domain.claims import delivered_text
from agentledger.domain.events import RunForked
from agentledger.domain.fold import project
from agentledger.domain.forks import boundaries
from agentledger.domain.state import WorkingState


def inbox_items(ctx: ApiContext, caller: Caller) -> list[dict[str, Any]]:
    """Each pending approval of the caller's tenant with the facts and evidence behind it."""
    rows = ctx.ledger.approvals(status="pending", tenant_id=caller.principal.tenant_id)
    if not is_staff(caller):
        rows = [r for r in rows if r.requested_by == caller.principal.user_id]
    items = []
    for shown in proposals.approvals_in_context(ctx.ledger, rows):
        state = project(ctx.ledger.read(shown["run_id"]))
        request = state.work_order.request_text if state.work_order else ""
        items.append({**shown, **views.grounds(state), "request": request})
    return items


def run_page(ctx: ApiContext, row: RunRow) -> dict[str, Any]:
    events = ctx.ledger.read(row.run_id)
    state = project(events)
    return {
        "run": views.run_summary(row),
        "state_status": state.status,
        "timeline": views.timeline(events),
        "packets": views.packet_index(events),
        "receipts": views.receipts(events),
        "approvals": proposals.approvals_in_context(
            ctx.ledger, ctx.ledger.approvals(status=None, run_id=row.run_id)
        ),
        "refusals": views.refusals(events),
        "decisions": views.decisions(events),
        "manifest": ctx.ledger.get_manifest_body(row.manifest_hash),
        "answer": shown_answer(row, state),
        "used": state.used,
        "currency": _currency(ctx.ledger.get_manifest_body(row.manifest_hash)),
        "live": state.status == "running",
        "fork_points": boundaries(events),
        "forked": next((e for e in events[:2] if isinstance(e, RunForked)), None),
    }


def _currency(manifest: dict[str, Any] | None) -> str:
    """The currency the run's model is priced in (its cost is summed in it), or ``""``."""
    price = ((manifest or {}).get("model") or {}).get("price") or {}
    return str(price.get("currency", ""))


def shown_answer(row: RunRow, state: WorkingState) -> str | None:
    """The answer as the customer received it: the completed run's recorded text, or the latest
    answer of a conversation still open, each with the runtime's confirmation lines."""
    if row.answer is not None:
        return row.answer
    return delivered_text(state.last_answer, state) if state.last_answer else None
