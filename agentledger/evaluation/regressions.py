"""Production runs as regression cases: ``agentledger eval add RUN --at SEQ --suite FILE``
writes a case that forks RUN at SEQ (``domain.evaluation.regression``) into a suite file, and
the runner runs such a case as a fork of the original on the eval's own ledger.

The case carries the original's events up to SEQ and the manifests they name, so it runs on
any ledger: they are imported into the eval's ledger under the original's run id, and each
configuration's run is a fork from there (not dry: its writes go to its own sandbox, a copy of
the eval's fresh system of record, whose end state is the one hashed). The suite's approver
starts the forks, so they must hold the ``forker`` role in the directory the eval seeds.

A suite file holds the customer's request and conversation up to SEQ: keep it where the
ledger's content may be kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentledger.activities.ledger import Ledger
from agentledger.app.errors import EvalInputInvalid, NotFound, Refused
from agentledger.app.registry import get_pack
from agentledger.domain.evaluation import EvalCase, Suite
from agentledger.domain.evaluation.regression import regression_case
from agentledger.domain.evaluation.suite import ForkedFrom
from agentledger.domain.events import ApprovalGranted, ApprovalRejected, RunStarted
from agentledger.domain.forks import ForkRefused

__all__ = ["AddedCase", "add_regression", "import_origin"]


@dataclass(frozen=True)
class AddedCase:
    path: Path
    case: EvalCase
    suite: Suite
    created: bool
    """The suite file did not exist: it was made with the run's pack and the approver."""


def add_regression(
    ledger: Ledger,
    run_id: str,
    seq: int,
    path: Path,
    *,
    case_id: str | None = None,
    approver: str | None = None,
) -> AddedCase:
    """Add the case forking ``run_id`` at ``seq`` to the suite file at ``path`` (made when
    missing, its version bumped when not); ``Refused`` for a fork point or a run that cannot
    make a case, ``EvalInputInvalid`` for a suite it cannot join, ``NotFound`` for no run."""
    events = ledger.read(run_id)
    if not events or not isinstance(events[0], RunStarted):
        raise NotFound(f"no run {run_id} in the ledger")
    pack = get_pack(events[0].work_order.pack)
    writes = frozenset(n for n, c in pack.contracts.items() if c.scope == "write")
    hashes = {e.manifest_hash for e in events}
    manifests = {h: body for h in hashes if (body := ledger.get_manifest_body(h)) is not None}
    if len(manifests) < len(hashes):
        raise NotFound(f"run {run_id}'s manifests are not all in the ledger")
    name = case_id or _case_id(run_id, seq)
    try:
        case = regression_case(name, events, seq, writes, manifests)
    except ForkRefused as exc:
        raise Refused(f"cannot add {run_id} at #{seq} ({exc.code}): {exc}", exc.code) from None
    created = not path.exists()
    raw = _suite_file(path, pack.name, approver or _decider(events), name)
    written = case.model_dump(mode="json", exclude_defaults=True, exclude={"fork"})
    raw["cases"].append({**written, "fork": case.model_dump(mode="json")["fork"]})
    if not created and str(raw["version"]).isdigit():  # another case: another suite
        raw["version"] = str(int(raw["version"]) + 1)
    suite = Suite.model_validate(raw)
    path.write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return AddedCase(path, case, suite, created)


def _suite_file(path: Path, pack: str, approver: str | None, case_id: str) -> dict[str, Any]:
    """The suite file's JSON, checked to take a case of ``pack`` named ``case_id``."""
    if not path.exists():
        if approver is None:
            raise EvalInputInvalid(
                "the run had no approver to copy: name the new suite's with --approver",
                "approver_missing",
            )
        name = re.sub(r"[^a-z0-9_-]+", "-", path.stem.lower()).strip("-") or "regressions"
        return {"name": name, "version": "1", "pack": pack, "approver": approver, "cases": []}
    try:
        raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        suite = Suite.model_validate(raw)
    except (OSError, ValueError) as exc:
        raise EvalInputInvalid(f"suite file {path}: {exc}", "suite_unreadable") from None
    if suite.pack != pack:
        raise EvalInputInvalid(
            f"suite {suite.name} runs pack {suite.pack}; run is of pack {pack}", "pack_mismatch"
        )
    if any(c.case_id == case_id for c in suite.cases):
        raise EvalInputInvalid(
            f"suite {suite.name} has a case {case_id} already: name another with --case-id",
            "case_exists",
        )
    return raw


def _decider(events: list[Any]) -> str | None:
    """Who decided the run's first approval, if anyone did."""
    return next(
        (e.approver for e in events if isinstance(e, ApprovalGranted | ApprovalRejected)), None
    )


def _case_id(run_id: str, seq: int) -> str:
    return f"{re.sub(r'[^A-Za-z0-9_-]+', '-', run_id)[:80]}-at-{seq}"


def import_origin(ledger: Ledger, origin: ForkedFrom) -> None:
    """The case's recorded origin in ``ledger``, under its own run id (once: appends are
    idempotent)."""
    for body in origin.manifests:
        ledger.put_manifest(body)
    ledger.append(origin.events)
