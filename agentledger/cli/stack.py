"""The CLI's commands. Each takes resolved settings and parsed arguments, returns an exit code."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from agentledger.activities.ledger import Ledger
from agentledger.app import liveness
from agentledger.app import runs as client_ops
from agentledger.app.config import DEFAULT_TEMPORAL_PORT, DEFAULT_UI_PORT, KINDS, Settings
from agentledger.app.devserver import stop_dev_server
from agentledger.app.errors import ConfigError, NotFound, Refused
from agentledger.app.own_server import RECORD, start_own_server
from agentledger.app.registry import UnknownPack, get_pack
from agentledger.app.request_check import request_refusal
from agentledger.app.temporal import connect
from agentledger.cli.runs import report
from agentledger.cli.show import open_ledger, require_ledger
from agentledger.domain.principal import Principal
from agentledger.domain.workorder import ModelOverride, WorkOrder

if TYPE_CHECKING:
    from temporalio.runtime import Runtime as TemporalRuntime
    from temporalio.worker import Worker

    from agentledger.app.runtime import Runtime

say = print
DEV_PID_FILE = "dev.pid"
LOCAL_PROVIDER = "local"
LOCAL_MODEL = "gpt-4.1-mini"


def start_server(settings: Settings) -> Settings:
    """Start (or reuse) the data directory's own embedded server, say where; ``settings``
    pinned to its ports (unchanged for an explicit ``--temporal-address``)."""
    if not settings.embedded_temporal:
        return settings
    server, settings = start_own_server(settings)
    verb = "started" if server.started else "reusing"
    say(
        f"· Temporal dev server {verb} at {server.address} (UI {server.ui_url}, data in "
        f"{settings.data_dir}/)"
    )
    if settings.temporal_port != DEFAULT_TEMPORAL_PORT or settings.ui_port != DEFAULT_UI_PORT:
        say(
            f"· ports {settings.temporal_port}/{settings.ui_port} (7233/8233 were taken or "
            f"set otherwise): remembered in {settings.data_dir / RECORD}; every later command "
            "with this data directory uses them"
        )
    return settings


def open_runtime(settings: Settings, *, seed: bool = False) -> Runtime:
    # The whole runtime (workers' activities, MCP, providers) only for commands that run one.
    from agentledger.app.runtime import Runtime

    fresh = settings.database_url is None and not (settings.data_dir / "ledger.db").exists()
    runtime = Runtime.open(settings)
    for problem in runtime.broken_packs.values():  # one pack down, not the command
        print(f"warning: {problem}; its runs are refused, the other packs work", file=sys.stderr)
    if fresh:
        say(f"· created the ledger in {settings.data_dir.resolve()}/")
    if seed and runtime.seed():
        say("· seeded the packs' sample systems of record, directories and policies")
    return runtime


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
    await _serve(workers)
    return 0


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
    """The ledger's migrations (under an advisory lock) and every pack's tables, then exit: a
    release's one-off job, before its workers start (they would do it too, one at a time)."""
    from sqlalchemy.engine import make_url

    runtime = open_runtime(settings)
    where = make_url(runtime.settings.ledger_url).render_as_string(hide_password=True)
    say(f"· ledger schema up to date at {where}; the packs' tables installed")
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


async def run(settings: Settings, args: argparse.Namespace) -> int:
    if args.base_url or args.api_key_env:
        raise ConfigError(
            "a run names a model provider (--model NAME); its endpoint and key variable are "
            "the worker's: AGENTLEDGER_MODEL_PROVIDERS, or `agentledger dev --base-url URL`"
        )
    require_ledger(settings)  # a run needs the directory its requester is checked against
    runtime = open_runtime(settings)
    try:
        pack = get_pack(args.pack)
    except UnknownPack as exc:
        raise ConfigError(str(exc)) from None
    work_order = with_model(
        pack.make_work_order(args.request, principal_of(runtime.ledger, args.user)), args
    )
    if (problem := request_refusal(work_order)) is not None:  # before any server is reached
        raise Refused(f"work order refused: {problem}")
    client = await connect(settings)
    handle = await client_ops.start_run(client, settings.task_queue, work_order)
    say(handle.id)
    await liveness.until_taken(client, handle.id)  # no live worker: said now, not after 120 s
    if not await until_recorded(runtime, handle.id):
        say(f"note: run {handle.id} has not reached the ledger yet; `agentledger verify` says why")
    if not args.wait:
        return 0
    state = await client_ops.wait_for(client, handle.id, pending_approval=True)
    return await report(client, state, runtime.ledger)


