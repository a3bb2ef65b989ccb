"""Handoffs: one agent delegates a piece of work to another under a contract (seed 003).

"Every handoff needs an explicit input contract, output schema, authority, budget, termination
condition, and owner." A ``HandoffContract`` is part of the parent's profile and is frozen into
its manifest, so the hash covers it. The child is another agent profile of the same pack, run as
its own run (own ledger stream, own manifest) whose grants are the contract's authority: a
subset of the parent's grants, never wider (``check_handoffs`` refuses a contract that widens
them when the parent's manifest is resolved; the child's manifest is narrowed to the authority
and its gate refuses everything else).

The child's answer is its output: a JSON object checked against the contract's output schema
before the parent sees it, as an observation (data, never instructions). What the child spent is
charged to the parent. A ``HandoffGate`` lets a contract's verdict gate a parent's tool in code:
the authority gate refuses that tool until the handoff completed with a passing value.

Pure: JSON Schema checks use ``jsonschema`` (as tool arguments do), nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal

import jsonschema  # type: ignore[import-untyped]  # no stubs shipped
from pydantic import Field, JsonValue

from agentledger.domain._model import Frozen
from agentledger.domain.errors import ManifestError
from agentledger.domain.events import HandoffRequested
from agentledger.domain.workorder import Budget, WorkOrder

__all__ = [
    "HandoffAuthorityError",
    "HandoffContract",
    "HandoffGate",
    "HandoffOrigin",
    "HandoffTermination",
    "check_handoffs",
    "child_budget",
    "child_work_order",
    "origin_problem",
    "output_problem",
    "schema_problem",
]


class HandoffAuthorityError(ManifestError):
    """A handoff contract that would give its child more than the parent holds, or cannot run."""

    code = "handoff_contract_invalid"


class HandoffTermination(Frozen):
    """When the child stops: it produced its output, or ``max_steps`` model steps or
    ``max_seconds`` of wall time were used (the parent then cancels it and records why)."""

    max_steps: int = Field(default=6, gt=0)
    max_seconds: int = Field(default=600, gt=0)
    until: Literal["output"] = "output"


class HandoffGate(Frozen):
    """The parent's ``tool`` is refused by the gate until this handoff completed with
    ``output[field]`` in ``passes``."""

    tool: str
    field: str
    passes: tuple[JsonValue, ...]


class HandoffContract(Frozen):
    """What a parent may delegate, to whom, with what, under which limits, owned by whom."""

    name: str
    profile_id: str
    """The child agent profile (one of the pack's ``profiles``)."""
    steps: tuple[str, ...]
    """The parent's steps that may delegate through this contract (as a grant names steps)."""
    input_schema: dict[str, JsonValue]
    output_schema: dict[str, JsonValue]
    authority: tuple[str, ...]
    """The tools the child may use: each one the parent is granted (the child's terms for them
    are frozen from the same pack's contracts)."""
    budget: Budget
    """The most the child may spend; charged to the parent."""
    termination: HandoffTermination = Field(default_factory=HandoffTermination)
    owner: str
    """Who answers for this contract (a team or a person), shown on the parent's timeline."""
    gates: tuple[HandoffGate, ...] = ()


class HandoffOrigin(Frozen):
    """Frozen into a child's manifest: whose delegation it runs under, with what authority."""

    parent_run_id: str
    handoff: str
    authority: tuple[str, ...]


def schema_problem(schema: dict[str, JsonValue], value: JsonValue) -> str | None:
    """Why ``value`` does not fit the JSON Schema ``schema`` (``None``: it does)."""
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(value), key=str)
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(part) for part in first.absolute_path) or "(root)"
    return f"{len(errors)} schema error(s); at {where}: {first.message}"[:500]


def output_problem(
    contract: HandoffContract, answer: str | None
) -> tuple[dict[str, JsonValue] | None, str | None]:
    """The child's answer parsed as its output, or why it is not one."""
    if answer is None:
        return None, "the child produced no answer"
    try:
        output: Any = json.loads(answer)
    except ValueError:
        return None, "the child's answer is not JSON"
    if not isinstance(output, dict):
        return None, "the child's answer is not a JSON object"
    problem = schema_problem(contract.output_schema, output)
    return (None, problem) if problem is not None else (output, None)


