"""What a model may return: a structured proposal, never authority.

Each step's output schema is one of these shapes; the runtime validates the shape against the
step (``domain.governance``) before anything is authorised.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue

from domain._model import Frozen


class ToolCallProposal(Frozen):
    """A tool call the model would like the runtime to make."""

    tool: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


class CallTool(Frozen):
    """Call one tool now (read tools during ``choose_next_action``)."""

    type: Literal["call_tool"] = "call_tool"
    proposal: ToolCallProposal
    rationale: str = ""


class ProceedToAnswer(Frozen):
    """Enough is known; the next step should draft the answer."""

    type: Literal["proceed_to_answer"] = "proceed_to_answer"
    rationale: str = ""


class Answer(Frozen):
    """A user-facing answer with the source ids it relies on.

    ``claimed_operation_ids`` names completed operations the answer reports as done; the runtime
    rejects an answer that claims an operation without a succeeded receipt. A consequential
    ``proposed_next_action`` is only a proposal: it goes through authorisation and approval.
    """

    type: Literal["answer"] = "answer"
    answer: str
    supporting_source_ids: tuple[str, ...] = ()
    claimed_operation_ids: tuple[str, ...] = ()
    proposed_next_action: ToolCallProposal | None = None


Decision = Annotated[CallTool | ProceedToAnswer | Answer, Field(discriminator="type")]
"""The union a model's structured output is parsed into."""

DecisionType = Literal["call_tool", "proceed_to_answer", "answer"]
