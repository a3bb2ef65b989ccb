"""``AgentPack``: declare a pack, then ``build()`` the runtime's ``Pack`` port object from it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TypedDict, TypeVar, Unpack

from pydantic import BaseModel, ValidationError
from sqlalchemy.engine import Engine

from agentledger.activities.ports import ModelClient, Pack, Sample, ToolImplementation
from agentledger.domain.context import SEED_TOKEN_BUDGET, StepProfile, TokenBudget
from agentledger.domain.errors import ManifestError
from agentledger.domain.graph import ConversationPolicy, StepGraph
from agentledger.domain.manifest import AgentProfile, Instruction, ModelProfile, ToolGrant
from agentledger.domain.planning import GrantPlanner, plan_grants
from agentledger.domain.principal import Principal
from agentledger.domain.tools import ApprovalRule, FactBound, ModelView, Risk
from agentledger.domain.workorder import Budget, WorkGrant, WorkOrder
from agentledger.sdk._errors import PackDefinitionError
from agentledger.sdk._hooks import PackHooks
from agentledger.sdk._scripted import ScriptedModel
from agentledger.sdk._signature import SignatureProblem
from agentledger.sdk._steps import Step, assemble, grants
from agentledger.sdk._tool import Reconcile, SdkTool, ToolOptions, declare_tool
from agentledger.sdk._webhook import Webhook

_NO_APPROVAL = ApprovalRule(kind="never")
_ALWAYS = ApprovalRule(kind="always")
F = TypeVar("F", bound=Callable[..., object])

DEFAULT_TOKEN_BUDGET = SEED_TOKEN_BUDGET
"""A 12,000-token packet in the builder's five pools (the support pack's table)."""


class ToolSettings(TypedDict, total=False):
    """What a tool decorator may state besides its description, scope and reconcile."""

    name: str
    version: str
    resource_argument: str
    fact_bounds: tuple[FactBound, ...]
    model_view: ModelView
    user_view: str
    timeout_seconds: float
    heartbeat_seconds: float
    arguments: type[BaseModel]
    """The tool's own input model, taken whole (``fn(ctx, args: M)``), instead of one derived
    from the parameters: for cross-field checks, or a schema recorded runs have pinned."""


class AgentPack(PackHooks):
    """A pack under declaration. Tools, the system of record and the work-order hook are added
    with decorators; ``build()`` checks everything together and returns the ``Pack``.

    ``steps`` are ``step()`` results (their graph is drawn from them, entry: the first or
    ``entry``), or ``StepProfile``s with an explicit ``graph``. ``models`` are the model clients
    the pack ships (keyed by provider; a ``ScriptedModel`` by its name).
    """

    def __init__(
        self,
        name: str,
        *,
        version: str,
        objective: str,
        instructions: Sequence[str | Instruction],
        model: ModelProfile,
        steps: Sequence[Step | StepProfile],
        graph: StepGraph | None = None,
        entry: str | None = None,
        conversation: ConversationPolicy | None = None,
        models: Mapping[str, ModelClient] | Sequence[ScriptedModel] = (),
        principals: Sequence[Principal] = (),
        token_budget: TokenBudget = DEFAULT_TOKEN_BUDGET,
        budget: Budget | None = None,
        profile_id: str | None = None,
        policy_bundle: str | None = None,
        evaluation_profile: str = "none",
        approval_ttl_seconds: int = 24 * 3600,
        sample: Sample | None = None,
        planner: GrantPlanner | None = None,
        agent_version: str | None = None,
    ) -> None:
        self.name, self.version, self.objective = name, version, objective
        self.profile_id = profile_id or name
        self.policy_bundle = policy_bundle or f"{name}-policies"
        self._instructions = tuple(_instruction(i, n) for n, i in enumerate(instructions, 1))
        self._model, self._steps, self._graph, self._entry = model, tuple(steps), graph, entry
        self._conversation, self._principals, self._planner = conversation, principals, planner
        self._models, self._sample = _keyed(models), sample
        self._token_budget, self._budget = token_budget, budget or Budget()
        self._evaluation, self._approval_ttl = evaluation_profile, approval_ttl_seconds
        self._tools: dict[str, SdkTool] = {}
        self._install: Callable[[Engine], None] = _no_install
        self._seed: Callable[[Engine], bool] = _no_seed
        self._agent_version = agent_version or f"{name}-{version}"  # the profile's, recorded
        self._webhooks: dict[str, Webhook] = {}

    # ------------------------------------------------------------------ tools
    def read_tool(
        self,
        *,
        description: str,
        required_scope: str,
        risk: Risk = "low",
        approval: ApprovalRule = _NO_APPROVAL,
        **settings: Unpack[ToolSettings],
    ) -> Callable[[F], F]:
        """Declare a read: retried freely, no idempotency key, never reconciled."""
        options = ToolOptions(
            description=description,
            required_scope=required_scope,
            scope="read",
            risk=risk,
            approval=approval,
            **settings,
        )
        return self._decorator(options)

    def write_tool(
        self,
        *,
        description: str,
        required_scope: str,
        reconcile: Reconcile | None,
        risk: Risk = "consequential",
        approval: ApprovalRule = _ALWAYS,
        **settings: Unpack[ToolSettings],
    ) -> Callable[[F], F]:
        """Declare a write: it runs under the runtime's idempotency key (``ctx.key``), which the
        system of record must honour. ``reconcile(ctx)`` reads the record by that key after an
        unknown outcome; ``None`` states it cannot (one attempt; an unknown outcome stays in
        doubt for a person). Consequential by default, and approved ``always`` by default."""
        options = ToolOptions(
            description=description,
            required_scope=required_scope,
            scope="write",
            risk=risk,
            approval=approval,
            reconcile=reconcile,
            **settings,
        )
        return self._decorator(options)

    def _decorator(self, options: ToolOptions) -> Callable[[F], F]:
        def register(function: F) -> F:
            name = options.name or function.__name__
            self._check_open(f"tool {name!r}")
            try:
                tool = declare_tool(function, options)
            except SignatureProblem as exc:
                raise PackDefinitionError(f"tool {name!r}", str(exc), pack=self.name) from exc
            if name in self._tools:
                raise PackDefinitionError(f"tool {name!r}", "declared twice", pack=self.name)
            self._tools[name] = tool
            return function

        return register

    @property
    def tools(self) -> Mapping[str, SdkTool]:
        return MappingProxyType(self._tools)

    # ------------------------------------------------------------------ build
    def build(self) -> Pack:
        """The runtime's ``Pack``; raises ``PackDefinitionError`` for anything that cannot run.
        Built once: later calls return the same object, later declarations are refused."""
        if self._built is not None:
            return self._built
        profiles, graph = assemble(self.name, self._steps, self._graph, self._entry)
        contracts = {name: tool.contract for name, tool in self._tools.items()}
        tool_grants = grants(self.name, profiles, contracts)
        self._check_scripts(graph)
        tools: dict[str, ToolImplementation] = dict(self._tools)
        self._built = Pack(
            name=self.name,
            profile=self._profile(profiles, graph, tool_grants),
            tools=MappingProxyType(tools),
            principals=tuple(self._principals),
            models=MappingProxyType(dict(self._models)),
            install=self._install,
            seed=self._seed,
            make_work_order=self.make_work_order,
            policy_version=self._policy_version or self._default_policy_version,
            sample=self._sample,
            webhooks=MappingProxyType(dict(self._webhooks)),
            plan_grants=self._planned_grants if self._planner is not None else None,
            sandbox=self._sandbox,
        )
        return self._built

    def _profile(
        self,
        profiles: tuple[StepProfile, ...],
        graph: StepGraph,
        tool_grants: tuple[ToolGrant, ...],
    ) -> AgentProfile:
        try:
            return AgentProfile(
                profile_id=self.profile_id,
                agent_version=self._agent_version,
                instructions=self._instructions,
                model=self._model,
                tool_grants=tool_grants,
                step_profiles=profiles,
                token_budget=self._token_budget,
                policy_bundle=self.policy_bundle,
                budgets=self._budget,
                evaluation_profile=self._evaluation,
                approval_ttl_seconds=self._approval_ttl,
                step_graph=graph,
                conversation=self._conversation,
            )
        except (ValidationError, ManifestError) as exc:
            raise PackDefinitionError("profile", str(exc), pack=self.name) from exc

    def _check_scripts(self, graph: StepGraph) -> None:
        for model in self._models.values():
            if isinstance(model, ScriptedModel):
                unscripted = [s for s in graph.names() if s not in model.steps]
                if unscripted:
                    raise PackDefinitionError(
                        f"scripted model {model.name!r}",
                        f"it has no script for steps {unscripted}",
                        pack=self.name,
                    )

    def _planned_grants(self, order: WorkOrder) -> tuple[WorkGrant, ...] | None:
        return self.make_work_order(order.request_text, order.principal).grants

    def make_work_order(self, request: str, principal: Principal) -> WorkOrder:
        """The work order for ``request``: its references resolved, its grants planned by the
        pack's planner (when it has one)."""
        return self.planned_work_order(request, principal, self._planner)

    def planned_work_order(
        self, request: str, principal: Principal, planner: GrantPlanner | None
    ) -> WorkOrder:
        """The work order with the grants ``planner`` proposed (any ``GrantPlanner``, a model's
        too; ``None``: the profile's grants). Needs the built pack."""
        references = dict(self._references(request, principal)) if self._references else {}
        order = WorkOrder(
            objective=self.objective,
            request_text=request,
            principal=principal,
            pack=self.name,
            agent_profile_id=self.profile_id,
            references=references,
        )
        if planner is None:
            return order
        return plan_grants(order, self.build().profile, planner)

    def _default_policy_version(self, engine: Engine) -> str:
        return f"{self.policy_bundle}:{self.version}"


def _instruction(item: str | Instruction, number: int) -> Instruction:
    return item if isinstance(item, Instruction) else Instruction(id=f"instr:{number}", text=item)


def _keyed(models: Mapping[str, ModelClient] | Sequence[ScriptedModel]) -> dict[str, ModelClient]:
    """Model clients by provider (a scripted model by its name)."""
    return dict(models) if isinstance(models, Mapping) else {m.name: m for m in models}


def _no_install(engine: Engine) -> None:
    """A pack whose tools keep no records of their own."""


def _no_seed(engine: Engine) -> bool:
    return False
