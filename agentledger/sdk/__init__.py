"""agentledger.sdk — write a pack of your own: one import, typed, checked when declared.

A pack is an agent profile, its tools, its step graph, its policies, its system of record and
its models. ``AgentPack(...).build()`` returns the runtime's ``Pack`` (the same port object the
built-in packs are), so nothing in the runtime changes to run it. Register it as every
installed pack is, by an entry point of its distribution (in its ``pyproject.toml``:
``[project.entry-points."agentledger.packs"] name = "module:PACK"``), then ``pip install`` it
(``AGENTLEDGER_PACKS=name=module:PACK`` is for ad hoc use). A running worker serves the packs
installed when it started: restart the worker after installing one (a run of a pack installed
since fails at once, saying so).

Declaring a pack::

    from decimal import Decimal
    from pydantic import BaseModel
    from agentledger.sdk import (AgentPack, ConversationPolicy, ScriptedModel, ToolContext,
                                ToolResult, step)

    SCRIPT = ScriptedModel("billing-script", {"classify": ..., "resolve": ...})
    pack = AgentPack(
        "billing", version="0.1.0", objective="resolve a billing request",
        instructions=["Verify the subscription with a tool before acting on it."],
        model=SCRIPT.profile, models=[SCRIPT],
        steps=[
            step("classify", tools=["get_subscription"], next=["resolve"], ask_user=True),
            step("resolve", proposes=["issue_credit"]),      # no `next`: it answers
        ],
        conversation=ConversationPolicy(idle_timeout_seconds=3 * 24 * 3600),
    )

    class Subscription(BaseModel): ...

    @pack.read_tool(description="Read one of the customer's subscriptions.",
                    required_scope="billing:read", resource_argument="subscription_id")
    def get_subscription(ctx: ToolContext, subscription_id: str) -> ToolResult[Subscription]:
        ...  # ctx.engine, ctx.principal, ctx.now; ctx.facts(...), ctx.resource(...)

    @pack.write_tool(description="Credit the unused part of this period.",
                     required_scope="credits:request", reconcile=find_credit,
                     resource_argument="subscription_id")
    def issue_credit(ctx: ToolContext, subscription_id: str, amount: Decimal) -> Credit: ...
        # keyed on ctx.key; find_credit(ctx) returns the stored credit for ctx.key, or None

    pack.install(create_tables); pack.seed(insert_samples); pack.references(find_ids)
    PACK = pack.build()

Tools. The input schema comes from the parameters after ``ctx`` (each needs a type pydantic can
put in a JSON schema; ``Decimal`` is a JSON number that arrives exact); the output schema from
the return annotation: ``M``, ``ToolResult[M]``, either ``| ToolFailure``, with ``M`` a pydantic
model. Return ``ToolFailure(code, message)`` for an expected failure. Reads default to risk
``low``; writes to ``consequential`` with ``ApprovalRule(kind="always")``, and must state
``reconcile=`` (a function, or ``None`` for a write nothing can reconcile). ``model_view=``
(``ModelView``) slims what the model sees; ``user_view=`` is the people's one-line template.
``arguments=M`` gives a tool an input model you write (cross-field validators, a schema recorded
runs pinned): the function then takes it whole, ``fn(ctx: ToolContext, args: M)``; the support
pack's tools are declared so. A write that reads what it checks before it writes opens its
transaction on ``ctx.write_engine()`` and locks the record it checks (two runs, two keys, one
record). ``planner=`` (a ``GrantPlanner``) bounds each work order's grants from its request.

Steps. ``step(name, next=..., tools=..., proposes=..., ask_user=...)``: a step with ``next``
decides the next action (call a tool, ``proceed`` to a next step, ``ask_user``), one without
answers. The graph the steps draw is checked when built (reachable, no dead ends, asking needs a
``ConversationPolicy``); there is no implicit default graph.

Models. ``ScriptedModel(name, {step: fn(PacketView) -> decision})`` is a deterministic model
for tests and demos; build decisions with ``call_tool``, ``proceed``, ``ask_user``, ``answer``.

Claims. An answer reports an effect only through a receipt about the same resource::

    sub = view.reference("subscription_id")
    credited = view.succeeded("issue_credit", subscription_id=sub)   # not succeeded(tool) alone
    if credited is not None:
        return answer("Your credit is on its way.", confirms=[credited])

Each confirmed receipt becomes a claim (operation, tool, resource); the runtime refuses the
answer (``decision_rejected``, ``unsupported_claim``) unless a succeeded receipt of that tool
about that resource (the contract's ``resource_argument``) supports it, and delivers it to the
customer as the receipt's own ``user_view`` line. Give every write tool a ``resource_argument``
so its effects can be claimed. What the runtime cannot check is the prose: ``answer``'s text is
delivered as written, so a sentence that states an effect without ``confirms`` is unverified
(write "I have asked for …", never "… is done", unless a receipt confirms it).

Webhooks. ``@pack.webhook("helpdesk")`` on ``def f(payload: Model) -> MappedOrder`` maps a
signed delivery to ``POST /hooks/<pack>/helpdesk`` into a run's request and requester (raise
``PayloadRejected(reason)`` to refuse one); a pack built without the SDK gives
``Pack(webhooks={source: webhook(source, f)})``. See docs/webhooks.md.

Forks. ``agentledger fork RUN --at SEQ`` starts a run from another's state at one of its
events. ``pack.sandbox(copy_tables(customers, orders, refunds))`` gives forks a copy of the
system of record to run their writes against (made by ``install``, copied the first time a fork
writes: a schema of its own on PostgreSQL, a file beside the ledger on SQLite; reads see
production as it is now); a pack without one forks dry only (every write refused).

Schema. A pack that owns tables gives them an Alembic history: a ``migrations`` directory
beside them (``env.py`` calling ``run_pack_migrations()``, ``script.py.mako``, ``versions/``),
and ``@pack.install`` calls ``migrate_pack(engine, name, migrations, metadata)``. Every worker
start and ``agentledger migrate`` bring the tables to the newest revision, each pack with a
version table of its own (``<pack>_alembic_version``). Let the first revision create the tables
only where they are missing, so a database made before is taken over as it is. The support and
billing packs show both.

Testing. ``agentledger.sdk.testing`` is what a pack's own tests need: ``memory_system(PACK)``
(its system of record in memory), ``run_tool``/``reconcile_tool`` (a tool called as the runtime
calls it), ``packet``/``packet_view`` (the packet a step reads) and ``decide`` (the pack's model
on it).

Errors. Anything that cannot run raises ``PackDefinitionError`` where it is declared or at
``build()``, and nothing of it is registered.
"""

