"""Eval suites: versioned work orders with the outcomes a configuration must reach (seed 003).

A suite is data: which pack, who asks what, and what must be true afterwards (the system of
record's end state, receipts that must or must not exist, denials, citations, what the answer may
not claim). It names no configuration: the same suite runs under every manifest compared.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, JsonValue

from agentledger.domain._model import Frozen
from agentledger.domain.events import RunEvent
from agentledger.domain.tools import ReceiptStatus


class ReceiptPattern(Frozen):
    """A receipt of ``tool`` with ``status`` whose arguments include ``arguments`` (a subset)."""

    tool: str
    status: ReceiptStatus = "succeeded"
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


class DenialPattern(Frozen):
    """A ``tool_call_denied`` of ``tool`` (with ``reason_code``, when given)."""

    tool: str
    reason_code: str | None = None


class Expectation(Frozen):
    """What a run of one work order must show; every field left at its default checks nothing
    beyond its default (a run that completed, claiming nothing it did not do)."""

    status: Literal["completed", "failed", "any"] = "completed"
    end_state_hash: str | None = None
    """The system of record's end state, as the suite's pack hashes it."""
    citations: tuple[str, ...] = ()
    """Each must end one of the answer's cited source ids (e.g. ``#late-delivery``)."""
    receipts: tuple[ReceiptPattern, ...] = ()
    no_receipts: tuple[ReceiptPattern, ...] = ()
    denials: tuple[DenialPattern, ...] = ()
    approvals: int | None = None
    """How many approvals the run asks for (``None``: not checked)."""
    answer_excludes: tuple[str, ...] = ()
    """Phrases the answer must not contain (case-insensitive): claims of what did not happen."""


class ForkedFrom(Frozen):
    """Where a regression case starts (``agentledger eval add``): a recorded run's events up to
    one of its completed-operation boundaries, and the manifests they name, carried in the suite
    so the case runs on any ledger. Each run of the case is a fork from there."""

    run_id: str
    seq: int = Field(ge=1)
    state_hash: str
    """The original's state hash at ``seq``, checked when the suite is loaded."""
    events: tuple[RunEvent, ...]
    manifests: tuple[dict[str, JsonValue], ...]
    """The manifests the events were recorded under, as the ledger stores them."""


class EvalCase(Frozen):
    """One work order of a suite: a request by a user from the pack's directory, or a hosted
    benchmark's task (``task``), and how the scripted approver decides; or a fork of a recorded
    run (``fork``), whose request and requester are the original's."""

    case_id: str
    request: str = ""
    user: str = ""
    task: dict[str, str] = Field(default_factory=dict)
    """A hosted benchmark's task reference (τ²: domain and task id; AgentDojo: the pair)."""
    fixture: str | None = None
    """A named change the pack makes to the fresh copy of its system of record before the run."""
    approve: bool = True
    expect: Expectation = Field(default_factory=Expectation)
    fork: ForkedFrom | None = None


class Suite(Frozen):
    name: str
    version: str
    pack: str
    approver: str
    """Who decides the approvals the runs ask for (from the pack's directory)."""
    cases: tuple[EvalCase, ...]
    description: str = ""

    def case(self, case_id: str) -> EvalCase:
        return next(c for c in self.cases if c.case_id == case_id)
