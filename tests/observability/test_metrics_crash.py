"""A worker (``agentledger worker --metrics-port``) SIGKILLed while its run waits on an approval:
what it served before dying plus what its successor serves is exactly what the ledger holds.
The successor replays the run and re-sends nothing it counts; its scrape also carries the
Temporal SDK's own metrics."""

from __future__ import annotations

import asyncio
import urllib.request
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client

from agentledger.activities.ledger import Ledger
from agentledger.domain.principal import Principal
from bench._metrics_truth import (
    LATENCY_COUNT,
    ledger_counters,
    mismatches,
    sample,
    scraped_counters,
)
from bench._stack import free_port
from bench.crash import fault_pack
from bench.crash.crashkit import (
    CrashSite,
    WorkerProcess,
    approve_from_inbox,
    parked_on_approval,
    start_run,
)

# The crash tier's fixtures: a seeded SQLite ledger, its site, a client and the principals.
from tests.crash.conftest import (  # noqa: F401
    approver,
    client,
    crash_ledger,
    crash_site,
    customer,
    sqlite_url,
)


@dataclass(frozen=True)
class MetricsSite(CrashSite):
    """The crash site whose workers serve ``/metrics`` (the restarted one on the same port)."""

    metrics_port: int = 0

    def worker_env(self, *args: Any, **kwargs: Any) -> dict[str, str]:
        env = super().worker_env(*args, **kwargs)
        return {**env, "AGENTLEDGER_METRICS_PORT": str(self.metrics_port)}


async def scrape(port: int, timeout: float = 30.0) -> str:
    """The worker's scrape, once it is up (a restarted worker takes a moment)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            return await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/metrics")
        except OSError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.1)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        body: bytes = reply.read()
    return body.decode()


def counted(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {k: v for k, v in scraped_counters(text).items() if k[0] != LATENCY_COUNT}


async def test_the_scrapes_of_a_killed_worker_and_its_successor_add_up_to_the_ledger(
    crash_site: CrashSite,  # noqa: F811 - the crash tier's fixture
    crash_ledger: Ledger,  # noqa: F811 - the crash tier's fixture
    client: Client,  # noqa: F811 - the crash tier's fixture
    customer: Principal,  # noqa: F811 - the crash tier's fixture
    approver: Principal,  # noqa: F811 - the crash tier's fixture
) -> None:
    order = fault_pack.crash_order(0)
    site = MetricsSite(**vars(crash_site), metrics_port=free_port())
    async with WorkerProcess(site) as worker:
        run_id = await start_run(client, site, customer, order)
        await parked_on_approval(client, run_id)
        before_kill = counted(await scrape(site.metrics_port))
        assert mismatches(before_kill, truth(crash_ledger, run_id)) == []
        worker.kill()
        while worker.kills == 0:  # its supervisor restarts it, on the same port
            await asyncio.sleep(0.05)
        await approve_from_inbox(client, crash_ledger, run_id, approver, issuer=site.issuer)
        await asyncio.wait_for(client.get_workflow_handle(run_id).result(), 120)
        text = await scrape(site.metrics_port)

    after = counted(text)
    total = {k: before_kill.get(k, 0) + after.get(k, 0) for k in set(before_kill) | set(after)}
    assert mismatches(total, truth(crash_ledger, run_id)) == []
    assert after[sample("agentledger_runs_ended_total", pack=fault_pack.NAME, status="completed")]
    assert any(line.startswith("temporal_") for line in text.splitlines())


def truth(ledger: Ledger, run_id: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return ledger_counters(ledger.read(run_id), ledger)
