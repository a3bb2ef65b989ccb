"""The eval report as one self-contained HTML page: the totals, plots (inline SVG), and a row
per work order and configuration naming the runs and manifest hashes behind every figure."""

from __future__ import annotations

from html import escape
from pathlib import Path

from agentledger.evaluation import svg
from agentledger.evaluation.report import FIGURES, EvalReport

__all__ = ["render_html", "write_html"]

_STYLE = """body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;
margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px;text-align:left}
code{font-size:12px}.fail{color:#b00}.pass{color:#070}figure{display:inline-block;margin:0 1em}"""


_RUN_COLUMNS = ("work order", "configuration", "repeat", "outcome", "run id", "manifest hash",
                "status", "end state", "tokens", "steps", "omissions", "approvals", "denials",
                "wall s")  # fmt: skip


def _plots(report: EvalReport) -> list[str]:
    names = report.configurations
    cases = [c.case_id for c in report.cases]

    def per_case(figure: str) -> dict[str, list[float]]:
        return {n: [c.sides[n].figures[figure] for c in report.cases] for n in names}

    passed = {n: [100.0 * report.totals[n].passed / max(report.totals[n].runs, 1)] for n in names}
    sections = {n: {k: float(v) for k, v in report.totals[n].tokens_by_section.items()}
                for n in names}  # fmt: skip
    return [
        svg.grouped_bars("Work orders passed", ["pass rate"], passed, "%"),
        svg.stacked_bars("Context tokens by section (all runs)", sections),
        svg.grouped_bars("Tokens charged per work order (mean)", cases, per_case("tokens")),
        svg.grouped_bars("Wall time per work order (mean)", cases, per_case("wall_seconds"), "s"),
        svg.grouped_bars("Steps per work order (mean)", cases, per_case("steps")),
    ]


def _totals(report: EvalReport) -> str:
    head = "".join(f"<th>{f}</th>" for f in FIGURES)
    rows = []
    for name in report.configurations:
        t = report.totals[name]
        cells = "".join(f"<td>{svg.fmt(t.figures[f])}</td>" for f in FIGURES)
        rows.append(
            f"<tr><td>{escape(name)}</td><td><code>{escape(t.pack)}</code></td>"
            f"<td><code>{escape(t.configuration_hash)}</code></td>"
            f"<td>{t.passed}/{t.runs}</td>{cells}</tr>"
        )
    return (f"<table><tr><th>configuration</th><th>pack</th><th>configuration hash</th>"
            f"<th>passed</th>{head}</tr>{''.join(rows)}</table>")  # fmt: skip


def _runs(report: EvalReport) -> str:
    rows = []
    for r in report.runs:
        f = r.figures
        verdict = ('<span class="pass">pass</span>' if r.passed else
                   f'<span class="fail">{escape("; ".join(r.problems))}</span>')  # fmt: skip
        rows.append(
            f"<tr><td>{escape(r.case_id)}</td><td>{escape(r.configuration)}</td><td>{r.repeat}</td>"
            f"<td>{verdict}</td><td><code>{escape(f.run_id)}</code></td>"
            f"<td><code>{escape(f.manifest_hash)}</code></td><td>{escape(f.status)}</td>"
            f"<td><code>{escape(f.end_state_hash.removeprefix('sha256:')[:16])}</code></td>"
            f"<td>{f.tokens}</td><td>{f.steps}</td><td>{f.omissions}</td>"
            f"<td>{f.approvals_asked}</td><td>{escape(', '.join(f.denials))}</td>"
            f"<td>{f.wall_seconds:.3f}</td></tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in _RUN_COLUMNS)
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _significance(report: EvalReport) -> str:
    s = report.significance
    if s is None:
        return (
            "<p>One run per work order: run with <code>--repeat</code> &gt; 1 for significance.</p>"
        )
    a, b = report.configurations
    items = [f"<li>pass rate: exact sign test over {s.pairs} pairs, only {escape(a)} passed "
             f"{s.pass_rate.only_a}, only {escape(b)} passed {s.pass_rate.only_b}, "
             f"p = {s.pass_rate.p_value:.4f}</li>"]  # fmt: skip
    items += [
        f"<li>{f}: {escape(b)} − {escape(a)} = {ci.mean_difference:.4g} "
        f"({ci.confidence:.0%} bootstrap CI {ci.low:.4g} … {ci.high:.4g})</li>"
        for f, ci in s.figures.items()
    ]
    return f"<ul>{''.join(items)}</ul>"


def render_html(report: EvalReport) -> str:
    a, b = (escape(n) for n in report.configurations)
    return "\n".join([
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>eval {escape(report.suite)}: {a} vs {b}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{escape(report.suite)} v{escape(report.suite_version)}: {a} vs {b}</h1>",
        f"<p>eval <code>{escape(report.eval_id)}</code>, {len(report.cases)} work orders × "
        f"{report.repeat}; ledger <code>{escape(report.ledger)}</code>. Open any run with "
        "<code>agentledger show RUN_ID</code> against that ledger.</p>",
        _totals(report),
        *(f"<figure>{plot}</figure>" for plot in _plots(report)),
        "<h2>Significance</h2>", _significance(report),
        "<h2>Runs</h2>", _runs(report),
        "</body></html>",
    ])  # fmt: skip


def write_html(report: EvalReport, path: Path) -> None:
    path.write_text(render_html(report), encoding="utf-8")
