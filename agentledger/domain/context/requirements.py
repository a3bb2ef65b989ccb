"""Which candidates a step cannot do without, and whether the packet still has them.

Required means: every applicable instruction, every item the caller or the item itself names for
this step, and the best-ranked item of each required kind. Optional memory never stands in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agentledger.domain.context.errors import Problem
from agentledger.domain.context.items import ContextItem, Kind
from agentledger.domain.context.packet import Omission, OmissionReason, Section
from agentledger.domain.context.sections import SECTION_OF_KIND, Tally
from agentledger.domain.context.selection import RANKERS, Relevance

_PROBLEM_OF: dict[OmissionReason, Problem] = {
    "expired": "expired",
    "quarantined": "unavailable",
    "revoked": "unavailable",
    "not_published": "unavailable",
    "untrusted_not_allowed": "not_allowed",
    "budget_section_full": "oversize",
}


def named_ids(allowed: Sequence[ContextItem], relevance: Relevance) -> set[str]:
    """Ids the caller requires, plus items that declare themselves required for this step."""
    return set(relevance.required_ids) | {i.id for i in allowed if relevance.explicitly_required(i)}


def required_ids_for(
    relevant: Sequence[ContextItem],
    named: set[str],
    required_kinds: frozenset[Kind],
    omissions: Iterable[Omission],
) -> set[str]:
    required = {i.id for i in relevant if i.kind == "instruction" or i.id in named}
    # A required item replaced by a newer revision or an identical copy passes its duty on.
    required |= {
        o.detail
        for o in omissions
        if o.reason in ("superseded", "duplicate") and o.detail and o.item_id in named
    }
    for kind in sorted(required_kinds):
        of_kind = [i for i in relevant if i.kind == kind]
        if of_kind:  # the section's first pick: diversity never demotes the top item
            required.add(min(of_kind, key=RANKERS[SECTION_OF_KIND[kind].order]).id)
    return required


def check_requirements(
    sections: Sequence[Section],
    allowed: Sequence[ContextItem],
    named: set[str],
    required_kinds: frozenset[Kind],
    tally: Tally,
) -> None:
    """Record a problem for each requirement the packet does not meet."""
    included = {item.id: item.kind for s in sections for item in s.items}
    reported = {p.item for p in tally.problems}
    omitted = {o.item_id: o for o in tally.omissions}
    for kind in sorted(required_kinds):
        if kind in included.values() or _kind_reported(kind, allowed, reported):
            continue
        tally.problem(f"kind:{kind}", "missing")
        for o in tally.omissions:
            if o.kind == kind and o.reason == "expired" and o.item_id not in reported:
                tally.problem(o.item_id, "expired", o.estimated_tokens)
                reported.add(o.item_id)
    for item_id in sorted(named - set(included) - reported):
        _explain(item_id, omitted.get(item_id), included, tally)


def _kind_reported(kind: Kind, allowed: Sequence[ContextItem], reported: set[str]) -> bool:
    return any(i.kind == kind and i.id in reported for i in allowed)


def _explain(
    item_id: str, omission: Omission | None, included: dict[str, Kind], tally: Tally
) -> None:
    if omission is None:
        tally.problem(item_id, "missing")
    elif omission.reason in ("superseded", "duplicate"):
        if omission.detail not in included:
            tally.problem(item_id, "missing", omission.estimated_tokens)
    else:
        problem = _PROBLEM_OF.get(omission.reason, "missing")
        tally.problem(item_id, problem, omission.estimated_tokens)
