"""A provider's ``max_concurrency``: this worker's calls to it never overlap beyond it; a call
that finds every slot busy for the provider's whole time-out fails retryably (overloaded),
and the limit is the worker's, never frozen into a run's manifest."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from temporalio.exceptions import ApplicationError

from agentledger.activities.models import ConfiguredProvider, ProviderClient, ProviderConfig
from agentledger.activities.ports import ModelReply
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile
from bench.providers import packets


class Counting(ProviderClient):
    """Holds each call until released, counting how many are inside at once."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = self.most = 0
        self.lock = threading.Lock()
        self.release = threading.Event()

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        self.release.wait(10)
        with self.lock:
            self.inside -= 1
        return ModelReply(output={"type": "proceed_to_answer"})


def _provider(limit: int, timeout: float = 30.0) -> tuple[ConfiguredProvider, Counting]:
    config = ProviderConfig(
        base_url="http://127.0.0.1:9/v1", models=("m",), max_concurrency=limit,
        timeout_seconds=timeout,
    )  # fmt: skip
    client = Counting()
    return ConfiguredProvider("house", config, client), client


def test_calls_beyond_the_limit_wait_for_a_slot() -> None:
    provider, client = _provider(2)
    profile = provider.profile(None)
    with ThreadPoolExecutor(6) as pool:
        calls = [pool.submit(provider.decide, packets.draft_answer(), profile) for _ in range(6)]
        while client.inside < 2:
            time.sleep(0.01)
        client.release.set()
        replies = [c.result(timeout=20) for c in calls]
    assert client.most == 2 and len(replies) == 6


def test_a_call_that_never_gets_a_slot_is_overloaded_retryably() -> None:
    provider, client = _provider(1, timeout=0.2)
    profile = provider.profile(None)
    with ThreadPoolExecutor(1) as pool:
        holding = pool.submit(provider.decide, packets.draft_answer(), profile)
        while client.inside < 1:
            time.sleep(0.01)
        with pytest.raises(ApplicationError) as busy:
            provider.decide(packets.draft_answer(), profile)
        client.release.set()
        holding.result(timeout=20)
    assert busy.value.type == "ModelOverloaded" and not busy.value.non_retryable


def test_the_limit_is_not_frozen_into_the_profile() -> None:
    provider, _ = _provider(3)
    assert "max_concurrency" not in provider.profile(None).settings
