"""The fold's handlers for what the run decides and what others tell it: a recorded decision,
a delegation opened and closed, an operator's instruction. Private to ``domain.fold``, like
``_draft``, whose ``Draft`` they apply to."""

from __future__ import annotations

from agentledger.domain._draft import Draft
from agentledger.domain.assertions import spent_after
from agentledger.domain.errors import InconsistentEvent
from agentledger.domain.events import (
    DecisionRecorded,
    HandoffCompleted,
    HandoffRefused,
    HandoffRequested,
    OperatorInstructed,
)
from agentledger.domain.state import DecisionNote, HandoffRecord, Observation, OperatorInstruction


def apply_decision(d: Draft, event: DecisionRecorded) -> None:
    decision = event.decision
    summary: str = decision.type
    if decision.type == "call_tool":
        summary = f"call {decision.proposal.tool}"
    elif decision.type == "proceed_to_answer":
        d.f["phase"] = "answering"
    elif decision.type == "proceed":
        d.f["at_step"] = decision.to
        summary = f"proceed to {decision.to}"
    elif decision.type == "ask_user":
        summary = "ask the user"
    elif decision.type == "delegate":
        summary = f"delegate {decision.handoff}"
    else:
        d.f["last_answer"] = decision
        if decision.proposed_next_action is not None:
            d.f["proposed_action"] = decision.proposed_next_action
            d.f["phase"] = "acting"
            summary = f"answer; propose {decision.proposed_next_action.tool}"
    d.f["decisions"].append(
        DecisionNote.trusted(
            seq=event.seq, step=event.step, decision_type=decision.type, summary=summary
        )
    )


def apply_handoff(d: Draft, event: HandoffRequested | HandoffCompleted | HandoffRefused) -> None:
    """A delegation opens a record; its end closes it. Output comes back as an observation
    (data for the next step, never instructions); a refusal is fed back as a rejected option."""
    records = d.f["handoffs"]
    if isinstance(event, HandoffRequested):
        if event.child_run_id in records:
            raise InconsistentEvent(f"handoff #{event.seq}: {event.child_run_id} requested twice")
        records[event.child_run_id] = HandoffRecord.model_construct(
            handoff=event.handoff, child_run_id=event.child_run_id, step=event.step,
            status="requested", output=None, reason_code=None,
        )  # fmt: skip
        return
    opened = records.get(event.child_run_id) if event.child_run_id is not None else None
    if event.child_run_id is not None and (opened is None or opened.status != "requested"):
        raise InconsistentEvent(f"{event.kind} #{event.seq}: no open handoff {event.child_run_id}")
    if isinstance(event, HandoffCompleted):
        assert opened is not None
        records[event.child_run_id] = opened.model_copy(
            update={"status": "completed", "output": event.output}
        )
        d.f["observations"][event.child_run_id] = Observation.model_construct(
            operation_id=event.child_run_id,
            tool=f"handoff:{event.handoff}",
            status="succeeded",
            model_view={"handoff": event.handoff, "output": event.output},
            observed_at=event.recorded_at,
        )
        return
    if opened is not None:
        records[opened.child_run_id] = opened.model_copy(
            update={"status": "refused", "reason_code": event.reason_code}
        )
    d.reject(event.seq, f"handoff:{event.handoff}", event.reason_code, event.detail)


def apply_instructed(d: Draft, event: OperatorInstructed) -> None:
    said = OperatorInstruction(
        seq=event.seq, instructed_by=event.instructed_by, text=event.text, at=event.recorded_at
    )
    d.f["operator_instructions"] = (*d.f["operator_instructions"], said)
    d.f["spent_assertions"] = spent_after(
        d.f["spent_assertions"], event.assertion, event.recorded_at
    )  # taken once, like a decision's or a reply's
