"""``agentledger``: the command line. Every failure is one line naming the problem and the fix."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, NoReturn

from agentledger import commands
from agentledger.config import Settings, from_environment
from agentledger.docs_command import add_docs_parser, docs_add
from agentledger.errors import AgentLedgerError

DEFAULT_REQUEST = "Can I get a refund for order ord_4821? It arrived late."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentledger", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.add_argument("--data-dir", type=Path, help="embedded stack data (AGENTLEDGER_DATA_DIR)")
    parser.add_argument("--database-url", help="ledger database (AGENTLEDGER_DATABASE_URL)")
    parser.add_argument(
        "--temporal-address",
        help="use this Temporal server instead of the embedded one (AGENTLEDGER_TEMPORAL_ADDRESS)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the refund scenario end to end on the embedded stack")
    demo.add_argument("--request", default=DEFAULT_REQUEST)
    demo.add_argument("--user", default="usr_73")
    _model_flags(demo, choose=True, register=True)
    dev = sub.add_parser("dev", help="start the server and a worker, and keep them up")
    _model_flags(dev, choose=False, register=True)
    sub.add_parser("worker", help="run a worker against the configured server (no server start)")
    sub.add_parser("seed", help="load the packs' sample system of record")
    run = sub.add_parser("run", help="start a run and print its id")
    run.add_argument("pack")
    run.add_argument("request")
    run.add_argument("--user", required=True)
    run.add_argument("--wait", action="store_true", help="wait until it ends or needs approval")
    _model_flags(run, choose=True, register=False)
    approve = sub.add_parser("approve", help="approve (or --reject) a pending action")
    approve.add_argument("run_id")
    approve.add_argument("approval_id")
    approve.add_argument("--as", dest="principal", required=True)
    approve.add_argument("--reject", action="store_true")
    approve.add_argument("--reason", default="")
    approve.add_argument(
        "--content", type=json_object, help="JSON answer to a tool server's elicitation request"
    )
    show = sub.add_parser("show", help="a run's timeline and state, from the ledger")
    show.add_argument("run_id", nargs="?")
    show.add_argument("--json", action="store_true", help="emit the events as JSON lines")
    show.add_argument("--packets", action="store_true", help="print each context packet")
    show.add_argument("--list", action="store_true", help="list recent runs")
    sub.add_parser("approvals", help="the pending approvals inbox")
    verify = sub.add_parser("verify", help="compare the ledger's projection with the live run")
    verify.add_argument("run_id")
    add_docs_parser(sub)
    stop = sub.add_parser("stop", help="stop the embedded Temporal server")
    stop.set_defaults(temporal_address=None)
    return parser


def json_object(text: str) -> dict[str, object]:
    """An argparse type: a JSON object, or a usage error that says what is wrong."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def _model_flags(parser: argparse.ArgumentParser, *, choose: bool, register: bool) -> None:
    if choose:
        parser.add_argument(
            "--model",
            metavar="NAME",
            help="playbook (the offline scripted policy, the default) or a model provider "
            "configured on the worker (AGENTLEDGER_MODEL_PROVIDERS)",
        )
    parser.add_argument("--model-name", help="one of the provider's models (default: its first)")
    # Endpoints and key variables are the worker's to choose: on dev and demo these flags
    # register provider `local` on this process's own worker; on `run` they get a refusal.
    hidden = None if register else argparse.SUPPRESS
    parser.add_argument(
        "--base-url", help=hidden or "register provider `local` on this worker at this endpoint"
    )
    parser.add_argument("--api-key-env", help=hidden or "variable holding `local`'s API key")


def _settings(args: argparse.Namespace) -> Settings:
    return from_environment().with_overrides(
        data_dir=args.data_dir,
        database_url=args.database_url,
        temporal_address=args.temporal_address,
    )


_COMMANDS: dict[str, Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "demo": commands.demo,
    "dev": commands.dev,
    "worker": commands.worker,
    "seed": commands.seed,
    "run": commands.run,
    "approve": commands.approve,
    "show": commands.show,
    "approvals": commands.approvals,
    "verify": commands.verify,
    "stop": commands.stop,
    "docs": docs_add,
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_COMMANDS[args.command](_settings(args), args))
    except AgentLedgerError as exc:
        if args.debug:
            raise
        print(f"agentledger: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # anything unforeseen still gets one line, not a traceback
        if args.debug:
            raise
        print(
            f"agentledger: unexpected {type(exc).__name__}: {exc} (rerun with --debug)",
            file=sys.stderr,
        )
        return 1


def entrypoint() -> NoReturn:
    """The console script: run, flush, and leave without interpreter finalisation.

    Temporal's Rust core runtime is torn down by the interpreter's finalisers, and now and then
    that aborts the process (``Fatal Python error: PyGILState_Release``, exit 134) after the
    command has already succeeded: an exit code that says the opposite of what happened. The
    command's work is done and its output flushed here, so nothing is lost by skipping it.
    """
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entrypoint()
