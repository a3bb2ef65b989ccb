"""``fork_point`` and a fork's preparation: the origin checked against the original's ledger
(``domain.forks``), never taken on the starter's word, and its state read from there."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentledger.activities.messages import ForkPointInput
from agentledger.activities.ports import Pack
from agentledger.activities.run._base import RunBase
from agentledger.domain.fold import state_hash
from agentledger.domain.forks import ForkOrigin, ForkRefused, fork_point, work_order_problem
from agentledger.domain.manifest import AgentProfile
from agentledger.domain.state import WorkingState
from agentledger.domain.workorder import WorkOrder


class Forking(RunBase):
    @activity.defn(name="fork_point")
    def fork_point(self, params: ForkPointInput) -> WorkingState:
        origin = params.origin
        state = self._point(origin)
        if state_hash(state) != origin.state_hash:
            raise _refused(
                "fork_state_mismatch",
                f"run {origin.run_id}'s state at #{origin.seq} is not the one the fork was "
                "signed for",
            )
        return state

    def _fork_profile(self, pack: Pack, work_order: WorkOrder, origin: ForkOrigin) -> AgentProfile:
        """The profile a fork runs under (its own, or another of its pack's), once its work
        order is shown to be its original's with only a fork's overrides."""
        events = self._ledger.read(origin.run_id)
        problem = work_order_problem(work_order, events) if events else "no such run"
        if problem is not None:
            raise _refused("fork_origin_unknown", f"not a fork of {origin.run_id}: {problem}")
        if not origin.dry and pack.sandbox is None:
            raise _refused(
                "fork_without_sandbox",
                f"pack {pack.name} has no sandbox for a fork's calls; fork it dry",
            )
        wanted = work_order.agent_profile_id
        if wanted == pack.profile.profile_id:
            return pack.profile
        profile = pack.profiles.get(wanted)
        if profile is None:
            raise _refused("unknown_profile", f"pack {pack.name} has no agent profile {wanted!r}")
        return profile

    def _point(self, origin: ForkOrigin) -> WorkingState:
        try:
            return fork_point(self._ledger.read(origin.run_id), origin.seq)
        except ForkRefused as exc:
            raise _refused(exc.code, str(exc)) from None


def _refused(code: str, detail: str) -> ApplicationError:
    """Final: the ledger answers the same on every retry; the fork is recorded as refused."""
    return ApplicationError(detail, type=code, non_retryable=True)
