"""Hypothesis strategies for valid runs: random stories that the fold must accept.

``runs()`` draws a list of moves and plays each one that is legal at that point of the story (a
receipt needs a call in flight, a grant needs a pending approval, ...), tracking just enough to
stay valid. Text avoids U+0000 only where it would become an identifier; numbers stay within
what JSON carries exactly (64-bit integers, finite floats).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from pydantic import JsonValue

from agentledger.domain import events as ev
from agentledger.domain.decisions import ToolCallProposal
from agentledger.domain.events import HistoryCompacted, RunEvent
from agentledger.domain.fold import project, state_hash
from agentledger.domain.tools import ResourceRef, VerifiedFact
from agentledger.domain.workorder import Budget
from bench.factories import RunScript

TOOLS = ("get_order", "search_returns_policy", "create_refund", "send_email")
STEPS = ("choose_next_action", "draft_answer")
MOVES = (
    "step",
    "packet",
    "call",
    "proceed",
    "answer",
    "reject_decision",
    "authorise",
    "deny",
    "receipt",
    "evidence",
    "request_approval",
    "decide_approval",
    "use_grant",
    "refuse",
    "error",
    "charge",
    "memory",
    "compact",
    "delegate",
    "handoff_end",
)

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=24)
ident = st.text("abcdefghijklmnopqrstuvwxyz0123456789_-#", min_size=1, max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values: st.SearchStrategy[JsonValue] = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ident, inner, max_size=3),
    max_leaves=6,
)
arguments = st.dictionaries(ident, json_values, max_size=3)


@dataclass
class _Story:
    """What the generator must remember to stay legal; the fold remembers the rest."""

    s: RunScript
    in_flight: dict[str, str] = field(default_factory=dict)
    pending: dict[str, Any] = field(default_factory=dict)
    grants: list[Any] = field(default_factory=list)
    approvals_seen: list[str] = field(default_factory=list)
    handoffs: list[str] = field(default_factory=list)
    counter: int = 0

    def new_id(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.counter}"


@st.composite
def runs(draw: st.DrawFn, run_id: str = "run-h", max_moves: int = 30) -> list[RunEvent]:
    story = _Story(RunScript(run_id))
    story.s.started(request=draw(text))
    for move in draw(st.lists(st.sampled_from(MOVES), max_size=max_moves)):
        _play(draw, story, move)
    ending = draw(st.sampled_from(("open", "completed", "failed")))
    if ending == "completed":
        story.s.complete(answer=draw(text), sources=tuple(draw(st.lists(ident, max_size=2))))
    elif ending == "failed":
        story.s.fail(message=draw(text))
    return story.s.events


def _play(draw: st.DrawFn, story: _Story, move: str) -> None:
    """Play ``move`` if it is legal at this point of the story; otherwise skip it."""
    for group in (_reasoning, _tools, _approvals, _bookkeeping, _handoffs):
        if group(draw, story, move):
            return


def _reasoning(draw: st.DrawFn, story: _Story, move: str) -> bool:
    s = story.s
    match move:
        case "step":
            s.step(draw(st.sampled_from(STEPS)))
        case "packet":
            s.packet(tokens=draw(st.integers(120, 5000)))
        case "call":
            s.call(draw(st.sampled_from(TOOLS)), draw(arguments))
        case "proceed":
            s.proceed()
        case "answer":
            propose = draw(
                st.none()
                | st.builds(ToolCallProposal, tool=st.sampled_from(TOOLS), arguments=arguments)
            )
            s.answer(draw(text), tuple(draw(st.lists(ident, max_size=2))), propose)
        case "reject_decision":
            s.add(
                ev.DecisionRejected,
                step="choose_next_action",
                reason_code="schema_invalid",
                detail=draw(text),
            )
        case _:
            return False
    return True


def _tools(draw: st.DrawFn, story: _Story, move: str) -> bool:
    s = story.s
    match move:
        case "authorise":
            op = story.new_id("op")
            story.in_flight[op] = draw(st.sampled_from(TOOLS))
            s.authorise(op, story.in_flight[op], draw(arguments), write=draw(st.booleans()))
        case "deny":
            s.add(
                ev.ToolCallDenied,
                operation_id=story.new_id("op"),
                tool=draw(st.sampled_from(TOOLS)),
                reason_code="not_granted",
                detail=draw(text),
            )
        case "receipt" if story.in_flight:
            _receipt(draw, story)
        case "evidence":
            s.evidence(
                draw(st.sampled_from(("policy#a", "policy#b", "faq#c"))),
                draw(text),
                revision=draw(st.sampled_from(("r1", "r2"))),
            )
        case _:
            return False
    return True


def _approvals(draw: st.DrawFn, story: _Story, move: str) -> bool:
    s = story.s
    match move:
        case "request_approval":
            approval = s.request_approval(
                story.new_id("appr"), story.new_id("op"), "create_refund", draw(arguments)
            )
            story.pending[approval.approval_id] = approval
            story.approvals_seen.append(approval.approval_id)
        case "decide_approval" if story.pending:
            _decide(draw, story)
        case "use_grant" if story.grants:
            approval = story.grants.pop(draw(st.integers(0, len(story.grants) - 1)))
            story.in_flight[approval.operation_id] = approval.proposal.tool
            s.authorise(
                approval.operation_id,
                approval.proposal.tool,
                approval.proposal.arguments,
                approval_id=approval.approval_id,
                write=True,
            )
        case "refuse" if story.approvals_seen:
            s.add(
                ev.ApprovalAttemptRefused,
                approval_id=draw(st.sampled_from(story.approvals_seen)),
                attempted_by="usr_73",
                reason_code="self_approval",
                detail=draw(text),
            )
        case _:
            return False
    return True


def _bookkeeping(draw: st.DrawFn, story: _Story, move: str) -> bool:
    s = story.s
    match move:
        case "error":
            s.add(
                ev.ErrorRecorded,
                error_id=story.new_id("err"),
                code="tool_failed",
                message=draw(text),
            )
        case "charge":
            s.add(ev.BudgetCharged, tokens=draw(st.integers(0, 4000)), reason="model call")
        case "memory":
            s.add(
                ev.MemoryProposed,
                memory_id=story.new_id("mem"),
                category="preference",
                content=draw(text),
            )
        case "compact":
            state = project(s.events)
            s.add(
                HistoryCompacted,
                through_seq=s.seq,
                facts=state.model_dump(mode="json"),
                facts_hash=state_hash(state),
                summary=draw(text),
            )
        case _:
            return False
    return True


def _handoffs(draw: st.DrawFn, story: _Story, move: str) -> bool:
    """Delegations to child runs: requested, then completed or refused (or refused unstarted)."""
    s = story.s
    if move == "delegate":
        child = story.new_id(f"{s.run_id}/handoff")
        story.handoffs.append(child)
        s.add(
            ev.HandoffRequested,
            handoff=draw(st.sampled_from(("fraud_check", "kyc"))),
            child_run_id=child,
            step=draw(st.sampled_from(STEPS)),
            profile_id="reviewer",
            owner="risk-team",
            input=draw(arguments),
            budget=Budget(steps=draw(st.integers(1, 6))),
        )
    elif move == "handoff_end":
        child = story.handoffs.pop(0) if story.handoffs else None
        if child is not None and draw(st.booleans()):
            s.add(
                ev.HandoffCompleted,
                handoff="fraud_check",
                child_run_id=child,
                output=draw(arguments),
            )
        else:
            s.add(
                ev.HandoffRefused,
                handoff="fraud_check",
                child_run_id=child,
                reason_code=draw(
                    st.sampled_from(("output_schema_violation", "handoff_not_allowed"))
                ),
                detail=draw(text),
            )
    else:
        return False
    return True


def _receipt(draw: st.DrawFn, story: _Story) -> None:
    s = story.s
    op = draw(st.sampled_from(sorted(story.in_flight)))
    status = draw(st.sampled_from(("succeeded", "failed", "in_doubt")))
    facts = tuple(
        VerifiedFact(name=name, value=value, resource_id="ord_1", observed_at=s.now)
        for name, value in draw(st.dictionaries(ident, json_values, max_size=3)).items()
    )
    owner = ResourceRef(resource_id="ord_1", kind="order", owner_user_id="usr_73", tenant_id="acme")
    s.receipt(op, story.in_flight[op], status, facts=facts, resources=(owner,))
    if status != "in_doubt":
        del story.in_flight[op]


def _decide(draw: st.DrawFn, story: _Story) -> None:
    s = story.s
    approval = story.pending.pop(draw(st.sampled_from(sorted(story.pending))))
    outcome = draw(st.sampled_from(("grant", "reject", "expire")))
    if outcome == "grant":
        s.grant(approval)
        story.grants.append(approval)
    elif outcome == "reject":
        s.reject(approval.approval_id, draw(text))
    else:
        s.expire(approval.approval_id)
