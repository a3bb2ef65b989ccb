"""Steps as a pack declares them: each step's profile (what it sees, calls, proposes) and its
place in the step graph (where it may proceed, whether it may ask the customer), in one call.

A step that proceeds somewhere decides the next action (``output_schema="next_action"``: call a
tool, proceed, or ask); a step that proceeds nowhere answers (``"answer"``, perhaps proposing a
consequential tool). The graph is always explicit: a pack gets the graph its steps draw, never
the two legacy steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from agentledger.domain.context import Kind, Pool, RequirementRule, StateField, StepProfile
from agentledger.domain.graph import StepGraph, StepNode
from agentledger.domain.manifest import ToolGrant
from agentledger.domain.tools import ToolContract
from agentledger.sdk._errors import PackDefinitionError

DEFAULT_SEES: tuple[Kind, ...] = (
    "conversation_turn",
    "tool_result",
    "verified_fact",
    "unresolved_error",
)
"""What a step reads in full besides its required kinds, unless it says otherwise."""

DEFAULT_STATE: tuple[StateField, ...] = (
    "references",
    "verified_facts",
    "completed_actions",
    "pending_approvals",
    "remaining_budget",
    "rejected_options",
    "unresolved_errors",
)
"""The working-state fields a step sees unless it says otherwise (an answering step also sees
``proposed_action``)."""


@dataclass(frozen=True)
class Step:
    """A step's profile and its node in the graph (build one with ``step()``)."""

    profile: StepProfile
    node: StepNode

    @property
    def name(self) -> str:
        return self.profile.name


def step(
    name: str,
    *,
    next: Sequence[str] = (), ask_user: bool = False,
    on_insufficient_context: Literal["fail", "ask_user"] = "fail",
    tools: Sequence[str] = (), proposes: Sequence[str] = (),
    required: Sequence[Kind] = ("instruction", "user_request"), sees: Sequence[Kind] = DEFAULT_SEES,
    state: Sequence[StateField] | None = None, required_when: Sequence[RequirementRule] = (),
    index: Sequence[Kind] = (),
    current_date: bool = False, principal_profile: bool = False,
    section_tokens: Mapping[Pool, int] | None = None,
) -> Step:  # fmt: skip
    """One step. ``next``: the steps it may proceed to (the first is the default); none means it
    answers. ``tools``: tools it may call now; ``proposes``: consequential tools an answering
    step may propose (they go through approval). ``ask_user``: it may ask the customer a question
    and wait for the reply (the pack needs a conversation policy)."""
    answers = not next
    if proposes and not answers:
        raise PackDefinitionError(
            f"step {name!r}", "only an answering step (one with no `next`) may propose tools"
        )
    fields = tuple(state) if state is not None else DEFAULT_STATE
    if answers and state is None:
        fields = (*fields, "proposed_action")
    try:
        profile = StepProfile(
            name=name, output_schema="answer" if answers else "next_action",
            required_kinds=tuple(required), optional_kinds=_optional(sees, required),
            conditional_kinds=tuple(required_when), index_kinds=tuple(index), state_fields=fields,
            allowed_tools=tuple(tools), proposable_actions=tuple(proposes),
            inject_current_date=current_date, inject_principal_profile=principal_profile,
            section_tokens=dict(section_tokens or {}),
        )  # fmt: skip
        node = StepNode(
            name=name, next=tuple(next), ask_user=ask_user,
            on_insufficient_context=on_insufficient_context,
        )  # fmt: skip
    except ValidationError as exc:
        raise PackDefinitionError(f"step {name!r}", _brief(exc)) from exc
    return Step(profile, node)


def _optional(sees: Sequence[Kind], required: Sequence[Kind]) -> tuple[Kind, ...]:
    return tuple(k for k in sees if k not in required)


def assemble(
    pack: str, steps: Sequence[Step | StepProfile], graph: StepGraph | None, entry: str | None
) -> tuple[tuple[StepProfile, ...], StepGraph]:
    """The profiles and the graph: ``graph`` as given, or the one the steps draw (entry: the
    first step unless ``entry`` names another)."""
    if not steps:
        raise PackDefinitionError("steps", "a pack needs at least one step", pack=pack)
    profiles = tuple(s.profile if isinstance(s, Step) else s for s in steps)
    declared = [s for s in steps if isinstance(s, Step)]
    if graph is None:
        if len(declared) != len(steps):
            raise PackDefinitionError(
                "steps",
                "a bare StepProfile has no place in a graph; pass graph= or use step()",
                pack=pack,
            )
        first = entry or steps[0].name
        return profiles, StepGraph(entry=first, nodes=tuple(s.node for s in declared))
    for s in declared:
        if s.name in graph.names() and graph.node(s.name) != s.node:
            raise PackDefinitionError(
                f"step {s.name!r}", "its next/ask_user differ from the graph= given", pack=pack
            )
    return profiles, graph


def grants(
    pack: str, profiles: Iterable[StepProfile], contracts: Mapping[str, ToolContract]
) -> tuple[ToolGrant, ...]:
    """One grant per tool, for the steps that call or propose it. A step naming a tool the pack
    did not declare, and a tool no step uses, are both definition errors."""
    uses: dict[str, list[str]] = {}
    for profile in profiles:
        for tool in (*profile.allowed_tools, *profile.proposable_actions):
            if tool not in contracts:
                raise PackDefinitionError(
                    f"step {profile.name!r}",
                    f"it names tool {tool!r}, which is not declared",
                    pack=pack,
                )
            uses.setdefault(tool, []).append(profile.name)
    unused = [name for name in contracts if name not in uses]
    if unused:
        raise PackDefinitionError(
            "tools", f"declared but no step may call or propose them: {unused}", pack=pack
        )
    return tuple(ToolGrant.of(contracts[name], uses[name]) for name in contracts)


def _brief(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
