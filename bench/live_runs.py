"""The runs ``bench.live`` measures: first tokens, straight and through a run, and killed
workers mid-answer (see ``bench.live`` for what each figure means)."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
from temporalio.client import Client

from agentledger.activities.models import ProviderConfig, answer_in
from agentledger.api import create_app
from agentledger.app import runs as client_ops
from agentledger.app.answer_stream import AnswerFollower, Said
from agentledger.app.config import PROVIDERS_VARIABLE, Settings
from agentledger.app.devserver import DevServer, stop_dev_server
from agentledger.app.registry import get_pack
from agentledger.app.runtime import Runtime
from agentledger.app.stack import until_recorded
from agentledger.app.temporal import connect
from agentledger.domain.workorder import ModelOverride
from bench._stack import start_dev_server
from bench.api import served, trusted
from bench.crash.crashkit import CrashSite, WorkerProcess
from bench.harness import Harness
from bench.providers.chat_server import ChatServer, Reply
from bench.providers.recorded import decision
from bench.providers.runs import REQUEST, configured_harness

PROCEED = decision({"type": "proceed_to_answer"})
FIRST = (
    "I am sorry your order arrived late. A refund for a late delivery is paid to the card you "
    "used, within five working days, once an approver has looked at it."
)
SECOND = "Your order was late: a refund goes to your card within five working days."


def _answering(text: str, *, delay: float = 0.0, chunk_delay: float = 0.01) -> Reply:
    return Reply(
        body=decision({"type": "answer", "answer": text}).body,
        delay=delay,
        chunk_delay=chunk_delay,
    )


@asynccontextmanager
async def _provider_stack() -> AsyncIterator[tuple[ChatServer, Path, DevServer]]:
    """The local provider, a data directory and a dev server on it."""
    server = ChatServer()
    with tempfile.TemporaryDirectory(prefix="agentledger-live-") as tmp:
        work = Path(tmp)
        dev = start_dev_server(work)
        try:
            yield server, work, dev
        finally:
            stop_dev_server(work)
            server.close()


async def ttft_pairs(n: int, first_token: float) -> tuple[list[float], list[float], bool]:
    """(straight, through a run) first-token times, alternating; and whether every run's
    recorded answer equals its stream."""
    direct: list[float] = []
    through: list[float] = []
    equal = True
    async with _provider_stack() as (server, work, dev):
        house = ProviderConfig(base_url=server.url, models=("m",), stream=True)
        url = f"sqlite:///{work / 'ledger.db'}"
        async with configured_harness(dev, url, work, {"house": house}) as harness:
            issuer = harness.issuer
            app = create_app(
                harness.runtime.ledger,
                harness.client,
                harness.settings.task_queue,
                [trusted(issuer)],
                signer=issuer,
            )
            base, uv, task = await served(app)
            try:
                for _ in range(n):
                    direct.append(await asyncio.to_thread(_straight, server, first_token))
                    seconds, same = await _through(harness, base, server, first_token)
                    through.append(seconds)
                    equal = equal and same
            finally:
                uv.should_exit = True
                await task
    return direct, through, equal


def _straight(server: ChatServer, first_token: float) -> float:
    """Seconds from sending the request to the first text of the answer, with the SDK."""
    server.script(_answering(FIRST, delay=first_token))
    client = openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)
    sent, text = time.perf_counter(), ""
    try:
        with client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": REQUEST}], stream=True
        ) as chunks:
            for chunk in chunks:
                if chunk.choices and chunk.choices[0].delta.content:
                    text += chunk.choices[0].delta.content
                    if answer_in(text, tagged=True):
                        return time.perf_counter() - sent
    finally:
        client.close()
    raise AssertionError("the provider never answered")


async def _through(
    harness: Harness, base: str, server: ChatServer, first_token: float
) -> tuple[float, bool]:
    """Seconds from the answer request's arrival at the provider to the first token at the
    customer's SSE client; and whether the recorded answer equals the stream."""
    server.script(PROCEED, _answering(FIRST, delay=first_token))
    asked = len(server.requests)
    order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
    order = order.model_copy(update={"model_override": ModelOverride(provider="house")})
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, order, issuer=harness.issuer
    )
    assert await until_recorded(harness.runtime, handle.id)
    headers = {"Authorization": f"Bearer {harness.issuer.token('usr_73')}"}
    async with (
        httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http,
        http.stream("GET", f"/api/runs/{handle.id}/stream") as events,
    ):
        async for line in events.aiter_lines():
            if line == "event: token":
                arrived = time.perf_counter()
                break
    await harness.finish(handle.id)
    ledger = harness.runtime.ledger
    run, stream = ledger.get_run(handle.id), ledger.read_stream(handle.id)
    same = run is not None and run.answer == stream.text == FIRST
    return arrived - server.requests[asked + 1].at, same


