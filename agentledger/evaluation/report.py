"""The comparison an eval reports: per work order and in total, every figure traced to the runs
(and the manifests) that produced it.

``EvalReport`` is the JSON document; the terminal table and the HTML page render it. A figure in
``cases`` is the mean over the case's repeats of one configuration; ``run_ids`` lists the runs it
is the mean of, and each run row names its manifest hash (``agentledger show RUN_ID`` opens it).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from agentledger.domain.evaluation import BootstrapCI, RunFigures, SignTest, bootstrap_ci, sign_test

__all__ = ["FIGURES", "CaseSide", "EvalReport", "RunRow", "SideTotal", "build_report"]

FIGURES = (
    "steps",
    "tokens",
    "input_tokens",
    "output_tokens",
    "cost",
    "wall_seconds",
    "receipts",
    "denials",
    "approvals_asked",
    "insufficient_context",
    "omissions",
)
"""The numeric figures compared (counts of receipts and denials; the rest as the run has them)."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RunRow(Frozen):
    configuration: str
    case_id: str
    repeat: int
    figures: RunFigures
    problems: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.problems

    def value(self, figure: str) -> float:
        if figure in ("receipts", "denials"):
            return float(len(getattr(self.figures, figure)))
        return float(getattr(self.figures, figure))


class CaseSide(Frozen):
    """One configuration on one work order: its runs and their mean figures."""

    run_ids: tuple[str, ...]
    manifest_hashes: tuple[str, ...]
    passed: int
    runs: int
    end_state_hashes: tuple[str, ...]
    figures: dict[str, float]
    tokens_by_section: dict[str, float]
    problems: tuple[str, ...]


class CaseComparison(Frozen):
    case_id: str
    sides: dict[str, CaseSide]
    same_end_state: bool


class SideTotal(Frozen):
    name: str
    source: str
    pack: str
    configuration_hash: str
    passed: int
    runs: int
    figures: dict[str, float]
    """Totals over every run (sums, not means)."""
    tokens_by_section: dict[str, int]


class Significance(Frozen):
    pairs: int
    pass_rate: SignTest
    figures: dict[str, BootstrapCI]


class EvalReport(Frozen):
    eval_id: str
    suite: str
    suite_version: str
    pack: str
    ledger: str
    task_queue: str
    repeat: int
    configurations: tuple[str, str]
    totals: dict[str, SideTotal]
    cases: tuple[CaseComparison, ...]
    runs: tuple[RunRow, ...]
    significance: Significance | None = None
    notes: tuple[str, ...] = Field(default_factory=tuple)


def _side(rows: Sequence[RunRow]) -> CaseSide:
    n = len(rows)
    sections: dict[str, float] = {}
    for r in rows:
        for name, tokens in r.figures.tokens_by_section.items():
            sections[name] = sections.get(name, 0.0) + tokens / n
    return CaseSide(
        run_ids=tuple(r.figures.run_id for r in rows),
        manifest_hashes=tuple(r.figures.manifest_hash for r in rows),
        passed=sum(r.passed for r in rows),
        runs=n,
        end_state_hashes=tuple(r.figures.end_state_hash for r in rows),
        figures={f: sum(r.value(f) for r in rows) / n for f in FIGURES},
        tokens_by_section=sections,
        problems=tuple(sorted({p for r in rows for p in r.problems})),
    )


def _total(name: str, rows: Sequence[RunRow], meta: dict[str, str]) -> SideTotal:
    sections: dict[str, int] = {}
    for r in rows:
        for section, tokens in r.figures.tokens_by_section.items():
            sections[section] = sections.get(section, 0) + tokens
    return SideTotal(
        name=name,
        source=meta["source"],
        pack=meta["pack"],
        configuration_hash=meta["configuration_hash"],
        passed=sum(r.passed for r in rows),
        runs=len(rows),
        figures={f: sum(r.value(f) for r in rows) for f in FIGURES},
        tokens_by_section=dict(sorted(sections.items())),
    )


def _significance(a: list[RunRow], b: list[RunRow], seed: int) -> Significance:
    rng = random.Random(seed)
    return Significance(
        pairs=len(a),
        pass_rate=sign_test([r.passed for r in a], [r.passed for r in b]),
        figures={
            f: bootstrap_ci([r.value(f) for r in a], [r.value(f) for r in b], rng) for f in FIGURES
        },
    )


def build_report(
    header: dict[str, str],
    names: tuple[str, str],
    meta: dict[str, dict[str, str]],
    rows: Sequence[RunRow],
    case_ids: Sequence[str],
    repeat: int,
) -> EvalReport:
    """The report of ``rows`` (both configurations, every case and repeat). Significance is
    computed where there is more than one repeat; pairs are (case, repeat)."""
    by = {(r.configuration, r.case_id, r.repeat): r for r in rows}
    cases = []
    for case_id in case_ids:
        sides = {n: _side([by[n, case_id, k] for k in range(repeat)]) for n in names}
        ends = {h for side in sides.values() for h in side.end_state_hashes}
        cases.append(CaseComparison(case_id=case_id, sides=sides, same_end_state=len(ends) == 1))
    paired = [[by[n, c, k] for c in case_ids for k in range(repeat)] for n in names]
    return EvalReport(
        **header,  # type: ignore[arg-type]
        repeat=repeat,
        configurations=names,
        totals={n: _total(n, side, meta[n]) for n, side in zip(names, paired, strict=True)},
        cases=tuple(cases),
        runs=tuple(rows),
        significance=_significance(paired[0], paired[1], seed=0) if repeat > 1 else None,
    )
