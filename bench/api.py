"""The API's own cost: an approval through ``POST …/decision`` against the bare Temporal update,
a grant with an edited amount against a plain grant, and listing 100,000 runs: filtered,
searched by request words and a page deep down the cursor.

On one embedded stack (dev server, in-process worker, SQLite ledger) N refund runs are parked on
their approval. Half are rejected with the bare ``decide_approval`` update (digest known,
assertion signed by the stack's issuer, no HTTP), half through the API over loopback HTTP
(token verified, run authorised and digest read from the ledger, the assertion signed for the
caller, the same update); the two alternate, so neither gets a warmer stack. Then 2N more are
granted through the API, alternately as proposed and with the amount halved (the run judges the
edit: schema, widening, the gate). Then a ledger seeded with 100,000 runs (written into the read
model directly) is listed through the API: by status, by waiting-on-approval, by request words
(every word, any case), by words and requester, and a page nine tenths of the way down the
cursor.

    python -m bench.api [--runs 40] [--seed-runs 100000] [--lists 200]

Targets: approve-through-the-API p50 ≤ 1.5× the bare update's; an edited grant's p50 ≤ 1.2×
a plain grant's; list p99 < 100 ms.
Prints the figures side by side, then one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from agentledger.activities.ledger import Ledger
from agentledger.activities.ledger._tables import runs as runs_table
from agentledger.api import TrustedIssuer, create_app
from agentledger.api.routes.runs import page_cursor
from agentledger.app.identity import Issuer
from agentledger.workflows import AgentRunWorkflow, ApprovalDecision
from bench._stack import Stack, embedded_stack, free_port
from bench.parked import _park


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def served(
    app: FastAPI, port: int | None = None
) -> tuple[str, uvicorn.Server, asyncio.Task[None]]:
    """Serve ``app`` on loopback (on ``port`` when the app was told its public URL)."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    return f"http://127.0.0.1:{port}", server, task


async def _bare(stack: Stack, run_id: str, approval_id: str, digest: str) -> float:
    """The update as a trusted client sends it: digest known, assertion signed, no HTTP."""
    started = time.perf_counter()
    assertion = stack.issuer.approval_assertion(
        "ops_lead_1", run_id=run_id, approval_id=approval_id, digest=digest, approve=False
    )
    decision = ApprovalDecision(
        approval_id=approval_id,
        approver_id="ops_lead_1",
        approve=False,
        proposal_digest=digest,
        reason="bench",
        assertion=assertion,
    )
    handle = stack.client.get_workflow_handle(run_id)
    await handle.execute_update(AgentRunWorkflow.decide_approval, decision)
    return time.perf_counter() - started


def trusted(issuer: Issuer) -> TrustedIssuer:
    return TrustedIssuer(issuer=issuer.name, jwks=issuer.public_jwks(), directory=True)


async def _via_api(http: httpx.AsyncClient, run_id: str, approval_id: str) -> float:
    started = time.perf_counter()
    response = await http.post(
        f"/api/runs/{run_id}/approvals/{approval_id}/decision",
        json={"approve": False, "reason": "bench"},
    )
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.text
    return elapsed


async def _approve_via_api(
    http: httpx.AsyncClient, run_id: str, approval_id: str, edits: dict[str, Any] | None
) -> float:
    """A grant through the API, plain or with the amount edited (the run judges the edit)."""
    body: dict[str, Any] = {"approve": True, "reason": "bench"}
    if edits is not None:
        body["edits"] = edits
    started = time.perf_counter()
    response = await http.post(f"/api/runs/{run_id}/approvals/{approval_id}/decision", json=body)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.text
    return elapsed


async def _grants(stack: Stack, http: httpx.AsyncClient, n: int) -> dict[str, list[float]]:
    """Plain grants and grants of a halved amount, alternating, on 2n newly parked runs."""
    ids = set(await _park(stack, 2 * n))
    rows = [a for a in stack.runtime.ledger.approvals(status="pending") if a.run_id in ids]
    times: dict[str, list[float]] = {"approve": [], "approve_edit": []}
    for i, row in enumerate(rows):
        if i % 2 == 0:
            times["approve"].append(await _approve_via_api(http, row.run_id, row.approval_id, None))
        else:
            half = {"amount": round(float(row.arguments["amount"]) / 2, 2)}  # type: ignore[arg-type]
            times["approve_edit"].append(
                await _approve_via_api(http, row.run_id, row.approval_id, half)
            )
    return times


async def approvals(stack: Stack, n: int) -> dict[str, list[float]]:
    ids = await _park(stack, 2 * n)
    pending = {a.run_id: a for a in stack.runtime.ledger.approvals(status="pending")}
    issuer = stack.issuer
    app = create_app(
        stack.runtime.ledger,
        stack.client,
        stack.settings.task_queue,
        [trusted(issuer)],
        signer=issuer,
    )
    base, server, task = await served(app)
    headers = {"Authorization": f"Bearer {issuer.token('ops_lead_1')}"}
    times: dict[str, list[float]] = {"bare": [], "api": []}
    try:
        async with httpx.AsyncClient(base_url=base, headers=headers) as http:
            for i, run_id in enumerate(ids):
                row = pending[run_id]
                if i % 2 == 0:
                    times["bare"].append(
                        await _bare(stack, run_id, row.approval_id, row.proposal_digest)
                    )
                else:
                    times["api"].append(await _via_api(http, run_id, row.approval_id))
            times.update(await _grants(stack, http, n))
    finally:
        server.should_exit = True
        await task
    return times


REASONS = ("it arrived late", "the box was broken", "wrong size", "never arrived", "duplicate")


