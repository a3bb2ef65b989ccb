"""The acceptance tier: foreign benchmarks (τ²-bench, AgentDojo) run through the real runtime.

One SQLite ledger and one in-process worker per test on the session's Temporal dev server; many
runs share that worker. The benchmark packs are registered here, not at import, so the other
tiers never load them.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentledger.app.config import Settings
from agentledger.app.devserver import DevServer
from agentledger.app.identity import Issuer, issuer_for
from agentledger.app.registry import register_pack
from agentledger.app.runtime import Runtime
from agentledger.app.temporal import connect

PACKS = {  # name -> module:attribute, as AGENTLEDGER_PACKS takes them
    "tau2-retail": "agentledger.packs.tau2:RETAIL_PACK",
    "tau2-airline": "agentledger.packs.tau2:AIRLINE_PACK",
    "agentdojo-banking": "agentledger.packs.agentdojo:BANKING_PACK",
    "agentdojo-slack": "agentledger.packs.agentdojo:SLACK_PACK",
}


@dataclass
class Stack:
    runtime: Runtime
    client: object
    settings: Settings

    @property
    def issuer(self) -> Issuer:
        """The issuer the worker's runs trust: the scripted approver's decisions are signed."""
        return issuer_for(self.settings)


def register_conformance_packs() -> None:
    for name, target in PACKS.items():
        register_pack(name, target)


@pytest.fixture
async def stack(temporal_server: DevServer, tmp_path: Path) -> AsyncIterator[Stack]:
    register_conformance_packs()
    settings = Settings(
        data_dir=tmp_path,
        database_url=f"sqlite:///{tmp_path / 'ledger.db'}",
        temporal_address=temporal_server.address,
        task_queue=f"accept-{uuid.uuid4().hex[:10]}",
    )
    runtime = Runtime.open(settings)
    runtime.seed()  # the directory the runs' requesters and approvers are checked against
    client = await connect(settings)
    async with runtime.worker(client, max_concurrent=16):
        yield Stack(runtime, client, settings)
    runtime.ledger.engine.dispose()
