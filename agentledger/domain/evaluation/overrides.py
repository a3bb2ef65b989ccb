"""A configuration to evaluate: a pack's profile with typed overrides (seed 003).

An override file names a pack and changes what a manifest freezes: the model, the instructions,
the step graph, the run budgets, which of the pack's tool grants stay, and the context budget's
pools. ``apply_override`` returns a new ``AgentProfile`` (its ``agent_version`` labelled with
the configuration's name), so the manifests ``prepare_run`` freezes from it hash differently
for every field that differs. Overrides only ever narrow grants: a tool the pack does not grant
is an error, never a new grant.
"""

from __future__ import annotations

import re

from pydantic import Field

from agentledger.domain._model import Frozen
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.context.budget import Pool
from agentledger.domain.errors import DomainError
from agentledger.domain.graph import StepGraph
from agentledger.domain.manifest import AgentProfile, Instruction, ModelProfile

NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


class EvalInputError(DomainError):
    """A suite or configuration that cannot be evaluated as written."""

    code = "eval_input_invalid"


class UnknownTool(EvalInputError):
    code = "unknown_tool"


class IdenticalConfigurations(EvalInputError):
    """Two configurations that freeze the same manifest: comparing them proves nothing."""

    code = "identical_configurations"


class BudgetOverride(Frozen):
    steps: int | None = Field(default=None, ge=1)
    tool_calls: int | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=1)
    wall_seconds: int | None = Field(default=None, ge=1)


class ContextOverride(Frozen):
    """The context budget: pools resized, the application limit moved (re-validated)."""

    application_limit: int | None = Field(default=None, ge=1)
    sections: dict[Pool, int] = Field(default_factory=dict)


class ProfileOverride(Frozen):
    model: ModelProfile | None = None
    instructions: tuple[Instruction, ...] | None = None
    """Replaces the profile's instructions (``None``: kept)."""
    extra_instructions: tuple[Instruction, ...] = ()
    step_graph: StepGraph | None = None
    budgets: BudgetOverride = Field(default_factory=BudgetOverride)
    tool_grants: tuple[str, ...] | None = None
    """The pack's grants to keep, by tool name (``None``: all of them)."""
    context: ContextOverride = Field(default_factory=ContextOverride)


class Pricing(Frozen):
    """What a million tokens cost, for the report's cost column (an assumption of the eval,
    labelled as such: a ``ModelProfile`` declares no price)."""

    currency: str = "USD"
    input_per_million: float = Field(default=0.0, ge=0)
    output_per_million: float = Field(default=0.0, ge=0)

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        spent = input_tokens * self.input_per_million + output_tokens * self.output_per_million
        return spent / 1_000_000


class EvalConfig(Frozen):
    """One side of a comparison, as its file says it."""

    name: str = Field(pattern=NAME.pattern)
    pack: str
    description: str = ""
    overrides: ProfileOverride = Field(default_factory=ProfileOverride)
    pricing: Pricing = Field(default_factory=Pricing)


def apply_override(profile: AgentProfile, config: EvalConfig) -> AgentProfile:
    """The profile ``config`` describes, re-validated (a graph naming unknown steps fails)."""
    o = config.overrides
    update: dict[str, object] = {"agent_version": f"{profile.agent_version}+{config.name}"}
    if o.model is not None:
        update["model"] = o.model
    instructions = profile.instructions if o.instructions is None else o.instructions
    update["instructions"] = instructions + o.extra_instructions
    if o.step_graph is not None:
        update["step_graph"] = o.step_graph
    update["budgets"] = profile.budgets.model_copy(update=o.budgets.model_dump(exclude_none=True))
    if o.tool_grants is not None:
        update["tool_grants"] = _kept_grants(profile, o.tool_grants)
    update["token_budget"] = _context(profile, o.context)
    try:
        return AgentProfile.model_validate({**profile.model_dump(), **update})
    except ValueError as exc:
        raise EvalInputError(f"configuration {config.name!r}: {exc}") from None


def _kept_grants(profile: AgentProfile, names: tuple[str, ...]) -> tuple[object, ...]:
    granted = {g.name: g for g in profile.tool_grants}
    unknown = sorted(set(names) - set(granted))
    if unknown:
        raise UnknownTool(
            f"tool grants {unknown} are not granted by profile {profile.profile_id} "
            f"(it grants {', '.join(sorted(granted))}); an override can only narrow grants"
        )
    return tuple(g.model_dump() for g in profile.tool_grants if g.name in names)


def _context(profile: AgentProfile, o: ContextOverride) -> object:
    budget = profile.token_budget.model_dump()
    if o.application_limit is not None:
        budget["application_limit"] = o.application_limit
    for pool, tokens in o.sections.items():
        budget["sections"][pool]["tokens"] = tokens
    return budget


def configuration_hash(profile: AgentProfile) -> str:
    """The digest of everything a manifest freezes from this profile, its label aside: two
    configurations with equal hashes would freeze identical manifests for every work order."""
    return sha256_hex(profile.model_dump(mode="json", exclude={"agent_version"}))


def check_distinct(a: AgentProfile, b: AgentProfile, names: tuple[str, str]) -> None:
    if configuration_hash(a) == configuration_hash(b):
        raise IdenticalConfigurations(
            f"configurations {names[0]!r} and {names[1]!r} differ in nothing their manifests "
            "freeze (model, instructions, step graph, budgets, grants, context budget): "
            "comparing them proves nothing; change one of them"
        )
