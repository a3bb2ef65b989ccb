"""``agentledger``: the command line. Every failure is one line naming the problem and the fix."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from agentledger.app.errors import AgentLedgerError
from agentledger.cli import _parsers as parsers
from agentledger.cli._data_parsers import data_parsers, eval_parser
from agentledger.cli.schedule import schedule_parser

if TYPE_CHECKING:
    from agentledger.app.config import Settings

# Commands import the runtime (Temporal, SQLAlchemy, pydantic models) only once the arguments
# are parsed: `--help` and a usage error cost no more than argparse.
_COMMANDS = {
    **{
        name: f"agentledger.cli.stack:{name}"
        for name in ("dev", "worker", "seed", "migrate", "stop")
    },
    # With AGENTLEDGER_API_URL these go through the API with an identity provider's token;
    # without it, to agentledger.cli.runs (the embedded default's local issuer).
    **{
        name: f"agentledger.cli.login:{name}"
        for name in (
            "run",
            "approve",
            "cancel",
            "steer",
            "fork",
            "reply",
            "login",
            "logout",
            "whoami",
        )
    },
    "verify": "agentledger.cli.verify:verify",
    "demo": "agentledger.cli.demo:demo",
    "show": "agentledger.cli.show:show",
    "approvals": "agentledger.cli.show:approvals",
    "docs": "agentledger.cli.docs:docs_add",
    "serve": "agentledger.cli.serve:serve",
    "token": "agentledger.cli.token:token",
    "check-replay": "agentledger.cli.replay:check_replay",
    "deploy": "agentledger.cli.deploy:deploy",
    "eval": "agentledger.cli.eval:evaluate",
    "schedule": "agentledger.cli.schedule:schedule",
    "backup": "agentledger.cli.backup:backup",
    "restore": "agentledger.cli.backup:restore",
    "rebuild-read-models": "agentledger.cli.backup:rebuild_read_models",
    "keys": "agentledger.cli.keys:keys",
    "erase": "agentledger.cli.erase:erase",
    **{name: f"agentledger.cli.packs:{name}" for name in ("packs", "schema", "new")},
}


def _global_flags(parser: argparse.ArgumentParser, default: Any) -> None:
    """The flags every command takes, before or after its name. On the subcommands they default
    to SUPPRESS, so a flag given before the command is not reset by the subparser."""
    parser.add_argument("--debug", action="store_true", default=default, help="show tracebacks")
    parser.add_argument(
        "--data-dir", type=Path, default=default, help="embedded stack data (AGENTLEDGER_DATA_DIR)"
    )
    parser.add_argument(
        "--database-url", default=default, help="ledger database (AGENTLEDGER_DATABASE_URL)"
    )
    parser.add_argument(
        "--temporal-address",
        default=default,
        help="use this Temporal server instead of the embedded one (AGENTLEDGER_TEMPORAL_ADDRESS)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentledger", description=__doc__)
    _global_flags(parser, None)
    parser.set_defaults(debug=False)
    # Shared by every subcommand (argparse shares the action objects too: never set_defaults
    # for these on a subparser, it would change them for all).
    common = argparse.ArgumentParser(add_help=False)
    _global_flags(common, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kwargs)

    parsers.stack_parsers(command)
    _run_commands(command)
    parsers.show_parser(command("show", help="a run's timeline and state, from the ledger"))
    command("approvals", help="the pending approvals inbox")
    verify = command("verify", help="compare the ledger's projection with the live run")
    verify.add_argument("run_id")
    check = command(
        "check-replay", help="replay recent runs from the server against this code (pre-deploy)"
    )
    check.add_argument("--limit", type=int, default=100, help="newest N runs (default 100)")
    check.add_argument("--all", action="store_true", help="ended runs too, not only running")
    parsers.deploy_parser(command("deploy", help="route new runs to another build of the workers"))
    parsers.docs_parser(command("docs", help="versioned policy documents for retrieval"))
    parsers.token_parser(
        command("token", help="tokens and public keys of the local issuer (embedded default)")
    )
    parsers.identity_parsers(command)
    command("stop", help="stop the embedded Temporal server")
    parsers.pack_parsers(command)
    eval_parser(command("eval", help="compare two configurations on an eval suite's work orders"))
    parsers.serve_parser(command("serve", help="the HTTP API and web UI (approvals inbox, runs)"))
    schedule_parser(command("schedule", help="runs on a calendar (Temporal Schedules)"))
    data_parsers(command)
    return parser


def _run_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    """The commands that start and act on runs: run, approve, cancel, steer, fork and reply."""
    parsers.run_parser(command("run", help="start a run and print its id"))
    parsers.approve_parser(command("approve", help="approve (or --reject) a pending action"))
    parsers.cancel_parser(
        command("cancel", help="cancel a live run: it ends at its next safe point, recorded")
    )
    parsers.steer_parser(
        command("steer", help="tell a live run something it does not know: its next packets")
    )
    parsers.fork_parser(
        command("fork", help="start a new run from a run's state at one of its events")
    )
    parsers.reply_parser(command("reply", help="the customer's message to a run waiting on them"))


def _settings(args: argparse.Namespace) -> Settings:
    from agentledger.app.config import from_environment

    return from_environment().with_overrides(
        data_dir=args.data_dir,
        database_url=args.database_url,
        temporal_address=args.temporal_address,
    )


def _command(name: str) -> Any:
    module, function = _COMMANDS[name].split(":")
    return getattr(importlib.import_module(module), function)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(asyncio.run(_command(args.command)(_settings(args), args)))
    except AgentLedgerError as exc:
        if args.debug:
            raise
        print(f"agentledger: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_gone()
    except Exception as exc:  # anything unforeseen still gets one line, not a traceback
        if args.debug:
            raise
        if (named := _temporal_failure(exc)) is not None:
            print(f"agentledger: {named}", file=sys.stderr)
            return named.exit_code
        print(
            f"agentledger: unexpected {type(exc).__name__}: {exc} (rerun with --debug)",
            file=sys.stderr,
        )
        return 1


def _temporal_failure(exc: Exception) -> AgentLedgerError | None:
    """A failed call to Temporal as a named error (exit 3) with what to do; ``None``: not one.
    Looked up only once temporalio is loaded: a command that never loaded it cannot raise it."""
    service = sys.modules.get("temporalio.service")
    if service is None or not isinstance(exc, service.RPCError):
        return None
    from agentledger.app.liveness import rpc_failure

    return rpc_failure(exc, "serving this command")


def entrypoint() -> NoReturn:
    """The console script: run, flush, and leave without interpreter finalisation.

    Temporal's Rust core runtime is torn down by the interpreter's finalisers, and now and then
    that aborts the process (``Fatal Python error: PyGILState_Release``, exit 134) after the
    command has already succeeded: an exit code that says the opposite of what happened. The
    command's work is done and its output flushed here, so nothing is lost by skipping it.
    """
    code = main()
    logging.shutdown()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _reader_gone()
    sys.stderr.flush()
    os._exit(code)


def _reader_gone() -> int:
    """Whoever read stdout has gone (``agentledger show --list | head -1``): it had what it
    wanted. What is left goes nowhere, without a traceback, and the exit code is a shell's for a
    writer the pipe stopped (128 + SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141


if __name__ == "__main__":
    entrypoint()