async def until_recorded(
    runtime: Runtime, run_id: str, timeout: float = 15.0, seq: int = 1
) -> bool:
    """Wait until the run's events up to ``seq`` are in the ledger (its first, by default), so
    `show` finds them right away."""
    deadline = asyncio.get_running_loop().time() + timeout
    while runtime.ledger.last_seq(run_id) < seq:
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def approve(settings: Settings, args: argparse.Namespace) -> int:
    from agentledger.app.identity import issuer_for  # its crypto only for the commands that sign

    approver = principal_of(open_ledger(settings), args.principal)
    client = await connect(settings)
    queue = (await client_ops.described(client, args.run_id)).task_queue
    # Signed: the run trusts the key, not the id; only a live worker takes it (else named).
    deciding = client_ops.decide(
        client, args.run_id, args.approval_id, approver.user_id, issuer=issuer_for(settings),
        approve=not args.reject, reason=args.reason, content=args.content,
    )  # fmt: skip
    result = await liveness.watched(deciding, client, queue)
    say(f"{result.approval_id} {result.decision} by {approver.user_id}")
    return 0


async def stop(settings: Settings, args: argparse.Namespace) -> int:
    data_dir = settings.data_dir.resolve()
    if (dev_pid := _running_pid(data_dir / DEV_PID_FILE)) is not None:
        os.kill(dev_pid, signal.SIGTERM)  # before the server, or it retries against a dead port
        say(f"stopped the dev worker (pid {dev_pid})")
    stopped = await asyncio.to_thread(stop_dev_server, data_dir)
    say("stopped the embedded Temporal server" if stopped else "no embedded server was running")
    return 0


def _running_pid(pid_file: Path) -> int | None:
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def principal_of(ledger: Ledger, user_id: str) -> Principal:
    principal = ledger.get_principal(user_id)
    if principal is None:
        raise NotFound(
            f"unknown principal {user_id!r}; known principals come from "
            "`agentledger seed` (e.g. usr_73, ops_lead_1)"
        )
    return principal


def with_model(work_order: WorkOrder, args: argparse.Namespace) -> WorkOrder:
    """Name this run's model provider; the worker resolves the name (or refuses it) and the
    manifest freezes the result."""
    model = args.model or (LOCAL_PROVIDER if args.base_url else "playbook")
    if model == "playbook":
        return work_order
    choice = ModelOverride(provider=model, model=args.model_name)
    return work_order.model_copy(update={"model_override": choice})


def with_local_provider(settings: Settings, args: argparse.Namespace) -> Settings:
    """``--base-url`` on dev or demo: provider ``local`` on this process's own worker."""
    if not args.base_url:
        if args.api_key_env:
            raise ConfigError("--api-key-env names the key of --base-url's endpoint; give both")
        return settings
    entry = {"base_url": args.base_url, "models": [args.model_name or LOCAL_MODEL]}
    if args.api_key_env:
        entry["api_key_env"] = args.api_key_env
    try:
        from agentledger.activities.models import ProviderConfig

        config = ProviderConfig.model_validate(entry)
    except ValidationError as exc:
        raise ConfigError(f"--base-url/--api-key-env: {exc.errors()[0]['msg']}") from None
    say(f"· model provider {LOCAL_PROVIDER!r} on this worker: {args.base_url}")
    providers = {**settings.model_providers, LOCAL_PROVIDER: config}
    return settings.with_overrides(model_providers=providers)
