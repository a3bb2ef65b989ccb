"""Workers for end-to-end provider runs.

``provider_harness``: the support pack decides with a given model profile (same workflow,
activities and sandbox settings as ``Runtime.worker``; only the pack's profile and the installed
model clients differ). ``configured_harness``: ``Runtime.worker`` itself, with model providers
configured on it, for runs that choose one by name.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

from temporalio.worker import Worker

from agentledger.activities.models import ProviderConfig
from agentledger.activities.ports import ModelClient
from agentledger.activities.run_activities import RunActivities
from agentledger.app import runs as client_ops
from agentledger.app.config import Settings
from agentledger.app.devserver import DevServer
from agentledger.app.identity import trusted_keys
from agentledger.app.registry import get_pack
from agentledger.app.runtime import Runtime, workflow_runner
from agentledger.app.temporal import connect
from agentledger.domain.events import RunEvent
from agentledger.domain.manifest import ModelProfile
from agentledger.domain.workorder import Budget, ModelOverride
from agentledger.packs import Pack
from agentledger.workflows import AgentRunWorkflow
from bench.harness import Harness

REQUEST = "Can I get a refund for order ord_4821? It arrived late."


def pack_with(profile: ModelProfile) -> Pack:
    support = get_pack("support")
    return dataclasses.replace(
        support, profile=support.profile.model_copy(update={"model": profile})
    )


@asynccontextmanager
async def provider_harness(
    server: DevServer, data_dir: Path, profile: ModelProfile, models: Mapping[str, ModelClient]
) -> AsyncIterator[Harness]:
    settings = Settings(
        data_dir=data_dir,
        database_url=f"sqlite:///{data_dir / 'ledger.db'}",
        temporal_address=server.address,
        task_queue=f"providers-{uuid.uuid4().hex[:10]}",
    )
    runtime = Runtime.open(settings)
    runtime.seed()
    pack = pack_with(profile)
    activities = RunActivities(
        runtime.ledger,
        {**runtime.models(), **models},
        packs=lambda name: pack if name == "support" else get_pack(name),
        trusted_keys=trusted_keys(settings),
    )
    client = await connect(settings)
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[AgentRunWorkflow],
        activities=activities.all(),
        activity_executor=ThreadPoolExecutor(max_workers=4),
        workflow_runner=workflow_runner(),
    )
    async with worker:
        yield Harness(runtime, client, settings)
    runtime.ledger.engine.dispose()


async def run_to_end(
    harness: Harness, *, budget: Budget | None = None, approve: bool = False, timeout: float = 120
) -> list[RunEvent]:
    """Start the refund request, decide any approval as the demo approver, return the log."""
    work_order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
    if budget is not None:
        work_order = work_order.model_copy(update={"budget": budget})
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, work_order, issuer=harness.issuer
    )
    while True:
        state = await client_ops.wait_for(
            harness.client, handle.id, pending_approval=True, timeout=timeout
        )
        if not state.pending_approvals:
            return await harness.finish(handle.id)
        for approval_id in list(state.pending_approvals):
            await harness.decide(handle.id, approval_id, "ops_lead_1", approve=approve)


@asynccontextmanager
async def configured_harness(
    server: DevServer,
    database_url: str,
    data_dir: Path,
    providers: Mapping[str, ProviderConfig],
) -> AsyncIterator[Harness]:
    """The real runtime's worker, with these model providers configured on it."""
    settings = Settings(
        data_dir=data_dir,
        database_url=database_url,
        temporal_address=server.address,
        task_queue=f"providers-{uuid.uuid4().hex[:10]}",
        model_providers=providers,
    )
    runtime = Runtime.open(settings)
    runtime.seed()
    client = await connect(settings)
    async with runtime.worker(client):
        yield Harness(runtime, client, settings)
    runtime.ledger.engine.dispose()


async def run_choosing(harness: Harness, choice: ModelOverride) -> list[RunEvent]:
    """The refund request, asking for ``choice`` as its model; the log once it has ended."""
    work_order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
    work_order = work_order.model_copy(update={"model_override": choice})
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, work_order, issuer=harness.issuer
    )
    return await harness.finish(handle.id)