def seed_runs(ledger: Ledger, count: int) -> None:
    """Rows straight into the runs read model: listing reads nothing else."""
    base = datetime(2026, 1, 1, tzinfo=UTC)
    statuses = ("completed", "running", "failed", "awaiting_approval")
    rows = [
        {
            "run_id": f"run_seed_{i:06d}",
            "status": statuses[i % 4],
            "pack": "support",
            "principal_id": f"usr_{i % 500}",
            "tenant_id": "acme" if i % 3 else "globex",
            "request_text": f"Refund for order ord_{i}: {REASONS[i % len(REASONS)]}",
            "answer": None,
            "cited_source_ids": None,
            "failure_reason": None,
            "created_at": base + timedelta(seconds=i),
            "updated_at": base + timedelta(seconds=i),
            "last_seq": 10,
            "manifest_hash": "sha256:seed",
        }
        for i in range(count)
    ]
    with ledger.engine.begin() as conn:
        conn.execute(runs_table.insert(), rows)


async def listing(stack: Stack, count: int, requests: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="agentledger-bench-api-") as tmp:
        ledger = Ledger.open(f"sqlite:///{Path(tmp) / 'ledger.db'}")
        try:
            ops = stack.runtime.ledger.get_principal("ops_lead_1")
            assert ops is not None
            ledger.put_principal(ops)
            seed_runs(ledger, count)
            issuer = stack.issuer
            app = create_app(ledger, stack.client, "unused", [trusted(issuer)], signer=issuer)
            headers = {"Authorization": f"Bearer {issuer.token('ops_lead_1')}"}
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://bench", headers=headers
            ) as http:
                deep = page_cursor(
                    datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=count // 10),
                    f"run_seed_{count // 10:06d}",
                )  # nine tenths of the way down
                return {
                    name: await _time_list(http, params, requests)
                    for name, params in (
                        ("status", {"status": "awaiting_approval", "limit": 50}),
                        ("waiting", {"waiting_on_approval": "false", "limit": 50}),
                        ("search", {"q": "broken box", "limit": 50}),
                        ("search_requester", {"q": "late", "principal": "usr_5", "limit": 50}),
                        ("deep_page", {"status": "failed", "cursor": deep, "limit": 50}),
                    )
                }
        finally:
            ledger.close()


async def _time_list(http: httpx.AsyncClient, params: dict[str, Any], n: int) -> list[float]:
    times = []
    for i in range(n + 5):
        started = time.perf_counter()
        response = await http.get("/api/runs", params=params)
        elapsed = time.perf_counter() - started
        assert response.status_code == 200 and len(response.json()["runs"]) == 50
        if i >= 5:  # the first few warm the connection pool and statement cache
            times.append(elapsed)
    return times


def _row(label: str, values: list[float]) -> str:
    p50, p99 = statistics.median(values) * 1000, pct(values, 0.99) * 1000
    return f"{label:<34}{p50:>9.2f}{p99:>9.2f}{len(values):>6}"


def report(times: dict[str, list[float]], lists: dict[str, list[float]]) -> dict[str, Any]:
    ms = lambda v: round(v * 1000, 2)  # noqa: E731
    bare50, api50 = statistics.median(times["bare"]), statistics.median(times["api"])
    print(f"{'':<34}{'p50 ms':>9}{'p99 ms':>9}{'n':>6}")
    print(_row("bare update (validator)", times["bare"]))
    print(_row("approve via API", times["api"]))
    print(_row("grant via API", times["approve"]))
    print(_row("grant with an edit via API", times["approve_edit"]))
    for name, values in lists.items():
        print(_row(f"list, {name}", values))
    ratio = api50 / bare50
    print(f"API / bare p50: {ratio:.2f}x (target <= 1.5x)")
    approve50, edit50 = (
        statistics.median(times["approve"]),
        statistics.median(times["approve_edit"]),
    )
    edit_ratio = edit50 / approve50
    print(f"edited grant / plain grant p50: {edit_ratio:.2f}x (target <= 1.2x)")
    worst = max(pct(v, 0.99) for v in lists.values())
    print(f"list p99: {ms(worst)} ms (target < 100 ms)")
    return {
        "bare_p50_ms": ms(bare50),
        "bare_p99_ms": ms(pct(times["bare"], 0.99)),
        "api_p50_ms": ms(api50),
        "api_p99_ms": ms(pct(times["api"], 0.99)),
        "api_over_bare_p50": round(ratio, 3),
        "list_p50_ms": {k: ms(statistics.median(v)) for k, v in lists.items()},
        "list_p99_ms": {k: ms(pct(v, 0.99)) for k, v in lists.items()},
        "approve_p50_ms": ms(approve50),
        "approve_edit_p50_ms": ms(edit50),
        "approve_edit_p99_ms": ms(pct(times["approve_edit"], 0.99)),
        "edit_over_approve_p50": round(edit_ratio, 3),
        "approve_within_target": ratio <= 1.5,
        "edit_within_target": edit_ratio <= 1.2,
        "list_within_target": worst < 0.1,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40, help="decisions per path")
    parser.add_argument("--seed-runs", type=int, default=100_000)
    parser.add_argument("--lists", type=int, default=200, help="list requests per filter")
    args = parser.parse_args()
    async with embedded_stack() as stack, stack.runtime.worker(stack.client):
        times = await approvals(stack, args.runs)
        lists = await listing(stack, args.seed_runs, args.lists)
    print(json.dumps({"bench": "api", "run": uuid.uuid4().hex[:8], **report(times, lists)}))


if __name__ == "__main__":
    asyncio.run(main())
