"""Each command's arguments, for ``agentledger.cli.main``'s parser. Cheap to import: argparse
and the standard library only, so ``--help`` and a usage error load nothing else."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path


def serve_parser(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8700, help="port (default 8700)")


def pack_parsers(command: Callable[..., argparse.ArgumentParser]) -> None:
    """The commands about packs themselves: what is installed, what a step expects, a new one."""
    packs = command("packs", help="the installed packs: version, profile, source, errors")
    packs.add_argument("--json", action="store_true", help="one JSON object per pack, per line")
    schema = command("schema", help="the JSON schema of the decision a step expects")
    schema.add_argument("step", help="a step of the pack's profile, e.g. choose_next_action")
    schema.add_argument("--pack", default="support", help="the pack (default: support)")
    new = command("new", help="scaffold something of your own")
    kinds = new.add_subparsers(dest="new_kind", required=True, metavar="KIND")
    pack = kinds.add_parser("pack", help="an installable pack that runs out of the box")
    pack.add_argument("name", help="the pack's name: lower case, digits, - or _ (e.g. acme)")
    pack.add_argument("--path", type=Path, help="the directory to create (default: ./NAME)")


def stack_parsers(command: Callable[..., argparse.ArgumentParser]) -> None:
    """The commands that bring up (or load) the stack itself: demo, dev, worker, seed."""
    demo = command("demo", help="a pack's sample request end to end on the embedded stack")
    demo.add_argument("--pack", default="support", help="whose sample request (default support)")
    demo.add_argument("--request", help="another request (default: the pack's sample)")
    demo.add_argument("--user", help="another requester (default: the pack's sample)")
    _model_flags(demo, choose=True, register=True)
    dev = command("dev", help="start the server and a worker, and keep them up")
    _model_flags(dev, choose=False, register=True)
    worker = command("worker", help="run a worker against the configured server (no server start)")
    worker.add_argument(
        "--queues",
        metavar="KINDS",
        help="the kinds of work to take, comma-separated: workflows, models, tools (default "
        "all; each kind's task queue is AGENTLEDGER_TASK_QUEUE, _MODEL_QUEUE, _TOOL_QUEUE)",
    )
    for serving in (dev, worker):
        serving.add_argument(
            "--metrics-port",
            type=int,
            metavar="N",
            help="serve /metrics on port N: the ledger's metrics and the Temporal SDK's "
            "(AGENTLEDGER_METRICS_PORT)",
        )
    command("seed", help="load the packs' sample system of record")
    command("migrate", help="migrate the ledger and install the packs' tables, then exit")


def identity_parsers(command: Callable[..., argparse.ArgumentParser]) -> None:
    """Signing in to the identity provider that AGENTLEDGER_OIDC_ISSUER names (docs/identity.md);
    the embedded single-user default needs none of it."""
    command(
        "login",
        help="get a token from the identity provider (AGENTLEDGER_OIDC_ISSUER): a person by the "
        "device code it shows, a service by client credentials; cached in the data directory",
    )
    command("logout", help="forget this data directory's token from the identity provider")
    command("whoami", help="who the API (AGENTLEDGER_API_URL) says your token proves")


def run_parser(run: argparse.ArgumentParser) -> None:
    run.add_argument("pack")
    run.add_argument("request")
    run.add_argument(
        "--user",
        help="the requester, on the embedded default (required there); through "
        "AGENTLEDGER_API_URL the requester is whoever your token says",
    )
    _wait_flags(run, "wait until it ends, needs approval or asks its customer")
    _model_flags(run, choose=True, register=False)


def approve_parser(approve: argparse.ArgumentParser) -> None:
    approve.add_argument("run_id")
    approve.add_argument("approval_id")
    approve.add_argument(
        "more",
        nargs="*",
        metavar="RUN_ID APPROVAL_ID",
        help="more approvals to decide the same way, in pairs: each is signed, sent and judged "
        "on its own, and reported on its own line (exit 5 when any is refused)",
    )
    approve.add_argument(
        "--as",
        dest="principal",
        help="embedded default only (required there): sign the decision as this principal with "
        "the data directory's local issuer key (the run verifies the signature with the key it "
        "pinned; the directory says who they are). Through AGENTLEDGER_API_URL your identity "
        "provider's token says who decides (`agentledger login`)",
    )
    approve.add_argument("--reject", action="store_true")
    approve.add_argument("--reason", default="")
    approve.add_argument(
        "--content", type=json_object, help="JSON answer to a tool server's elicitation request"
    )
    approve.add_argument(
        "--set",
        dest="edits",
        type=assignment,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="approve the call with this argument changed (repeatable; e.g. amount=20.00): the "
        "run checks the edited call as it checks a proposal and refuses one that asks for more",
    )


def cancel_parser(cancel: argparse.ArgumentParser) -> None:
    cancel.add_argument("run_id")
    cancel.add_argument(
        "--as",
        dest="principal",
        help="embedded default only (required there): sign the cancel as this principal (role "
        "canceller) with the data directory's local issuer key; through AGENTLEDGER_API_URL "
        "your identity provider's token says who cancels",
    )
    cancel.add_argument("--reason", required=True, help="why (recorded with who cancelled)")


def steer_parser(steer: argparse.ArgumentParser) -> None:
    steer.add_argument("run_id")
    steer.add_argument("text", help="the instruction (at most 2,000 characters, no data markers)")
    steer.add_argument(
        "--as",
        dest="principal",
        help="embedded default only (required there): sign the instruction as this principal "
        "(role steerer) with the data directory's local issuer key; through AGENTLEDGER_API_URL "
        "your identity provider's token says who steers",
    )


def fork_parser(fork: argparse.ArgumentParser) -> None:
    fork.add_argument("run_id")
    fork.add_argument("--at", type=int, required=True, help="the event (seq) to fork from")
    fork.add_argument(
        "--as",
        dest="principal",
        help="embedded default only (required there): sign the fork as this principal (role "
        "forker) with the data directory's local issuer key",
    )
    fork.add_argument("--model", help="a model provider configured on the workers, by name")
    fork.add_argument("--profile", help="another agent profile of the run's pack, by id")
    fork.add_argument(
        "--dry", action="store_true", help="refuse every consequential call (else: the sandbox)"
    )
    fork.add_argument("--wait", action="store_true", help="wait for an end, approval or question")


def reply_parser(reply: argparse.ArgumentParser) -> None:
    reply.add_argument("run_id")
    reply.add_argument("text")
    reply.add_argument(
        "--as",
        dest="principal",
        help="the run's requester, signed by the local issuer (embedded default; required there)",
    )
    _wait_flags(reply, "wait until it answers or asks again")


def _wait_flags(parser: argparse.ArgumentParser, wait: str) -> None:
    parser.add_argument("--wait", action="store_true", help=wait)
    parser.add_argument(
        "--follow",
        action="store_true",
        help="--wait, printing the answer as the model writes it (embedded default)",
    )


def show_parser(show: argparse.ArgumentParser) -> None:
    show.add_argument("run_id", nargs="?")
    show.add_argument(
        "--json",
        action="store_true",
        help="emit the events (with --packets: packets) as JSON lines",
    )
    show.add_argument(
        "--packets", action="store_true", help="print each context packet's exact text as sent"
    )
    show.add_argument("--list", action="store_true", help="list recent runs")
    show.add_argument(
        "--limit", type=_positive, default=20, help="how many runs --list shows (default 20)"
    )


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def docs_parser(docs: argparse.ArgumentParser) -> None:
    verbs = docs.add_subparsers(dest="docs_command", required=True, metavar="VERB")
    add = verbs.add_parser("add", help="load a Markdown file as one document revision")
    add.add_argument("file", type=Path)
    add.add_argument("--id", dest="document_id", required=True, help="e.g. returns-2026-08")
    add.add_argument("--revision", required=True, help="e.g. v2")
    add.add_argument("--tenant", default="*", help="tenant id (default '*': every tenant)")
    add.add_argument("--effective-from", type=_aware, help="ISO date or time (default: now)")
    add.add_argument(
        "--approve-as", help="approve the revision as this principal (role policy_approver)"
    )


def deploy_parser(deploy: argparse.ArgumentParser) -> None:
    verbs = deploy.add_subparsers(dest="deploy_command", required=True, metavar="VERB")
    verbs.add_parser("show", help="each build of AGENTLEDGER_DEPLOYMENT and its state")
    current = verbs.add_parser("current", help="new runs start on this build (running stay)")
    current.add_argument("build_id")
    ramp = verbs.add_parser("ramp", help="a share of new runs start on this build")
    ramp.add_argument("build_id")
    ramp.add_argument("--percent", type=float, required=True, help="0 to 100")


def token_parser(token: argparse.ArgumentParser) -> None:
    verbs = token.add_subparsers(dest="token_command", required=True, metavar="VERB")
    issue = verbs.add_parser(
        "issue",
        help="sign a bearer token for a principal with the local issuer (prints it); with an "
        "identity provider, people and services use `agentledger login` instead",
    )
    issue.add_argument("--as", dest="principal", required=True, help="e.g. ops_lead_1")
    issue.add_argument("--minutes", type=int, default=60, help="lifetime (default 60, max 1440)")
    issue.add_argument("--audience", default="agentledger-api", help="default agentledger-api")
    verbs.add_parser("jwks", help="the issuer's public keys (for AGENTLEDGER_TRUSTED_KEYS)")


def _aware(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date or time") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def assignment(text: str) -> tuple[str, str]:
    """An argparse type: ``NAME=VALUE``, split at the first ``=``."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, not {text!r}")
    return name.strip(), value


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
