"""A runtime, a client and a worker to drive support runs with: shared by tests and benchmarks."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from temporalio.client import Client, WorkflowHandle

from agentledger.activities.ledger import ApprovalRow
from agentledger.app import runs as client_ops
from agentledger.app.config import Settings
from agentledger.app.identity import Issuer, issuer_for
from agentledger.app.registry import get_pack
from agentledger.app.runtime import Runtime
from agentledger.domain.events import RunEvent
from agentledger.domain.principal import Principal
from agentledger.domain.state import WorkingState
from agentledger.workflows import RunOutcome


@dataclass
class Harness:
    """A runtime, a client and an in-process worker on a private task queue."""

    runtime: Runtime
    client: Client
    settings: Settings

    @cached_property
    def issuer(self) -> Issuer:
        """The issuer the worker's runs trust (the stack's local one): decisions are signed."""
        return issuer_for(self.settings)

    def principal(self, user_id: str) -> Principal:
        found = self.runtime.ledger.get_principal(user_id)
        assert found is not None, user_id
        return found

    async def start(self, request: str, user: str = "usr_73") -> str:
        work_order = get_pack("support").make_work_order(request, self.principal(user))
        handle = await client_ops.start_run(
            self.client, self.settings.task_queue, work_order, issuer=self.issuer
        )
        return handle.id

    async def chatting(self, pack: str = "chat") -> WorkflowHandle[Any, RunOutcome]:
        """A chat run started for its customer and waiting on their first reply."""
        from bench._chat_pack import CUSTOMER

        order = get_pack(pack).make_work_order("I'd like to pick a colour", CUSTOMER)
        handle = await client_ops.start_run(
            self.client, self.settings.task_queue, order, issuer=self.issuer
        )
        state = await client_ops.wait_for(self.client, handle.id, pending_approval=False)
        assert state.awaiting is not None, state.status
        return handle

    async def until_approval_or_end(self, run_id: str) -> WorkingState:
        return await client_ops.wait_for(self.client, run_id, pending_approval=True)

    async def in_inbox(self, run_id: str, *, within: float = 20.0) -> list[ApprovalRow]:
        """The run's pending approvals as the inbox lists them. The run's query folds an
        approval in as it records it and runs ahead of the ledger by one append activity, so
        a test that asserts on the inbox waits here for the append, not on the query."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not (pending := self.runtime.ledger.approvals(status="pending", run_id=run_id)):
            if loop.time() > deadline:
                raise AssertionError(f"no approval of {run_id} reached the inbox in {within:g} s")
            await asyncio.sleep(0.025)
        return pending

    async def finish(self, run_id: str, *, within: float = 120.0) -> list[RunEvent]:
        """Wait for the run to end; a run still going after `within` seconds is a failure that
        names what the run last recorded, not a wait without end."""
        try:
            await asyncio.wait_for(self.client.get_workflow_handle(run_id).result(), within)
        except TimeoutError:
            kinds = [event.kind for event in self.runtime.ledger.read(run_id)]
            raise AssertionError(
                f"run {run_id} did not end in {within:g} s; it recorded {kinds}"
            ) from None
        return self.runtime.ledger.read(run_id)

    async def decide(
        self, run_id: str, approval_id: str, user: str, *, approve: bool = True, reason: str = ""
    ) -> None:
        await client_ops.decide(
            self.client,
            run_id,
            approval_id,
            user,
            issuer=self.issuer,
            approve=approve,
            reason=reason,
        )

    async def parked_and_finished(self, request: str) -> tuple[str, str, list[RunEvent]]:
        """Two runs of ``request``: one parked on its approval, one approved and finished (the
        parked run's id, the finished one's and its events)."""
        parked = await self.start(request)
        await self.in_inbox(parked)
        done = await self.start(request)
        (approval,) = await self.in_inbox(done)
        await self.decide(done, approval.approval_id, "ops_lead_1")
        return parked, done, await self.finish(done)
