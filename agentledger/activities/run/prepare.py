"""``prepare_run``, ``resume_run`` and ``activity_queues``: an attempt's manifest frozen (or a
continuation's taken up once the ledger vouches for it), and the queues this worker serves."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentledger.activities.directory import check_requester
from agentledger.activities.doors import ScheduleJournal, schedule_problem
from agentledger.activities.messages import ActivityQueues, PrepareRunInput, ResumeInput
from agentledger.activities.models import chosen_model
from agentledger.activities.ports import Pack
from agentledger.activities.run.fork import Forking
from agentledger.domain.errors import ManifestError
from agentledger.domain.events import HandoffRequested, RunStarted
from agentledger.domain.fold import project, state_hash
from agentledger.domain.handoffs import HandoffOrigin, origin_problem
from agentledger.domain.manifest import AgentProfile, ExecutionManifest, resolve_manifest
from agentledger.domain.mcp import McpServerPin
from agentledger.domain.planning import PlanRefused, narrowing_problem
from agentledger.domain.workorder import WorkGrant, WorkOrder, work_order_digest


class Preparing(Forking):
    @activity.defn(name="prepare_run")
    def prepare_run(self, params: PrepareRunInput) -> ExecutionManifest:
        check_requester(self._ledger, params.work_order.principal)
        if params.schedule_id is not None:
            self._check_schedule(params.schedule_id, params.work_order)
        pack = self._pack(params.work_order.pack)
        profile, override = self._profile(pack, params), params.work_order.model_override
        if override is not None:
            # A provider configured on this worker, by name: never a run starter's URL or key.
            profile = profile.model_copy(update={"model": chosen_model(override, self._models)})
        try:
            manifest = self._resolved(pack, profile, params)
        except ManifestError as exc:
            # Final: the same profile resolves the same way on every retry; recorded as refused.
            raise ApplicationError(str(exc), type=exc.code, non_retryable=True) from None
        self._ledger.put_manifest(manifest)
        return manifest

    def _profile(self, pack: Pack, params: PrepareRunInput) -> AgentProfile:
        """The pack's profile; for a child run, the one its handoff contract names; for a fork,
        the one its work order names."""
        if params.fork is not None:
            return self._fork_profile(pack, params.work_order, params.fork)
        if params.handoff_origin is None:
            return pack.profile
        self._check_origin(params.run_id, params.work_order, params.handoff_origin)
        child = pack.profiles.get(params.work_order.agent_profile_id)
        if child is None:
            raise ApplicationError(
                f"pack {pack.name} has no agent profile {params.work_order.agent_profile_id!r}",
                type="handoff_contract_invalid",
                non_retryable=True,
            )
        return child

    def _check_origin(self, run_id: str, work_order: WorkOrder, origin: HandoffOrigin) -> None:
        """A child run is prepared only for a delegation its parent's ledger holds."""
        parent = self._ledger.read_kinds(origin.parent_run_id, "run_started", "handoff_requested")
        requested = next(
            (e for e in parent if isinstance(e, HandoffRequested) and e.child_run_id == run_id),
            None,
        )
        manifest = self._ledger.get_manifest(requested.manifest_hash) if requested else None
        problem = origin_problem(
            origin,
            work_order,
            manifest.handoff(origin.handoff) if manifest else None,
            next((e.work_order for e in parent if isinstance(e, RunStarted)), None),
            requested,
        )
        if problem is not None:
            raise ApplicationError(
                f"{run_id} is not a delegation: {problem}",
                type="handoff_origin_unknown",
                non_retryable=True,
            )

    def _check_schedule(self, schedule_id: str, work_order: WorkOrder) -> None:
        """A firing is prepared only for a live schedule made with exactly this work order."""
        problem = schedule_problem(
            ScheduleJournal(self._ledger.engine).history(schedule_id), work_order
        )
        if problem is not None:
            raise ApplicationError(
                f"not a firing of schedule {schedule_id[:200]}: {problem}",
                type="schedule_unknown",
                non_retryable=True,
            )

    def _planned(self, pack: Pack, params: PrepareRunInput) -> tuple[WorkGrant, ...] | None:
        """The grants the pack plans from the work order's request and requester, narrowed
        by those it was sent with; ``None`` for a child run (its handoff's authority bounds
        it) and for a pack that plans none."""
        sent = params.work_order
        if params.handoff_origin is not None or pack.plan_grants is None:
            return None
        try:
            planned = pack.plan_grants(sent)
        except (PlanRefused, ValueError, LookupError) as exc:  # the same on every retry
            raise ApplicationError(str(exc), type="plan_refused", non_retryable=True) from None
        if planned is None:
            return None
        problem = narrowing_problem(sent.grants, planned)
        if problem is not None:
            raise ApplicationError(
                f"grants refused: {problem}", type="grants_wider_than_planned", non_retryable=True
            )
        return planned if sent.grants is None else sent.grants

    def _resolved(
        self, pack: Pack, profile: AgentProfile, params: PrepareRunInput
    ) -> ExecutionManifest:
        return resolve_manifest(
            profile,
            attempt_id=f"{params.run_id}/{activity.info().workflow_run_id}",
            work_order_digest=work_order_digest(params.work_order),
            memory_snapshot="none",
            policy_version=pack.policy_version(self._ledger.engine),
            contracts=pack.contracts,
            # Each MCP server is discovered at attempt start and its identity, protocol,
            # capabilities and tool-list digest frozen here; calls are checked against them.
            mcp_pins=_pinned_servers(profile),
            # Decisions must be signed with one of these; a later key rotation moves no run.
            trusted_keys=self._trusted_keys,
            handoff_origin=params.handoff_origin,
            work_order_grants=self._planned(pack, params),
            fork_origin=params.fork,
            notify_channels=(
                self._notices.channels_for(params.work_order.principal.tenant_id)
                if self._notices is not None
                else ()
            ),
        )

    @activity.defn(name="activity_queues")
    def activity_queues(self) -> ActivityQueues:
        return self._queues

    @activity.defn(name="resume_run")
    def resume_run(self, params: ResumeInput) -> ExecutionManifest:
        manifest = self._ledger.get_manifest(params.manifest_hash)
        if manifest is None or not manifest.attempt_id.startswith(f"{params.run_id}/"):
            raise _not_this_run(
                f"manifest {params.manifest_hash[:16]} was not frozen for run {params.run_id}"
            )
        if state_hash(project(self._ledger.read_latest(params.run_id))) != params.state_hash:
            raise _not_this_run(
                f"the state carried across continue-as-new is not the fold of {params.run_id}'s "
                "ledger"
            )
        return manifest


def _not_this_run(problem: str) -> ApplicationError:
    return ApplicationError(problem, type="carried_state_mismatch", non_retryable=True)


def _pinned_servers(profile: AgentProfile) -> tuple[McpServerPin, ...]:
    """Each of the profile's MCP servers, discovered and pinned. The MCP client is imported by
    the first run that has one: the SDK (its server side included) costs a worker tens of MB
    that workers whose runs never use MCP need not carry."""
    if not profile.mcp_servers:
        return ()
    from agentledger.activities.mcp import discover, pin_server

    return tuple(pin_server(discover(c), c) for c in profile.mcp_servers)
