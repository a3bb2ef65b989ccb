"""``agentledger eval SUITE --manifest A --manifest B [--repeat K] [--limit N] [--json PATH]
[--html PATH]``: two configurations on the same work orders, compared.

Everything that can be refused is refused before a run starts: an unknown suite (exit 4), a
suite or configuration naming an unknown pack, tool, fixture or field (exit 2), two
configurations whose manifests would not differ (exit 7). A finished eval exits 0 whatever its
pass rates: its report says how each configuration did.
"""

from __future__ import annotations

import argparse
import shutil
import uuid
from datetime import UTC, datetime

from agentledger.app.config import Settings
from agentledger.app.errors import EvalInputInvalid
from agentledger.app.identity import issuer_for
from agentledger.app.temporal import connect
from agentledger.cli._common import say, start_server
from agentledger.evaluation.configs import Configuration, resolve_pair
from agentledger.evaluation.html import write_html
from agentledger.evaluation.render import print_progress, print_table
from agentledger.evaluation.report import EvalReport, build_report
from agentledger.evaluation.runner import EvalStack, eval_settings, open_eval_stack, run_pairs
from agentledger.evaluation.sources import SuiteSource, load_suite

__all__ = ["evaluate", "run_eval"]


async def evaluate(settings: Settings, args: argparse.Namespace) -> int:
    if args.repeat < 1:
        raise EvalInputInvalid(f"--repeat must be at least 1, not {args.repeat}", "bad_repeat")
    source = load_suite(args.suite, limit=args.limit)
    configs = resolve_pair(list(args.manifest or []), source.suite.pack)
    settings = start_server(settings)
    if settings.database_url is not None:
        say("· the eval's runs use a ledger of their own, not AGENTLEDGER_DATABASE_URL's")
    report = await run_eval(settings, source, configs, args.repeat, progress=True)
    print_table(report)
    if args.json is not None:
        args.json.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        say(f"· JSON report: {args.json}")
    if args.html is not None:
        write_html(report, args.html)
        say(f"· HTML report: {args.html}")
    return 0


async def run_eval(
    settings: Settings,
    source: SuiteSource,
    configs: tuple[Configuration, Configuration],
    repeat: int,
    *,
    progress: bool = False,
) -> EvalReport:
    """Run the eval on ``settings``' Temporal server with a ledger of its own; the report."""
    a, b = configs
    eval_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    own = eval_settings(settings, eval_id)
    runtime = open_eval_stack(own, (a, b))
    try:
        source.check_users(runtime.ledger)
    except EvalInputInvalid:
        runtime.ledger.engine.dispose()
        shutil.rmtree(own.data_dir)  # nothing ran there: leave no empty eval behind
        raise
    if progress:
        say(
            f"· eval {eval_id}: suite {source.suite.name} v{source.suite.version}, "
            f"{len(source.suite.cases)} work orders × {repeat}, {a.name} vs {b.name}"
        )
        say(
            f"· ledger {own.ledger_url} (open a run: agentledger show RUN_ID "
            f"--data-dir {own.data_dir})"
        )
    try:
        client = await connect(own)
        stack = EvalStack(runtime, client, issuer_for(own))
        async with runtime.worker(client):
            rows = await run_pairs(
                stack, source, (a, b), repeat, on_row=print_progress if progress else lambda r: None
            )
    finally:
        runtime.ledger.engine.dispose()
    header = {
        "eval_id": eval_id,
        "suite": source.suite.name,
        "suite_version": source.suite.version,
        "pack": source.suite.pack,
        "ledger": own.ledger_url,
        "task_queue": own.task_queue,
    }
    meta = {
        c.name: {
            "source": c.source,
            "pack": c.pack.name,
            "configuration_hash": c.configuration_hash,
        }
        for c in (a, b)
    }
    cases = [c.case_id for c in source.suite.cases]
    report = build_report(header, (a.name, b.name), meta, rows, cases, repeat)
    # Kept beside the eval's ledger, whatever else the caller writes: the report stays with the
    # runs it is about.
    (own.data_dir / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return report
