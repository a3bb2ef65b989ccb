"""What follows each thing a run learns: the events a model step's result, a tool's receipt or a
budget check adds, decided here and only recorded by the workflow.

A ``Recording`` stamps each event with the next sequence number and folds it into the state at
once, so a decision that depends on earlier events of the same step (a decision checked against
the state its packet was built from) sees them, exactly as the run will.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from agentledger.domain import events as ev
from agentledger.domain.claims import delivered_text
from agentledger.domain.compaction import carried_size_problem, context_state
from agentledger.domain.decisions import Answer, AskUser, CallTool, Delegate
from agentledger.domain.envelope import Stamp
from agentledger.domain.fold import evolve
from agentledger.domain.graph import ConversationPolicy
from agentledger.domain.handoffs import schema_problem
from agentledger.domain.limits import bounded_raw
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.model_calls import ModelStepResult, TokenUsage
from agentledger.domain.run_loop import (
    DecisionProblem,
    budget_exhausted,
    check_decision,
    settled_decision,
)
from agentledger.domain.state import WorkingState
from agentledger.domain.tools import Receipt


@dataclass
class Recording:
    """A run's state and the events recorded since they were last persisted."""

    run_id: str
    """The run's id until ``RunStarted`` puts it in the state."""
    state: WorkingState = field(default_factory=WorkingState)
    manifest_hash: str = ""
    outbox: list[ev.RunEvent] = field(default_factory=list)
    failure: str | None = None
    """The reason code the run failed with, once it has (a parent reads its child's)."""

    def stamp(self, now: datetime) -> Stamp:
        return Stamp(
            run_id=self.state.run_id or self.run_id,
            seq=self.state.last_seq + 1,
            recorded_at=now,
            manifest_hash=self.manifest_hash,
        )

    def add(self, event: ev.RunEvent) -> None:
        self.state = evolve(self.state, event)
        self.outbox.append(event)

    def take_outbox(self) -> list[ev.RunEvent]:
        taken, self.outbox = self.outbox, []
        return taken

    def fail(self, now: datetime, reason_code: str, message: str) -> None:
        self.failure = reason_code
        self.add(ev.RunFailed(**self.stamp(now), reason_code=reason_code, message=message))


def start_step(rec: Recording, now: datetime, step: str) -> WorkingState | None:
    """Record the step's start; the state its model is sent, or ``None`` when that state is too
    large to send (the run is failed: a refused payload would fail task after task)."""
    rec.add(ev.StepStarted(**rec.stamp(now), step=step))
    sent = context_state(rec.state)
    too_large = carried_size_problem(len(sent.model_dump_json()))
    if too_large is not None:
        rec.fail(now, "state_too_large", too_large)
        return None
    return sent


def after_model_step(
    rec: Recording, now: datetime, step: str, result: ModelStepResult, manifest: ExecutionManifest
) -> CallTool | AskUser | Answer | Delegate | None:
    """Record what a model step produced. Returns a tool call to govern, a question to ask the
    customer, a delegation to hand off, or a final answer to finish with; ``None`` when the step
    ends here (refused, rejected, or more steps follow)."""
    _charge(rec, now, step, result)
    graph = manifest.step_graph
    if result.insufficient_context is not None:
        if graph is not None and graph.node(step).on_insufficient_context == "ask_user":
            _reject(rec, now, step, "insufficient_context", result.insufficient_context)
            return AskUser(question=f"{MISSING_CONTEXT_QUESTION} ({result.insufficient_context})")
        rec.fail(now, "insufficient_context", result.insufficient_context)
        return None
    decision = result.decision
    if decision is None:
        detail = result.rejection or "no decision"
        _reject(rec, now, step, "malformed_model_output", detail, raw=result.raw_reply)
        return None
    if isinstance(decision, Delegate):
        return _delegation(rec, now, step, decision, manifest)
    citable = result.packet.citable_ids if result.packet else ()
    schema = manifest.step(step).output_schema if graph is not None else None
    problem = check_decision(step, decision, rec.state, citable, schema, manifest.bound_claims)
    settled = problem or settled_decision(step, decision, graph)
    if isinstance(settled, DecisionProblem):
        _reject(rec, now, step, settled.reason_code, settled.detail, option=decision.type)
        return None
    rec.add(
        ev.DecisionRecorded(
            **rec.stamp(now), step=step, decision=settled, model_profile=manifest.model.name
        )
    )
    if isinstance(settled, CallTool | AskUser):
        return settled
    if isinstance(settled, Answer) and settled.proposed_next_action is None:
        return settled
    return None