@dataclass
class Kills:
    runs: int = 0
    kills: int = 0
    resets: int = 0
    lost: int = 0
    duplicated: int = 0
    equal: bool = True


async def kill_runs(k: int) -> Kills:
    """``k`` runs, each with its worker killed while the answer streams."""
    found = Kills()
    async with _provider_stack() as (server, work, dev):
        address, url = dev.address, f"sqlite:///{work / 'ledger.db'}"
        site = CrashSite(address, url, f"live-{uuid.uuid4().hex[:8]}", work)
        settings = Settings(data_dir=work, database_url=url, temporal_address=address)
        runtime = Runtime.open(settings)
        runtime.seed()
        client = await connect(settings)
        house = {"base_url": server.url, "models": ["m"], "stream": True}
        os.environ[PROVIDERS_VARIABLE] = json.dumps({"house": house})  # the worker's
        try:
            async with WorkerProcess(site) as worker:
                for _ in range(k):
                    await _killed_run(runtime, client, site, server, worker, found)
                found.kills = worker.kills
        finally:
            del os.environ[PROVIDERS_VARIABLE]
            runtime.ledger.close()
    return found


async def _killed_run(
    runtime: Runtime,
    client: Client,
    site: CrashSite,
    server: ChatServer,
    worker: WorkerProcess,
    found: Kills,
) -> None:
    server.script(PROCEED, _answering(FIRST, chunk_delay=0.3), _answering(SECOND))
    principal = runtime.ledger.get_principal("usr_73")
    assert principal is not None
    order = get_pack("support").make_work_order(REQUEST, principal)
    order = order.model_copy(update={"model_override": ModelOverride(provider="house")})
    handle = await client_ops.start_run(client, site.task_queue, order, issuer=site.issuer)
    heard, follower = list[Said](), AnswerFollower(runtime.ledger, handle.id)
    following = asyncio.create_task(follower.follow(heard.append))
    while len(runtime.ledger.read_stream(handle.id).text) < 20:
        await asyncio.sleep(0.05)
    worker.kill()
    await asyncio.wait_for(handle.result(), 120)
    following.cancel()
    heard += follower.poll()
    run, stream = runtime.ledger.get_run(handle.id), runtime.ledger.read_stream(handle.id)
    answer = run.answer if run is not None else None
    found.runs += 1
    found.resets += sum(s.kind == "reset" for s in heard)
    lost, duplicated = damage(heard, answer or "")
    found.lost, found.duplicated = found.lost + lost, found.duplicated + duplicated
    found.equal = found.equal and answer == stream.text == SECOND


def damage(heard: list[Said], answer: str) -> tuple[int, int]:
    """(characters of ``answer`` never shown, characters shown twice) by the tokens after the
    last reset, each placed at its offset."""
    last = max((i for i, s in enumerate(heard) if s.kind == "reset"), default=-1)
    covered = [0] * len(answer)
    extra = 0
    for said in heard[last + 1 :]:
        for i, char in enumerate(said.text, start=said.offset):
            if i >= len(answer) or answer[i] != char:
                extra += 1
            else:
                covered[i] += 1
    return covered.count(0), extra + sum(max(0, c - 1) for c in covered)
