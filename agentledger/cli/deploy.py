"""``agentledger deploy``: move new runs to another build of the workers, safely.

Workers started with ``AGENTLEDGER_DEPLOYMENT`` and ``AGENTLEDGER_BUILD_ID`` belong to a Temporal
worker deployment, and every run is pinned to the build that started it. ``deploy current BUILD``
sends new runs to BUILD once its workers poll; runs already started keep finishing on their own
build (keep its workers up until ``deploy show`` says it is drained). ``deploy ramp BUILD
--percent P`` sends a share of new runs to BUILD first.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import temporalio.api.workflowservice.v1 as wsv1
from temporalio.api.deployment.v1 import RoutingConfig, WorkerDeploymentInfo
from temporalio.api.enums.v1 import VersionDrainageStatus
from temporalio.api.enums.v1 import WorkerDeploymentVersionStatus as Status
from temporalio.client import Client
from temporalio.service import RPCError

from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError, NotFound
from agentledger.app.temporal import connect

say = print

POLLERS_WAIT_SECONDS = 60.0
VersionSummary = WorkerDeploymentInfo.WorkerDeploymentVersionSummary


async def deploy(settings: Settings, args: argparse.Namespace) -> int:
    name = settings.deployment
    if name is None:
        raise ConfigError("set AGENTLEDGER_DEPLOYMENT (the worker deployment's name)")
    client = await connect(settings)
    if args.deploy_command == "show":
        await _show(client, name)
    elif args.deploy_command == "current":
        await make_current(client, name, args.build_id)
        say(f"new runs of {name} start on build {args.build_id}; running runs stay on theirs")
    else:
        await ramp(client, name, args.build_id, args.percent)
        say(f"{args.percent:g}% of new runs of {name} start on build {args.build_id}")
    return 0


async def make_current(client: Client, deployment: str, build_id: str) -> None:
    """Route new runs to ``build_id``, once its workers have polled (a version nobody serves
    would strand every new run)."""
    request = wsv1.SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace, deployment_name=deployment, build_id=build_id
    )
    await _once_polled(client, deployment, build_id)
    await _until_taken(client.workflow_service.set_worker_deployment_current_version, request)


async def ramp(client: Client, deployment: str, build_id: str, percent: float) -> None:
    if not 0 <= percent <= 100:
        raise ConfigError(f"--percent {percent:g}: a share of new runs, from 0 to 100")
    request = wsv1.SetWorkerDeploymentRampingVersionRequest(
        namespace=client.namespace,
        deployment_name=deployment,
        build_id=build_id,
        percentage=percent,
    )
    await _once_polled(client, deployment, build_id)
    await _until_taken(client.workflow_service.set_worker_deployment_ramping_version, request)


async def builds(client: Client, deployment: str) -> dict[str, str]:
    """Each build of the deployment and its state: current, ramping, draining, drained."""
    request = wsv1.DescribeWorkerDeploymentRequest(
        namespace=client.namespace, deployment_name=deployment
    )
    try:
        info = (
            await client.workflow_service.describe_worker_deployment(request)
        ).worker_deployment_info
    except RPCError as exc:
        raise NotFound(f"no worker deployment {deployment!r} ({exc.message})") from None
    routing = info.routing_config
    return {
        summary.deployment_version.build_id: build_state(summary, routing)
        for summary in info.version_summaries
    }


def build_state(summary: VersionSummary, routing: RoutingConfig) -> str:
    """One build's state: current, ramping, never current (its workers poll, no run is routed
    to it: nothing to drain), draining, drained."""
    build = summary.deployment_version.build_id
    if build == routing.current_deployment_version.build_id:
        return "current"
    if build == routing.ramping_deployment_version.build_id:
        return f"ramping {routing.ramping_version_percentage:g}%"
    if _never_routed(summary):
        return f"never current: takes new runs after `deploy current {build}`"
    drained = summary.drainage_status == VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED
    return "drained: its workers can stop" if drained else "draining"


def _never_routed(summary: VersionSummary) -> bool:
    if summary.status in (
        Status.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE,
        Status.WORKER_DEPLOYMENT_VERSION_STATUS_CREATED,
    ):
        return True
    # A server that reports no status: a build it never activated was never current or ramping.
    return summary.status == Status.WORKER_DEPLOYMENT_VERSION_STATUS_UNSPECIFIED and not (
        summary.HasField("first_activation_time") or summary.HasField("last_current_time")
    )


async def _show(client: Client, deployment: str) -> None:
    for build, state in (await builds(client, deployment)).items():
        say(f"{build}: {state}")


async def _until_taken(call: Any, request: Any) -> None:
    """Send the routing change; while the new build's workers have not yet polled every task
    queue the current one serves, the server refuses it (nothing would serve those): again."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + POLLERS_WAIT_SECONDS
    while True:
        try:
            await call(request)
            return
        except RPCError as exc:
            if "missing active task queues" not in exc.message or loop.time() > deadline:
                raise ConfigError(f"the deployment refused the change: {exc.message}") from None
        await asyncio.sleep(0.5)


async def _once_polled(client: Client, deployment: str, build_id: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + POLLERS_WAIT_SECONDS
    while True:
        try:
            if build_id in await builds(client, deployment):
                return
        except NotFound:
            pass  # the deployment appears with its first poller
        if loop.time() > deadline:
            raise NotFound(
                f"no worker of build {build_id} polls deployment {deployment}; start them with "
                f"AGENTLEDGER_DEPLOYMENT={deployment} AGENTLEDGER_BUILD_ID={build_id} first"
            )
        await asyncio.sleep(0.5)
