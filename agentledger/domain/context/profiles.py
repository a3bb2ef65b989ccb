"""Step profiles: what each model step may see, call and propose (a pack declares its own).

Each step does a different job, so each gets a different packet: a tool-selection step needs the
verified ids and a few read tools, not the returns policy or the customer's language preference.
"""

from __future__ import annotations

from pydantic import Field, JsonValue

from agentledger.domain._model import Frozen
from agentledger.domain.context.budget import Pool
from agentledger.domain.context.items import Kind
from agentledger.domain.context.state_view import StateField
from agentledger.domain.graph import OutputSchemaName
from agentledger.domain.state import WorkingState


class RequirementRule(Frozen):
    """A kind that becomes required once the run has verified a fact (by fact name).

    ``when_values`` narrows it to some values of that fact (empty: any value). Example: an answer
    about an order's eligibility must cite policy evidence once the order's status is verified;
    an order already refunded in full needs no policy to say so.
    """

    kind: Kind
    when_fact: str
    when_values: tuple[JsonValue, ...] = ()

    def applies(self, state: WorkingState) -> bool:
        return any(
            f.name == self.when_fact and (not self.when_values or f.value in self.when_values)
            for f in state.verified_facts.values()
        )


class StepProfile(Frozen):
    """What one model decision point receives.

    Kinds are tuples, not sets, so the profile's JSON (and the manifest hash over it) does not
    depend on string hash randomisation.

    ``allowed_tools`` are callable now; ``proposable_actions`` are consequential tools the step may
    only propose (the runtime authorises and may require approval). ``index_kinds`` are kinds the
    step does not read in full but should know exist (progressive disclosure).
    """

    name: str
    required_kinds: tuple[Kind, ...] = ("instruction",)
    optional_kinds: tuple[Kind, ...] = ()
    conditional_kinds: tuple[RequirementRule, ...] = ()
    index_kinds: tuple[Kind, ...] = ()
    state_fields: tuple[StateField, ...] = ()
    allowed_tools: tuple[str, ...] = ()
    proposable_actions: tuple[str, ...] = ()
    output_schema: OutputSchemaName = "answer"
    inject_current_date: bool = False
    inject_principal_profile: bool = False
    section_tokens: dict[Pool, int] = Field(default_factory=dict)

    def required_kinds_for(self, state: WorkingState) -> frozenset[Kind]:
        extra = {rule.kind for rule in self.conditional_kinds if rule.applies(state)}
        return frozenset(self.required_kinds) | extra

    def kinds_for(self, state: WorkingState) -> frozenset[Kind]:
        """Every kind this step reads in full, given what the run already knows."""
        profile: set[Kind] = {"principal_profile"} if self.inject_principal_profile else set()
        return self.required_kinds_for(state) | set(self.optional_kinds) | profile
