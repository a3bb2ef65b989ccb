"""``agentledger eval SUITE --manifest A --manifest B [--repeat K] [--limit N] [--json PATH]
[--html PATH]``: two configurations on the same work orders, compared; ``agentledger eval add
RUN_ID --at SEQ --suite FILE``: a recorded run as a regression case of a suite file.

Everything that can be refused is refused before a run starts: an unknown suite (exit 4), a
suite or configuration naming an unknown pack, tool, fixture or field (exit 2), two
configurations whose manifests would not differ (exit 7). A finished eval exits 0 whatever its
pass rates: its report says how each configuration did.
"""

from __future__ import annotations

import argparse

from agentledger.app.config import Settings
from agentledger.app.errors import EvalInputInvalid
from agentledger.app.stack import open_ledger
from agentledger.cli._common import say, start_server
from agentledger.evaluation import EvalStarted, load_suite, resolve_pair, run_eval
from agentledger.evaluation.html import write_html
from agentledger.evaluation.regressions import add_regression
from agentledger.evaluation.render import progress_line, summary

__all__ = ["add_case", "evaluate"]


async def evaluate(settings: Settings, args: argparse.Namespace) -> int:
    if args.suite == "add":
        return add_case(settings, args)
    if args.run_id is not None:
        raise EvalInputInvalid(f"unexpected argument {args.run_id!r}", "usage")
    if args.repeat < 1:
        raise EvalInputInvalid(f"--repeat must be at least 1, not {args.repeat}", "bad_repeat")
    source = load_suite(args.suite, limit=args.limit)
    configs = resolve_pair(list(args.manifest or []), source.suite.pack)
    settings = start_server(settings)
    if settings.database_url is not None:
        say("· the eval's runs use a ledger of their own, not AGENTLEDGER_DATABASE_URL's")
    a, b = configs

    def started(run: EvalStarted) -> None:
        suite = source.suite
        say(
            f"· eval {run.eval_id}: suite {suite.name} v{suite.version}, "
            f"{len(suite.cases)} work orders × {args.repeat}, {a.name} vs {b.name}"
        )
        say(
            f"· ledger {run.ledger_url} (open a run: agentledger show RUN_ID "
            f"--data-dir {run.data_dir})"
        )

    report = await run_eval(
        settings, source, configs, args.repeat, on_start=started,
        on_row=lambda row: say(progress_line(row)),
    )  # fmt: skip
    for line in summary(report):
        say(line)
    if args.json is not None:
        args.json.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        say(f"· JSON report: {args.json}")
    if args.html is not None:
        write_html(report, args.html)
        say(f"· HTML report: {args.html}")
    return 0


def add_case(settings: Settings, args: argparse.Namespace) -> int:
    """``eval add``: the case forking the run at ``--at`` added to the ``--suite`` file."""
    if args.run_id is None or args.at is None or args.into is None:
        raise EvalInputInvalid("usage: agentledger eval add RUN_ID --at SEQ --suite FILE", "usage")
    added = add_regression(
        open_ledger(settings), args.run_id, args.at, args.into,
        case_id=args.case_id, approver=args.approver,
    )  # fmt: skip
    expect, suite = added.case.expect, added.suite
    count = f"{len(suite.cases)} case{'' if len(suite.cases) == 1 else 's'}"
    made = "a new file" if added.created else "the case added"
    say(f"{added.case.case_id}")
    say(f"· suite {suite.name} v{suite.version}, {count} ({made}): {added.path}")
    writes = ", ".join(f"{r.tool} {r.arguments}" for r in expect.receipts) or "none"
    say(
        f"· expects: {expect.status}, {expect.approvals} approval(s), writes: {writes}; "
        f"approver {'approves' if added.case.approve else 'rejects'}"
    )
    return 0
