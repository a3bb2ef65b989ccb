"""The eval report as a terminal table: a row per work order, the totals, the significance."""

from __future__ import annotations

from agentledger.evaluation.report import CaseSide, EvalReport, RunRow
from agentledger.evaluation.svg import fmt

__all__ = ["progress_line", "summary", "table"]

_SHOWN = (("tokens", "tokens"), ("cost", "cost"), ("steps", "steps"), ("wall_seconds", "wall s"),
          ("omissions", "omit"), ("approvals_asked", "appr"), ("denials", "deny"))  # fmt: skip


def progress_line(row: RunRow) -> str:
    verdict = "pass" if row.passed else "FAIL: " + "; ".join(row.problems)
    return (f"  {row.configuration:<16} {row.case_id:<28} #{row.repeat} {row.figures.run_id}  "
            f"{verdict}")  # fmt: skip


def _cells(side: CaseSide) -> list[str]:
    return [f"{side.passed}/{side.runs}"] + [fmt(side.figures[f]) for f, _ in _SHOWN]


def table(report: EvalReport) -> str:
    a, b = report.configurations
    head = ["work order", "config", "pass", *(label for _, label in _SHOWN), "end state", "runs"]
    lines = [head]
    for case in report.cases:
        for name in (a, b):
            side = case.sides[name]
            ends = ",".join(sorted({h.removeprefix("sha256:")[:8] for h in side.end_state_hashes}))
            lines.append([case.case_id if name == a else "", name, *_cells(side), ends,
                          " ".join(side.run_ids)])  # fmt: skip
    for name in (a, b):
        t = report.totals[name]
        lines.append(["TOTAL" if name == a else "", name, f"{t.passed}/{t.runs}",
                      *(fmt(t.figures[f]) for f, _ in _SHOWN),
                      t.configuration_hash.removeprefix("sha256:")[:12], ""])  # fmt: skip
    widths = [max(len(row[i]) for row in lines) for i in range(len(head) - 1)]
    out = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1]
           for row in lines]  # fmt: skip
    out.insert(1, "-" * min(160, sum(widths) + 2 * len(widths)))
    return "\n".join(out)


def summary(report: EvalReport) -> list[str]:
    """The table, the configurations' hashes, the ledger and the significance, line by line."""
    a, b = report.configurations
    lines = [table(report),
             f"configuration hashes: {a} {report.totals[a].configuration_hash}, "
             f"{b} {report.totals[b].configuration_hash}",
             f"ledger: {report.ledger}"]  # fmt: skip
    s = report.significance
    if s is None:
        return [
            *lines,
            "significance: run with --repeat > 1 for a sign test and bootstrap intervals",
        ]
    lines.append(f"pass rate, exact sign test over {s.pairs} paired runs: only {a} passed "
                 f"{s.pass_rate.only_a}, only {b} passed {s.pass_rate.only_b}, "
                 f"p = {s.pass_rate.p_value:.4f}")  # fmt: skip
    for figure, ci in s.figures.items():
        if ci.low != 0 or ci.high != 0:
            interval = f"{ci.confidence:.0%} bootstrap CI {ci.low:.4g} … {ci.high:.4g}"
            lines.append(f"  {figure}: {b} − {a} = {ci.mean_difference:.4g} ({interval})")
    return lines