def _delegation(
    rec: Recording, now: datetime, step: str, decision: Delegate, manifest: ExecutionManifest
) -> Delegate | None:
    """A delegation through a contract this step may use, with input that fits its schema; a
    refusal is recorded as a ``HandoffRefused`` (no child started) and fed back to the model."""
    contract = manifest.handoff(decision.handoff)
    if contract is None or step not in contract.steps:
        problem = ("handoff_not_allowed", f"step {step} may not delegate {decision.handoff!r}")
    elif (schema := schema_problem(contract.input_schema, decision.input)) is not None:
        problem = ("input_schema_violation", schema)
    else:
        rec.add(
            ev.DecisionRecorded(
                **rec.stamp(now), step=step, decision=decision, model_profile=manifest.model.name
            )
        )
        return decision
    reason_code, detail = problem
    rec.add(
        ev.HandoffRefused(
            **rec.stamp(now),
            handoff=decision.handoff,
            child_run_id=None,
            reason_code=reason_code,
            detail=detail,
        )
    )
    return None


MISSING_CONTEXT_QUESTION = "I need a little more information before I can go on."


def await_reply(
    rec: Recording,
    now: datetime,
    conversation: ConversationPolicy,
    reason: Literal["question", "follow_up"],
    message: str,
) -> None:
    """Park the run until its customer writes (or the conversation's idle timeout passes)."""
    step = rec.state.current_step or ""
    deadline = now + timedelta(seconds=conversation.idle_timeout_seconds)
    rec.add(
        ev.ReplyAwaited(
            **rec.stamp(now), reason=reason, step=step, message=message, deadline=deadline
        )
    )


def close_conversation(
    rec: Recording,
    now: datetime,
    conversation: ConversationPolicy,
    reason: Literal["idle_timeout", "max_turns"],
) -> None:
    """End a conversation: recorded; the run then completes with its last answer
    (``final_answer``)."""
    rec.add(
        ev.ConversationClosed(**rec.stamp(now), reason=reason, message=conversation.closing_message)
    )


def final_answer(state: WorkingState, conversation: ConversationPolicy) -> Answer:
    """What a closed conversation completes with: the last answer, or the policy's closing
    message when the agent never answered (it asked, and nobody replied)."""
    return state.last_answer or Answer(answer=conversation.closing_message)


def _reject(
    rec: Recording,
    now: datetime,
    step: str,
    code: str,
    detail: str,
    option: str = "",
    raw: str = "",
) -> None:
    rec.add(
        ev.DecisionRejected(
            **rec.stamp(now),
            step=step,
            reason_code=code,
            detail=detail,
            option=option,
            raw_reply=bounded_raw(raw),
        )
    )


def _charge(rec: Recording, now: datetime, step: str, result: ModelStepResult) -> None:
    """The packet the step was sent and the tokens it cost."""
    packet = result.packet
    if packet is not None:
        built = packet.model_dump(exclude={"citable_ids"})
        rec.add(ev.ContextPacketBuilt(**rec.stamp(now), step=step, **built))
    if result.tokens_used:
        usage = result.usage or TokenUsage()
        rec.add(
            ev.BudgetCharged(
                **rec.stamp(now),
                tokens=result.tokens_used,
                reason=f"model:{step}",
                usage_reported=usage.reported,
                input_tokens=usage.input_tokens,
                cached_tokens=usage.cached_tokens,
                output_tokens=usage.output_tokens,
            )
        )
    call = result.call
    if call is not None:
        recorded = call.model_dump(exclude={"reported"})
        rec.add(
            ev.ModelCalled(**rec.stamp(now), step=step, usage_reported=call.reported, **recorded)
        )


def complete(rec: Recording, now: datetime, answer: Answer, currency: str | None = None) -> None:
    """``currency``: the model's price's (``None``: unpriced, and the run has no total cost)."""
    rec.add(
        ev.RunCompleted(
            **rec.stamp(now),
            answer=delivered_text(answer, rec.state),
            cited_source_ids=answer.supporting_source_ids,
            claimed_operation_ids=answer.claimed_operation_ids,
            claims=answer.claims,
            total_cost=rec.state.used.cost if currency is not None else None,
            currency=currency,
        )
    )


def record_receipt(rec: Recording, now: datetime, receipt: Receipt) -> None:
    """A receipt, the evidence it returned, and an open error when the call failed or its
    outcome is unknown (a person must look)."""
    rec.add(ev.ToolReceiptRecorded(**rec.stamp(now), receipt=receipt))
    for passage in receipt.evidence:
        rec.add(
            ev.EvidenceRecorded(
                **rec.stamp(now),
                operation_id=receipt.operation_id,
                source_id=passage.source_id,
                revision=passage.revision,
                content_hash=passage.content_hash,
                trust=passage.trust,
                title=passage.title,
                text=passage.text,
            )
        )
    if receipt.status in ("failed", "unknown"):
        rec.add(
            ev.ErrorRecorded(
                **rec.stamp(now),
                error_id=f"err_{rec.state.last_seq + 1}",
                code=receipt.error_code or "tool_failed",
                message=receipt.error_message or "",
                operation_id=receipt.operation_id,
            )
        )


def within_budget(rec: Recording, now: datetime) -> bool:
    """Whether another step may run; when a limit is used up, the run is failed saying which."""
    reason = budget_exhausted(rec.state, now)
    if reason is None:
        return True
    rec.fail(now, "budget_exhausted", f"the run's {reason} budget is used up")
    return False
