"""One eval run end to end: a ledger of its own beside the server's, both configurations'
runs through Temporal, the report kept beside the runs it is about. Returns; never prints
(``agentledger.cli.eval`` says what happens through the callbacks)."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agentledger.app.config import Settings
from agentledger.app.errors import EvalInputInvalid
from agentledger.app.identity import issuer_for
from agentledger.app.temporal import connect
from agentledger.evaluation.configs import Configuration
from agentledger.evaluation.report import EvalReport, RunRow, build_report
from agentledger.evaluation.runner import EvalStack, eval_settings, open_eval_stack, run_pairs
from agentledger.evaluation.sources import SuiteSource

__all__ = ["EvalStarted", "run_eval"]


@dataclass(frozen=True)
class EvalStarted:
    eval_id: str
    ledger_url: str
    data_dir: Path


async def run_eval(
    settings: Settings,
    source: SuiteSource,
    configs: tuple[Configuration, Configuration],
    repeat: int,
    *,
    on_start: Callable[[EvalStarted], None] = lambda started: None,
    on_row: Callable[[RunRow], None] = lambda row: None,
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
    on_start(EvalStarted(eval_id, own.ledger_url, own.data_dir))
    try:
        client = await connect(own)
        stack = EvalStack(runtime, client, issuer_for(own))
        async with runtime.worker(client):
            rows = await run_pairs(stack, source, (a, b), repeat, on_row=on_row)
    finally:
        runtime.ledger.engine.dispose()
    report = _report(eval_id, own, source, configs, rows, repeat)
    # Kept beside the eval's ledger, whatever else the caller writes: the report stays with the
    # runs it is about.
    (own.data_dir / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return report


def _report(
    eval_id: str,
    own: Settings,
    source: SuiteSource,
    configs: tuple[Configuration, Configuration],
    rows: list[RunRow],
    repeat: int,
) -> EvalReport:
    a, b = configs
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
    cases = [c.case_id for c in source.suite.cases]
    return build_report(header, (a.name, b.name), meta, rows, cases, repeat)