from agentledger.activities.pack_schemas import migrate_pack
from agentledger.activities.pack_schemas import run_env as run_pack_migrations
from agentledger.activities.ports import (
    ModelClient,
    ModelReply,
    ModelUsage,
    Pack,
    Sample,
    ToolCall,
    ToolOutput,
)
from agentledger.domain.context import (
    ContextPacket,
    PacketItem,
    RequirementRule,
    Section,
    SectionBudget,
    StepProfile,
    TokenBudget,
)
from agentledger.domain.graph import ConversationPolicy, StepGraph, StepNode
from agentledger.domain.manifest import Instruction, ModelProfile
from agentledger.domain.planning import GrantPlanner, PlanningInput
from agentledger.domain.principal import Principal
from agentledger.domain.tools import (
    ApprovalRule,
    EvidencePassage,
    FactBound,
    ModelView,
    ResourceRef,
    RoleAbove,
    VerifiedFact,
)
from agentledger.domain.webhooks import MappedOrder, PayloadRejected
from agentledger.domain.workorder import ArgumentBound, Budget, WorkGrant, WorkOrder
from agentledger.sdk._context import MissingIdempotencyKey, ToolContext, ToolFailure, ToolResult
from agentledger.sdk._errors import PackDefinitionError
from agentledger.sdk._hooks import copy_tables
from agentledger.sdk._pack import DEFAULT_TOKEN_BUDGET, AgentPack, ToolSettings
from agentledger.sdk._scripted import (
    PacketView,
    ScriptedModel,
    Turn,
    answer,
    ask_user,
    call_tool,
    proceed,
)
from agentledger.sdk._steps import DEFAULT_SEES, DEFAULT_STATE, Step, step
from agentledger.sdk._tool import SdkTool
from agentledger.sdk._webhook import Webhook, webhook

__all__ = [
    "DEFAULT_SEES",
    "DEFAULT_STATE",
    "DEFAULT_TOKEN_BUDGET",
    "AgentPack",
    "ApprovalRule",
    "ArgumentBound",
    "Budget",
    "ContextPacket",
    "ConversationPolicy",
    "EvidencePassage",
    "FactBound",
    "GrantPlanner",
    "Instruction",
    "MappedOrder",
    "MissingIdempotencyKey",
    "ModelClient",
    "ModelProfile",
    "ModelReply",
    "ModelUsage",
    "ModelView",
    "Pack",
    "PackDefinitionError",
    "PacketItem",
    "PacketView",
    "PayloadRejected",
    "PlanningInput",
    "Principal",
    "RequirementRule",
    "ResourceRef",
    "RoleAbove",
    "Sample",
    "ScriptedModel",
    "SdkTool",
    "Section",
    "SectionBudget",
    "Step",
    "StepGraph",
    "StepNode",
    "StepProfile",
    "TokenBudget",
    "ToolCall",
    "ToolContext",
    "ToolFailure",
    "ToolOutput",
    "ToolResult",
    "ToolSettings",
    "Turn",
    "VerifiedFact",
    "Webhook",
    "WorkGrant",
    "WorkOrder",
    "answer",
    "ask_user",
    "call_tool",
    "copy_tables",
    "migrate_pack",
    "proceed",
    "run_pack_migrations",
    "step",
    "webhook",
]
