"""Human-readable timelines and packets, rendered from the ledger (not from Temporal)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any

from agentledger.domain import events as ev
from agentledger.domain.assertions import VerifiedAssertion

if TYPE_CHECKING:
    from agentledger.activities.ledger import RunRow


def _signed(assertion: VerifiedAssertion | None) -> str:
    """Whose signature decided (runs that pin trusted keys), short enough for a timeline."""
    if assertion is None:
        return ""
    return f" (signed by {assertion.issuer}, key {assertion.key_id[:8]})"


def message_of(event: ev.RunEvent) -> tuple[str, str, str | None] | None:
    """``(sender, text, reason)`` of a conversation event: the agent's question or answer, the
    customer's reply, a refused reply (its would-be sender) and the closing message."""
    match event:
        case ev.ReplyAwaited():
            return "agent", event.message, event.reason
        case ev.UserReplied():
            return event.principal_id, event.text, None
        case ev.ReplyRefused():
            return event.attempted_by, event.detail, event.reason_code
        case ev.ConversationClosed():
            return "agent", event.message, event.reason
        case _:
            return None


def _conversation(event: ev.RunEvent) -> str | None:
    message = message_of(event)
    if message is None:
        return None
    sender, text, reason = message
    match event:
        case ev.ReplyAwaited():
            verb = "asked" if reason == "question" else "answered"
            return f'{sender} {verb} ({reason}): "{text}"'
        case ev.UserReplied():
            held = " while the run worked (held)" if event.queued else ""
            return f'{sender} replied{held}: "{text}"{_signed(event.assertion)}'
        case ev.ReplyRefused():
            return f"reply by {sender} refused, {reason}: {text}"
        case _:
            return f'closed ({reason}): "{text}" (by {sender})'


def summarize(event: ev.RunEvent) -> str:
    """One short line per event: what happened, with the ids that matter."""
    for said in (_conversation, _operators, _steps, _tools, _approvals, _outcomes):
        if (line := said(event)) is not None:
            return line
    return event.kind.replace("_", " ")


def _operators(event: ev.RunEvent) -> str | None:
    """What operators did to the run, and a held message taken to interrupt it."""
    match event:
        case ev.RunCancelled():
            return f"cancelled by {event.cancelled_by}{_signed(event.assertion)}: {event.reason}"
        case ev.OperatorInstructed():
            return f'{event.instructed_by} instructed{_signed(event.assertion)}: "{event.text}"'
        case ev.RunForked():
            mode = "dry" if event.dry else "against the sandbox"
            return (
                f"forked by {event.forked_by}{_signed(event.assertion)} from "
                f"{event.origin_run_id} at #{event.origin_seq} ({mode}), state "
                f"{event.facts_hash[:19]}"
            )
        case ev.OperatorActionRefused():
            return f"{event.action} by {event.attempted_by} refused, {event.reason_code}"
        case ev.ReplyTaken():
            return f"held message #{event.reply_seq} taken: what was decided is set aside"
        case _:
            return None


def _steps(event: ev.RunEvent) -> str | None:
    """A run's start, its steps, packets and the model's decisions."""
    match event:
        case ev.RunStarted():
            return f'{event.work_order.principal.user_id} asked: "{event.work_order.request_text}"'
        case ev.StepStarted():
            return event.step
        case ev.ContextPacketBuilt():
            return (
                f"{event.total_tokens} tokens, {len(event.included_ids)} items, "
                f"{event.omission_count} omitted, packet {event.packet_hash[7:19]}"
            )
        case ev.DecisionRecorded():
            d = event.decision
            if d.type == "call_tool":
                return f"call {d.proposal.tool}({_args(d.proposal.arguments)})"
            if d.type == "answer" and d.proposed_next_action is not None:
                p = d.proposed_next_action
                return f"draft answer; propose {p.tool}({_args(p.arguments)})"
            return d.type.replace("_", " ")
        case ev.DecisionRejected():
            return f"rejected {event.option or 'decision'}: {event.reason_code} ({event.detail})"
        case _:
            return None


def _tools(event: ev.RunEvent) -> str | None:
    """Authorisations, denials, receipts and evidence."""
    match event:
        case ev.ToolCallAuthorised():
            key = f", key {event.idempotency_key}" if event.idempotency_key else ""
            via = f", approval {event.approval_id}" if event.approval_id else ""
            return f"{event.operation_id} {event.tool} authorised{via}{key}"
        case ev.ToolCallDenied():
            return f"{event.operation_id} {event.tool} denied: {event.reason_code} ({event.detail})"
        case ev.ToolReceiptRecorded():
            r = event.receipt
            headline = (r.user_view or r.error_message or r.tool).split(" | ", 1)[0]
            return f"{r.operation_id} {r.status}: {headline}"
        case ev.EvidenceRecorded():
            return f"{event.source_id} @{event.revision} ({event.trust})"
        case _:
            return None


