"""``agentledger dev``, ``worker``, ``migrate``, ``seed`` and ``stop``: the stack's own commands."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import TYPE_CHECKING

from agentledger.app.config import KINDS, Settings
from agentledger.app.errors import ConfigError
from agentledger.app.housekeeping import Housekeeping, ensure_housekeeping
from agentledger.app.stack import DEV_PID_FILE, stop_stack
from agentledger.app.temporal import connect
from agentledger.cli._common import open_runtime, say, start_server, with_local_provider

if TYPE_CHECKING:
    from temporalio.runtime import Runtime as TemporalRuntime
    from temporalio.worker import Worker

    from agentledger.app.runtime import Runtime


def retrieval_line(settings: Settings) -> str:
    """Which retriever this worker's policy searches use (``AGENTLEDGER_RETRIEVAL``). A worker
    that ranks semantically loads and verifies the embedding model now, so a changed or missing
    file stops it at start instead of failing a customer's first question."""
    from agentledger.activities.retrieval import MODEL_ID, RetrievalError, shared_embedder

    if settings.retrieval == "fulltext":
        return "· policy retrieval: fulltext (AGENTLEDGER_RETRIEVAL)"
    try:
        shared_embedder()
    except RetrievalError as exc:
        raise ConfigError(f"AGENTLEDGER_RETRIEVAL={settings.retrieval}: {exc}") from None
    mode = settings.retrieval
    return f"· policy retrieval: {mode}, embeddings {MODEL_ID} (AGENTLEDGER_RETRIEVAL)"


async def dev(settings: Settings, args: argparse.Namespace) -> int:
    settings = with_local_provider(settings, args).with_overrides(metrics_port=args.metrics_port)
    settings = start_server(settings)
    runtime = open_runtime(settings, seed=True)
    retrieval = retrieval_line(settings)
    client = await connect(settings, runtime=observed(runtime))
    say(
        f"· worker polling task queue {settings.task_queue}; Ctrl-C to stop (the server keeps "
        "running; `agentledger stop` stops both)"
    )
    say(retrieval)
    say(_housekeeping_line(await ensure_housekeeping(client, settings.task_queue)))
    pid_file = settings.data_dir / DEV_PID_FILE
    pid_file.write_text(str(os.getpid()))  # so that `stop` ends this worker with its server
    try:
        await _serve(runtime.workers(client))
    finally:
        pid_file.unlink(missing_ok=True)
    return 0


async def worker(settings: Settings, args: argparse.Namespace) -> int:
    """One member of a worker fleet: stateless, so start as many as the load needs."""
    kinds = [kind.strip() for kind in args.queues.split(",")] if args.queues else list(KINDS)
    if unknown := [kind for kind in kinds if kind not in KINDS]:
        raise ConfigError(f"--queues: no kind of work {', '.join(unknown)}; use {','.join(KINDS)}")
    runtime = open_runtime(settings.with_overrides(metrics_port=args.metrics_port))
    retrieval = retrieval_line(runtime.settings)
    client = await connect(runtime.settings, runtime=observed(runtime))
    workers = runtime.workers(client, kinds)
    address = client.service_client.config.target_host
    for each in workers:
        say(f"· worker polling task queue {each.task_queue} at {address}")
    say(retrieval)
    if "workflows" in kinds:
        queue = runtime.settings.queue_of("workflows")
        say(_housekeeping_line(await ensure_housekeeping(client, queue)))
    _warn_of_own_keys(settings, kinds)
    await _serve(workers)
    return 0


def _housekeeping_line(made: Housekeeping) -> str:
    hours = made.every.total_seconds() / 3600
    state = "made" if made.made else "in place"
    return f"· housekeeping schedule {made.schedule_id} {state}: memories expire every {hours:g} h"


def _warn_of_own_keys(settings: Settings, kinds: list[str]) -> None:
    """A fleet's workers must share keys: say so when this one uses its data directory's own."""
    if "workflows" in kinds and settings.trusted_keys_file is None:
        # Runs this worker prepares pin only its own data directory's key: in a fleet, every
        # worker would pin another, and the API's or another host's signatures are refused.
        own = settings.issuer_key or settings.data_dir / "identity" / "issuer.pem"
        sys.stdout.flush()  # after the lines above, where both go to one log
        print(
            "warning: AGENTLEDGER_TRUSTED_KEYS is not set: new runs trust only this worker's own "
            f"signing key ({own}); give every worker of a fleet the same JWKS "
            "(agentledger token jwks)",
            file=sys.stderr,
        )
    security = settings.temporal_security
    if security.payload_codec and security.payload_keys is None:
        print(
            "warning: AGENTLEDGER_PAYLOAD_KEYS is not set: payloads are sealed with this data "
            "directory's own key ring; every worker of a fleet and the API need the same one",
            file=sys.stderr,
        )


async def _serve(workers: list[Worker]) -> None:
    """Run every worker until one stops; then the others shut down (a cancelled worker drains)
    and the first one's failure, if it failed, is raised."""
    runs = [asyncio.create_task(each.run()) for each in workers]
    done, pending = await asyncio.wait(runs, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        task.result()


def observed(runtime: Runtime) -> TemporalRuntime | None:
    """Serve ``/metrics`` when a port is configured (and say where)."""
    temporal = runtime.serve_metrics()
    if temporal is not None:
        host, port = runtime.settings.metrics_host, runtime.settings.metrics_port
        say(f"· metrics (agentledger and Temporal SDK) at http://{host}:{port}/metrics")
    return temporal


async def migrate(settings: Settings, args: argparse.Namespace) -> int:
    """The ledger's migrations and every pack's (each under its own advisory lock), then exit:
    a release's one-off job, before its workers start (they would do it too, one at a time)."""
    from sqlalchemy.engine import make_url

    runtime = open_runtime(settings)
    where = make_url(runtime.settings.ledger_url).render_as_string(hide_password=True)
    say(f"· ledger schema and every pack's tables at their newest revision at {where}")
    runtime.ledger.engine.dispose()
    return 0


async def seed(settings: Settings, args: argparse.Namespace) -> int:
    runtime = open_runtime(settings)
    created = runtime.seed()
    say(
        "seeded the sample system of record, directory and policies"
        if created
        else "sample records were already there; directory and policies brought up to date"
    )
    return 0


async def stop(settings: Settings, args: argparse.Namespace) -> int:
    stopped = await stop_stack(settings.data_dir)
    if stopped.dev_pid is not None:
        say(f"stopped the dev worker (pid {stopped.dev_pid})")
    say(
        "stopped the embedded Temporal server"
        if stopped.server
        else "no embedded server was running"
    )
    return 0
