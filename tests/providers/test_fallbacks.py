"""A model call moves down its frozen fallback chain on a provider failure, never on an answer.

Two local chat-completions servers stand for two configured providers; the real SDK client
calls them. The primary fails as OpenAI documents (429 with ``retry-after``, 500, 529); the
fallback answers. A refusal or a reply that fails its schema is the model's answer: it is
returned for the step to reject, and the fallback is never asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

import pytest
from temporalio.exceptions import ApplicationError

from agentledger.activities.models import (
    ProviderConfig,
    decide_along_chain,
    model_clients,
    unconfigured_fallbacks,
)
from agentledger.activities.ports import ModelClient
from agentledger.domain.model_profile import ModelProfile, ModelRoute, Price
from bench.providers import packets
from bench.providers.chat_server import ChatServer, Reply
from bench.providers.recorded import decision, error, openai_completion
from bench.providers.recorded_native import anthropic_error

PRICE = Price(
    currency="USD",
    input_per_million=Decimal("0.15"),
    cached_input_per_million=Decimal("0.075"),
    output_per_million=Decimal("0.60"),
)


class _Settings:
    def __init__(self, table: dict[str, ProviderConfig]) -> None:
        self.model_providers = table
        self.environ: dict[str, str] = {}


@pytest.fixture
def backup() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


def _chain(primary: ChatServer, backup: ChatServer) -> tuple[dict[str, ModelClient], ModelProfile]:
    table = {
        "primary": ProviderConfig(base_url=primary.url, models=("big",)),
        "backup": ProviderConfig(base_url=backup.url, models=("small",)),
    }
    models = model_clients(_Settings(table))
    profile = models["primary"].profile("big")  # type: ignore[attr-defined]
    route = ModelRoute(
        provider="backup",
        model="small",
        price=PRICE,
        on=("rate_limited", "server_error", "overloaded"),
    )
    return models, profile.model_copy(update={"fallbacks": (route,)})


@pytest.mark.parametrize(
    "failure",
    [
        error(429, "Rate limit reached", **{"retry-after": "20"}),
        error(500, "boom"),
        anthropic_error(529, "overloaded_error", "Overloaded"),
    ],
    ids=["429", "500", "529"],
)
def test_a_provider_failure_moves_the_call_to_the_next_route(
    chat_server: ChatServer, backup: ChatServer, failure: Reply
) -> None:
    models, profile = _chain(chat_server, backup)
    chat_server.script(failure)
    backup.script(decision({"type": "proceed_to_answer"}))
    reply, route = decide_along_chain(models, packets.choose_next_action(), profile)
    assert route == 1 and reply.output["type"] == "proceed_to_answer"
    assert backup.requests[0].body["model"] == "small"
    assert profile.route(route) == ("backup", "small", PRICE)


def test_a_refusal_is_an_answer_and_never_moves_down_the_chain(
    chat_server: ChatServer, backup: ChatServer
) -> None:
    models, profile = _chain(chat_server, backup)
    refused = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
    body = openai_completion(content=None)
    body["choices"][0]["message"] = refused
    chat_server.script(Reply(body=body))
    reply, route = decide_along_chain(models, packets.choose_next_action(), profile)
    assert route == 0 and reply.output["problem"] == "the model refused"
    assert backup.requests == []


def test_a_failure_the_route_does_not_name_is_raised(
    chat_server: ChatServer, backup: ChatServer
) -> None:
    models, profile = _chain(chat_server, backup)
    chat_server.script(error(400, "bad request"))
    with pytest.raises(ApplicationError) as caught:
        decide_along_chain(models, packets.choose_next_action(), profile)
    assert caught.value.type == "ModelRequestRejected" and backup.requests == []


def test_when_the_whole_chain_fails_the_last_failure_goes_to_temporal(
    chat_server: ChatServer, backup: ChatServer
) -> None:
    models, profile = _chain(chat_server, backup)
    chat_server.script(error(503, "down"))
    backup.script(error(429, "slow down", **{"retry-after": "2"}))
    with pytest.raises(ApplicationError) as caught:
        decide_along_chain(models, packets.choose_next_action(), profile)
    assert caught.value.type == "ModelRateLimited" and not caught.value.non_retryable


def test_a_chain_naming_an_unconfigured_provider_is_found_at_worker_start() -> None:
    profile = ModelProfile(
        name="p",
        provider="primary",
        model="big",
        fallbacks=(ModelRoute(provider="nowhere", model="x"),),
    )
    assert unconfigured_fallbacks({"support": profile}, {"primary"}) == ["support → nowhere"]
