"""``agentledger check-replay``: replay recent runs from the server against this code, before a
deploy reaches them.

A run that waits a week on an approval resumes on whatever code the workers run then. If that
code would decide differently at any point the run already passed, Temporal fails the run's next
task with a nondeterminism error and the run stops until the code is fixed. This replays the
histories of recent (by default: still running) runs against the workflow code installed here,
with nothing executed, and names every run the new code would break: deploy behind
``workflow.patched`` or worker versioning instead.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from temporalio.client import Client, WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter

from agentledger.app.config import Settings
from agentledger.app.registry import register_env_packs
from agentledger.app.replayer import replayer
from agentledger.app.temporal import connect
from agentledger.workflows import AgentRunWorkflow

say = print


def runs_query(task_queue: str, *, running_only: bool) -> str:
    """The runs a deploy to ``task_queue``'s workers would resume."""
    query = f'WorkflowType = "AgentRun" AND TaskQueue = "{task_queue}"'
    return f'{query} AND ExecutionStatus = "Running"' if running_only else query


@dataclass(frozen=True)
class ReplayVerdict:
    run_id: str
    problem: str | None
    """``None``: this code replays the run as it ran."""


async def recent_histories(client: Client, query: str, limit: int) -> list[WorkflowHistory]:
    """The newest ``limit`` runs the query finds, each with its whole history."""
    histories = []
    async for execution in client.list_workflows(query, limit=limit):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        histories.append(await handle.fetch_history())
    return histories


async def replay_all(
    histories: Sequence[WorkflowHistory],
    workflows: Sequence[type] = (AgentRunWorkflow,),
    converter: DataConverter = pydantic_data_converter,
) -> list[ReplayVerdict]:
    """Each history replayed against ``workflows`` as installed here, its payloads decoded as
    ``converter`` does (the client's that fetched them: payload codec and all); nothing is
    executed."""
    checker = replayer(workflows, converter)
    verdicts = []
    for history in histories:
        result = await checker.replay_workflow(history, raise_on_replay_failure=False)
        failure = result.replay_failure
        verdicts.append(
            ReplayVerdict(history.workflow_id, None if failure is None else f"{failure}")
        )
    return verdicts


async def check_replay(settings: Settings, args: argparse.Namespace) -> int:
    register_env_packs(settings.extra_packs)  # old runs' contracts are looked up by pack name
    client = await connect(settings)
    query = runs_query(settings.task_queue, running_only=not args.all)
    histories = await recent_histories(client, query, args.limit)
    verdicts = await replay_all(histories, converter=client.data_converter)
    broken = [v for v in verdicts if v.problem is not None]
    for verdict in broken:
        say(f"breaks {verdict.run_id}: {verdict.problem}")
    which = "recent" if args.all else "running"
    say(
        f"replayed {len(verdicts)} {which} run(s) of task queue {settings.task_queue} against "
        f"this code: {len(broken)} would break"
    )
    return 1 if broken else 0