def _approvals(event: ev.RunEvent) -> str | None:
    """Approvals asked, decided, expired or refused."""
    match event:
        case ev.ApprovalNotified():
            return f"{event.approval_id} announced on {event.channel} ({event.channel_kind})"
        case ev.ApprovalNotificationFailed():
            return f"{event.approval_id} not announced on {event.channel}, {event.reason_code}"
        case ev.ApprovalRequested():
            return (
                f"{event.approval_id} for {event.proposal.tool}"
                f"({_args(event.proposal.arguments)}), role {event.approver_role}"
            )
        case ev.ApprovalGranted():
            edited = "".join(
                f", {c.argument} {c.proposed!r} -> {c.approved!r}"
                for c in (event.edit.changes if event.edit else ())
            )
            return f"{event.approval_id} granted by {event.approver}{_signed(event.assertion)}" + (
                f" with edits{edited}" if edited else ""
            )
        case ev.ApprovalRejected():
            signed = _signed(event.assertion)
            return f"{event.approval_id} rejected by {event.approver}{signed}: {event.reason}"
        case ev.ApprovalExpired():
            return f"{event.approval_id} expired"
        case ev.ApprovalAttemptRefused():
            return f"{event.attempted_by} refused on {event.approval_id}: {event.reason_code}"
        case _:
            return None


def _outcomes(event: ev.RunEvent) -> str | None:
    """Errors, budget charges, ends and handoffs."""
    match event:
        case ev.ErrorRecorded():
            return f"{event.code}: {event.message}"
        case ev.BudgetCharged():
            return f"{event.tokens} tokens, {event.tool_calls} tool calls ({event.reason})"
        case ev.ModelCalled():
            cost = "unpriced" if event.cost is None else f"{event.cost} {event.currency}"
            return (
                f"{event.provider}:{event.model} attempt {event.attempt}, {event.input_tokens} in "
                f"({event.cached_tokens} cached), {event.output_tokens} out, {cost}"
            )
        case ev.RunCompleted():
            return f"answer cites {', '.join(event.cited_source_ids) or 'no sources'}"
        case ev.RunFailed():
            return f"{event.reason_code}: {event.message}"
        case ev.HandoffRequested():
            return (
                f"{event.handoff} -> child run {event.child_run_id} ({event.profile_id}, "
                f"owner {event.owner}, {event.budget.steps} steps)"
            )
        case ev.HandoffCompleted():
            return f"{event.handoff} from {event.child_run_id}: {_args(event.output)}"
        case ev.HandoffRefused():
            child = f" ({event.child_run_id})" if event.child_run_id else ""
            return f"{event.handoff}{child} refused, {event.reason_code}: {event.detail}"
        case _:
            return None


def timeline(events: Iterable[ev.RunEvent]) -> list[str]:
    lines, step = [], "-"
    for event in events:
        if isinstance(event, ev.StepStarted):
            step = event.step
        lines.append(f"{event.seq:>3}  {step:<19} {event.kind:<25} {summarize(event)}")
    return lines


def packet_text(view: dict[str, Any], *, visible_controls: bool = False) -> str:
    """A packet view for a reader: what was selected and left out, then the exact text its
    model was sent (each message as posted to a chat model, else the whole packet's text).
    ``visible_controls`` (for a terminal) writes control characters from untrusted content as
    ``\\xNN`` instead of letting them drive the terminal; the text is otherwise untouched."""
    lines = [
        f"packet {view['packet_hash'][7:19]}  step {view['step']}  "
        f"{view['total_tokens']}/{view['token_limit']} tokens  cache key {view['cache_key'][7:19]}"
    ]
    for section in view["sections"]:
        ids = ", ".join(item["id"] for item in section["items"])
        blocks = "".join(f" + {block} block" for block in section["blocks"])
        lines.append(
            f"    [{section['category']}/{section['name']}] {section['tokens']} tok: {ids}{blocks}"
        )
    lines.append(
        f"    tools: {', '.join(view['tools']) or '-'}; "
        f"may propose: {', '.join(view['proposable_actions']) or '-'}"
    )
    lines += [
        f"    omitted {o['item_id']}: {o['reason']} ({o['estimated_tokens']} tok)"
        for o in view["omissions"]
    ]
    return "\n".join(lines) + "\n" + _sent(view, visible_controls)


def _sent(view: dict[str, Any], visible_controls: bool) -> str:
    show = _visible if visible_controls else str
    if not view["messages"]:
        reads = view["model"] and f"; {view['model']['provider']} reads its structure"
        title = f"--- the packet's text, as rendered for a model{reads or ''} ---"
        return f"{title}\n{show(view['text'])}\n--- end of packet ---\n\n"
    to = view["model"]["provider"]
    return (
        "".join(
            f"--- {m['role']} message, as posted to {to} ---\n{show(m['content'])}\n"
            for m in view["messages"]
        )
        + "--- end of packet ---\n\n"
    )


_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
del _CONTROLS[ord("\n")], _CONTROLS[ord("\t")]


def _visible(text: str) -> str:
    return text.translate(_CONTROLS)


def run_table(rows: Sequence[tuple[RunRow, bool]], request_width: int = 60) -> list[str]:
    """Runs under a header, one line each: ``waiting`` for a live run waiting on its customer,
    the last update (UTC), and the request on one line, cut to ``request_width``."""
    cells = [("RUN", "STATUS", "UPDATED", "PACK", "USER", "REQUEST")]
    for row, waiting in rows:
        status = "waiting" if waiting else row.status
        when = row.updated_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
        cells.append(
            (
                row.run_id,
                status,
                when,
                row.pack,
                row.principal_id,
                _one_line(row.request_text, request_width),
            )
        )
    widths = [max(len(c[i]) for c in cells) for i in range(5)]
    return ["  ".join([*(c[i].ljust(widths[i]) for i in range(5)), c[5]]) for c in cells]


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def _args(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in arguments.items())
