"""What a model may return: a structured proposal, never authority.

Each step's output schema is one of these shapes; the runtime validates the shape against the
step (``domain.governance``) before anything is authorised.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import Annotated, Literal, TypeVar

from pydantic import AfterValidator, Field, JsonValue, field_validator

from agentledger.domain._model import Frozen
from agentledger.domain.limits import (
    MAX_ANSWER_CHARS,
    MAX_QUESTION_CHARS,
    MAX_RATIONALE_CHARS,
    json_problem,
)

_S = TypeVar("_S", bound=Sized)


def _at_most(limit: int) -> Callable[[_S], _S]:
    # A validator, not a schema constraint: the output schema models are shown stays as it was.
    def check(value: _S) -> _S:
        if len(value) > limit:
            raise ValueError(f"longer than {limit}")
        return value

    return check


_Rationale = Annotated[str, AfterValidator(_at_most(MAX_RATIONALE_CHARS))]
_Ids = Annotated[tuple[str, ...], AfterValidator(_at_most(100))]
_answer_text = Annotated[str, AfterValidator(_at_most(MAX_ANSWER_CHARS))]


class ToolCallProposal(Frozen):
    """A tool call the model would like the runtime to make."""

    tool: Annotated[str, AfterValidator(_at_most(200))]
    arguments: dict[str, JsonValue] = Field(default_factory=dict)

    @field_validator("arguments")
    @classmethod
    def _bounded(cls, arguments: dict[str, JsonValue]) -> dict[str, JsonValue]:
        problem = json_problem(arguments, "tool arguments")
        if problem is not None:
            raise ValueError(problem)
        return arguments


class ArgumentChange(Frozen):
    """One argument an approver changed: what the model proposed, what the approver approved."""

    argument: str
    proposed: JsonValue = None
    approved: JsonValue = None


class ApprovalEdit(Frozen):
    """An approver's amendment of a proposed call (``domain.approval_edits``): the arguments as
    proposed and as approved, the difference, and the digest the edited call is bound to (the
    gate dispatches only the call with that digest)."""

    edits: dict[str, JsonValue]
    """The overrides as the approver signed them."""
    proposed: dict[str, JsonValue]
    approved: dict[str, JsonValue]
    """The edited call's arguments as the tool's schema reads them."""
    changes: tuple[ArgumentChange, ...]
    approved_digest: str


class CallTool(Frozen):
    """Call one tool now (read tools during ``choose_next_action``)."""

    type: Literal["call_tool"] = "call_tool"
    proposal: ToolCallProposal
    rationale: _Rationale = ""


# The form every run recorded before step graphs; under a graph it is taken as a ``Proceed`` to
# the step's first successor. Its docstring is part of the legacy output schema (and so of
# recorded packets' hashes): leave it as it is.
class ProceedToAnswer(Frozen):
    """Enough is known; the next step should draft the answer."""

    type: Literal["proceed_to_answer"] = "proceed_to_answer"
    rationale: _Rationale = ""


class Proceed(Frozen):
    """This step's work is done; move to step ``to`` (one the step graph allows from here;
    ``None``: the first one it allows)."""

    type: Literal["proceed"] = "proceed"
    to: Annotated[str, AfterValidator(_at_most(200))] | None = None
    rationale: _Rationale = ""


class AskUser(Frozen):
    """Ask the customer a question and wait for the reply (steps the graph lets ask)."""

    type: Literal["ask_user"] = "ask_user"
    question: Annotated[str, AfterValidator(_at_most(MAX_QUESTION_CHARS))] = Field(min_length=1)
    rationale: _Rationale = ""


class Delegate(Frozen):
    """Hand a piece of work to another agent through a handoff contract this step may use;
    ``input`` must fit the contract's input schema. The child's output comes back as an
    observation."""

    type: Literal["delegate"] = "delegate"
    handoff: Annotated[str, AfterValidator(_at_most(200))]
    input: dict[str, JsonValue] = Field(default_factory=dict)
    rationale: _Rationale = ""

    @field_validator("input")
    @classmethod
    def _bounded(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        problem = json_problem(value, "handoff input")
        if problem is not None:
            raise ValueError(problem)
        return value


class Claim(Frozen):
    """An effect the answer reports as done: the operation, the tool that ran it and the
    resource it was about (the value of the tool contract's resource argument; ``None`` only for
    a tool that declares none). The runtime accepts it only when the run holds a succeeded
    receipt of that operation, from that tool, about that resource."""

    operation_id: Annotated[str, AfterValidator(_at_most(200))]
    tool: Annotated[str, AfterValidator(_at_most(200))]
    resource_id: Annotated[str, AfterValidator(_at_most(200))] | None = None


class Answer(Frozen):
    """A user-facing answer with the source ids it relies on.

    ``claims`` names the completed operations the answer reports as done, each with its tool
    and the resource it was about; the runtime rejects an answer whose claim no succeeded
    receipt of that tool about that resource supports, and delivers each supported claim to
    the customer as the receipt's own confirmation line. The prose itself is not checked: state
    effects through ``claims``. A consequential ``proposed_next_action`` is only a proposal: it
    goes through authorisation and approval.
    """

    type: Literal["answer"] = "answer"
    answer: _answer_text
    supporting_source_ids: _Ids = ()
    claims: Annotated[tuple[Claim, ...], AfterValidator(_at_most(100))] = ()
    # Claims recorded before they named their resource: still read, refused under a manifest
    # that binds claims (``ExecutionManifest.bound_claims``), and left out of its schema.
    claimed_operation_ids: _Ids = ()
    proposed_next_action: ToolCallProposal | None = None


AnyDecision = CallTool | ProceedToAnswer | Proceed | AskUser | Answer | Delegate

Decision = Annotated[AnyDecision, Field(discriminator="type")]
"""The union a model's structured output is parsed into."""

DecisionType = Literal[
    "call_tool", "proceed_to_answer", "proceed", "ask_user", "answer", "delegate"
]