def child_budget(contract: HandoffContract, remaining: Budget) -> Budget:
    """The child's limits: the contract's, its termination's, and what the parent has left."""
    limit = contract.budget
    return Budget(
        steps=min(limit.steps, contract.termination.max_steps, remaining.steps),
        tool_calls=min(limit.tool_calls, remaining.tool_calls),
        tokens=min(limit.tokens, remaining.tokens),
        wall_seconds=min(limit.wall_seconds, contract.termination.max_seconds),
    )


def child_work_order(
    parent: WorkOrder, contract: HandoffContract, given: dict[str, JsonValue], budget: Budget
) -> WorkOrder:
    """The child's work order: the parent's principal and pack, the contract's profile, the
    delegation's input (its string fields become references the child's tools can use, beside
    ``requester_id``: whom the parent acts for, from its work order, never from the model), and
    the parent's work-order grants narrowed to the contract's authority (argument bounds kept:
    a child never holds what its parent's work order did not)."""
    grants = parent.grants
    if grants is not None:
        grants = tuple(g for g in grants if g.tool in contract.authority)
    return WorkOrder(
        objective=f"handoff {contract.name} (owner {contract.owner})",
        request_text=json.dumps(given, sort_keys=True, separators=(",", ":")),
        principal=parent.principal,
        pack=parent.pack,
        agent_profile_id=contract.profile_id,
        references={
            **{k: v for k, v in given.items() if isinstance(v, str)},
            "requester_id": parent.principal.user_id,
        },
        budget=budget,
        grants=grants,
    )


def origin_problem(
    origin: HandoffOrigin,
    child: WorkOrder,
    contract: HandoffContract | None,
    parent: WorkOrder | None,
    requested: HandoffRequested | None,
) -> str | None:
    """Why a child run's origin is not a delegation its parent recorded (``None``: it is).

    A child's origin and work order arrive as workflow input, which anyone who can start a
    workflow can write; they are taken only when they are exactly what the parent's ledger holds:
    its ``HandoffRequested`` for this child, under a contract of its frozen manifest, for the
    work order ``child_work_order`` makes of the parent's own."""
    if requested is None or parent is None:
        return f"run {origin.parent_run_id} never requested this handoff"
    if contract is None or requested.handoff != origin.handoff:
        return f"run {origin.parent_run_id}'s manifest has no handoff {origin.handoff!r}"
    if contract.authority != origin.authority:
        return f"handoff {origin.handoff} grants {list(contract.authority)}, not those asked for"
    if child != child_work_order(parent, contract, requested.input, requested.budget):
        return f"the work order is not the one run {origin.parent_run_id} delegated"
    return None


def check_handoffs(
    contracts: Iterable[HandoffContract], granted: Iterable[str], steps: Iterable[str]
) -> None:
    """Refuse contracts that widen authority or cannot run (raises ``HandoffAuthorityError``).

    ``granted``: the tools the parent is granted; a contract's authority must name only those,
    and its gates only tools the parent holds."""
    grants, known_steps, names = set(granted), set(steps), set[str]()
    for contract in contracts:
        if contract.name in names:
            raise HandoffAuthorityError(f"two handoff contracts are named {contract.name!r}")
        names.add(contract.name)
        wider = sorted(set(contract.authority) - grants)
        if wider:
            raise HandoffAuthorityError(
                f"handoff {contract.name!r} grants {wider}, which the parent does not hold: "
                "a child's authority is a subset of its parent's"
            )
        unknown = sorted(set(contract.steps) - known_steps)
        if unknown or not contract.steps:
            raise HandoffAuthorityError(
                f"handoff {contract.name!r} names no step or unknown steps {unknown}"
            )
        ungated = sorted({g.tool for g in contract.gates} - grants)
        if ungated:
            raise HandoffAuthorityError(f"handoff {contract.name!r} gates ungranted {ungated}")
        for schema in (contract.input_schema, contract.output_schema):
            try:
                jsonschema.validators.validator_for(schema).check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise HandoffAuthorityError(
                    f"handoff {contract.name!r} has an invalid schema: {exc.message}"
                ) from None
