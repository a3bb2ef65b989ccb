"""The context compiler: selects exactly what one model call sees, and records what it left out.

Pure and deterministic: candidates are gathered by activities and passed in; ``now`` is an
argument; the only state is a token-count memo that cannot change a result.
"""

from agentledger.domain.context.budget import (
    POOLS,
    SEED_TOKEN_BUDGET,
    Overflow,
    Pool,
    SectionBudget,
    TokenBudget,
)
from agentledger.domain.context.builder import build_context
from agentledger.domain.context.candidates import candidates_from_state
from agentledger.domain.context.errors import InsufficientContext, MissingContext, Problem
from agentledger.domain.context.items import (
    KIND_CATEGORY,
    KIND_TRUST,
    TRUST_RANK,
    Category,
    ContextItem,
    Kind,
    Lifecycle,
    Sensitivity,
    TrustLevel,
)
from agentledger.domain.context.packet import (
    OUTPUT_SCHEMAS,
    Conflict,
    ContextPacket,
    Omission,
    OmissionReason,
    OutputSchema,
    PacketItem,
    Section,
    SectionName,
    ToolDefinition,
    cited_ids_present,
    decision_schema,
)
from agentledger.domain.context.profiles import RequirementRule, StepProfile
from agentledger.domain.context.render import render_packet
from agentledger.domain.context.state_view import StateField, state_view
from agentledger.domain.context.tokens import (
    ApproxTokenCounter,
    BpeTokenCounter,
    TokenCounter,
    counter_for_encoding,
    default_counter,
    model_counter,
)
from agentledger.domain.context.views import model_view, user_view
from agentledger.domain.graph import OutputSchemaName

__all__ = [
    "KIND_CATEGORY",
    "KIND_TRUST",
    "OUTPUT_SCHEMAS",
    "POOLS",
    "SEED_TOKEN_BUDGET",
    "TRUST_RANK",
    "ApproxTokenCounter",
    "BpeTokenCounter",
    "Category",
    "Conflict",
    "ContextItem",
    "ContextPacket",
    "InsufficientContext",
    "Kind",
    "Lifecycle",
    "MissingContext",
    "Omission",
    "OmissionReason",
    "OutputSchema",
    "OutputSchemaName",
    "Overflow",
    "PacketItem",
    "Pool",
    "Problem",
    "RequirementRule",
    "Section",
    "SectionBudget",
    "SectionName",
    "Sensitivity",
    "StateField",
    "StepProfile",
    "TokenBudget",
    "TokenCounter",
    "ToolDefinition",
    "TrustLevel",
    "build_context",
    "candidates_from_state",
    "cited_ids_present",
    "counter_for_encoding",
    "decision_schema",
    "default_counter",
    "model_counter",
    "model_view",
    "render_packet",
    "state_view",
    "user_view",
]
