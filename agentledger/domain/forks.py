"""Forks: a new run that starts from another run's exact state at one of its events, to see
what another model or profile would have done from there (``agentledger fork``).

A fork may start only at a completed-operation boundary, the points where a history may be
compacted (``domain.compaction.can_compact``): no call in flight, no approval pending, no
proposal awaiting authorisation. Its first state is the fold of the original's events up to
that seq, identical but for the run id, and its ``run_forked`` event carries those facts and
their hash, which is the original's state hash at that seq. The origin is frozen into the
fork's manifest. A dry fork's consequential calls are refused by the gate; a fork that is not
dry runs its writes against its pack's sandbox (a copy of the system of record), never against
production records. Who may fork: an operator with the ``forker`` role in the run's tenant,
who signs the fork's origin and work order.

Pure: the ledger's events are read by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from agentledger.domain._model import Frozen
from agentledger.domain.approvals import ApprovalRefusal
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.compaction import can_compact
from agentledger.domain.events import RunEvent, RunStarted
from agentledger.domain.fold import project, state_hash
from agentledger.domain.principal import Principal, tenant_covers
from agentledger.domain.state import WorkingState
from agentledger.domain.workorder import WorkOrder, work_order_digest

FORK_ROLE = "forker"


class ForkOrigin(Frozen):
    """Where a fork starts, as its operator signed it and its manifest freezes it."""

    run_id: str = Field(min_length=1, max_length=200)
    seq: int = Field(ge=1)
    state_hash: str
    """The original's state hash at ``seq``: the fork starts from exactly that state."""
    operator_id: str = Field(min_length=1, max_length=200)
    dry: bool = True
    """Consequential calls are refused; otherwise they run against the pack's sandbox."""


class ForkRefused(ValueError):
    """A fork that cannot start, with its reason code."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


def fork_audience(run_id: str) -> str:
    """The audience of an assertion that its subject starts run ``run_id`` as a fork."""
    return f"agentledger:run:{run_id}:fork"


def fork_digest(work_order: WorkOrder, origin: ForkOrigin) -> str:
    """What a fork's signed start binds: its work order and its origin, exactly."""
    return sha256_hex(
        {"work_order": work_order_digest(work_order), "origin": origin.model_dump(mode="json")}
    )


def fork_point(events: Sequence[RunEvent], seq: int) -> WorkingState:
    """The original's state at ``seq`` (the fold of its events up to it), where a fork may
    start; ``ForkRefused`` when ``seq`` is not one of its events or not a boundary."""
    if not events or not 1 <= seq <= events[-1].seq:
        last = events[-1].seq if events else 0
        raise ForkRefused(
            "fork_point_unknown", f"the run has no event #{seq} (its last is #{last})"
        )
    state = project(e for e in events if e.seq <= seq)
    if state.status != "running":
        raise ForkRefused("fork_point_ended", f"at #{seq} the run had {state.status}")
    if not can_compact(state):
        raise ForkRefused(
            "fork_point_mid_operation",
            f"#{seq} is inside an unfinished operation (in flight: {sorted(state.in_flight)}, "
            f"pending: {sorted(state.pending_approvals)}, proposed: "
            f"{state.proposed_action.tool if state.proposed_action else 'none'}); fork at a "
            "completed-operation boundary",
        )
    return state


def boundaries(events: Sequence[RunEvent]) -> tuple[int, ...]:
    """The seqs of ``events`` a fork may start at, in order."""
    found, draft = [], WorkingState()
    for event in events:
        draft = project((event,), draft)
        if draft.status == "running" and can_compact(draft):
            found.append(event.seq)
    return tuple(found)


def origin_hash(state: WorkingState, origin: ForkOrigin) -> str:
    """The hash of a fork's state addressed as its origin (run id and seq, the two facts a fork
    changes): before the fork's first step, its origin's state hash at the fork point."""
    return state_hash(state.model_copy(update={"run_id": origin.run_id, "last_seq": origin.seq}))


def work_order_problem(fork: WorkOrder, events: Sequence[RunEvent]) -> str | None:
    """Why ``fork`` is not the original's work order with only a fork's overrides (its model,
    its agent profile, or its pack's configuration: an eval's overlay ``PACK+NAME``), or
    ``None``."""
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    if started is None:
        return "the original run has no recorded start"
    pack = started.work_order.pack
    if fork.pack != pack and not fork.pack.startswith(pack + "+"):
        return f"a fork runs its original's pack {pack} (or a configuration of it)"
    changeable = {"model_override", "agent_profile_id", "pack"}
    if fork.model_dump(exclude=changeable) != started.work_order.model_dump(exclude=changeable):
        return "a fork's work order is its original's, with only its model or profile changed"
    return None


def fork_refusal(operator: Principal, order: WorkOrder) -> ApprovalRefusal | None:
    """``None`` when ``operator`` may fork a run of ``order``."""
    if not tenant_covers(operator.tenant_id, order.principal.tenant_id):
        return ApprovalRefusal(
            reason_code="wrong_tenant", detail=f"{operator.user_id} is not in this run's tenant"
        )
    if not operator.has_role(FORK_ROLE):
        return ApprovalRefusal(
            reason_code="missing_role", detail=f"{operator.user_id} lacks the {FORK_ROLE} role"
        )
    return None
