"""A model call down its profile's frozen fallback chain.

The profile's own model is asked first; a failure that the next route's ``on`` names (a rate
limit, a 5xx, a time-out, an overloaded or unreachable provider) moves the call down the chain
within the same activity attempt. Anything else — a rejected request, a configuration error —
is raised as it is, and a reply the model gave (a refusal, a reply that fails its schema) is an
answer, never a reason to ask another model. When the whole chain fails, the last failure is
raised and Temporal retries the step from the top.
"""

from __future__ import annotations

from collections.abc import Mapping

from temporalio.exceptions import ApplicationError

from agentledger.activities.models._errors import config_error
from agentledger.activities.models._providers import ConfiguredProvider
from agentledger.activities.models._tap import ReplyTap
from agentledger.activities.ports import ModelClient, ModelReply, StreamingModelClient
from agentledger.domain.context import ContextPacket
from agentledger.domain.model_profile import FallbackOn, ModelProfile

FAILURE_CLASS: dict[str, FallbackOn] = {
    "ModelRateLimited": "rate_limited",
    "ModelServerError": "server_error",
    "ModelTimeout": "timeout",
    "ModelOverloaded": "overloaded",
    "ModelUnavailable": "unavailable",
}


def decide_along_chain(
    models: Mapping[str, ModelClient],
    packet: ContextPacket,
    profile: ModelProfile,
    tap: ReplyTap | None = None,
) -> tuple[ModelReply, int]:
    """The reply and the index of the route that gave it (0: the profile's own model). A
    client that streams tells ``tap`` its reply as it comes; the next route restarts it."""
    last = len(profile.fallbacks)
    for index in range(last + 1):
        client, route = route_of(models, profile, index)
        try:
            if tap is not None and isinstance(client, StreamingModelClient):
                return client.decide_streaming(packet, route, tap), index
            return client.decide(packet, route), index
        except ApplicationError as failure:
            if index == last or FAILURE_CLASS.get(failure.type or "") not in (
                profile.fallbacks[index].on
            ):
                raise
            if tap is not None:
                tap.restart()
    raise AssertionError("unreachable: the last route returns or raises")


def route_of(
    models: Mapping[str, ModelClient], profile: ModelProfile, index: int
) -> tuple[ModelClient, ModelProfile]:
    """The client and the profile the chain's ``index``-th route is called with."""
    provider, model, price = profile.route(index)
    client = models.get(provider)
    if client is None:
        raise config_error(
            f"model profile {profile.name!r} names provider {provider!r}, which is not "
            f"configured on this worker (has: {', '.join(sorted(models))})"
        )
    if index == 0:
        return client, profile
    if isinstance(client, ConfiguredProvider):
        route = client.profile(model)
    elif provider == profile.provider:  # the same endpoint, another of its models
        route = profile.model_copy(update={"name": f"{provider}:{model}", "model": model})
    else:
        raise config_error(
            f"fallback {provider}:{model} of {profile.name!r} is neither the profile's own "
            "provider nor one configured on this worker"
        )
    return client, route.model_copy(update={"price": price, "fallbacks": ()})


def unconfigured_fallbacks(profiles: Mapping[str, ModelProfile], providers: set[str]) -> list[str]:
    """For worker start: every ``profile → provider`` whose fallback names no provider here."""
    return [
        f"{name} → {route.provider}"
        for name, profile in profiles.items()
        for route in profile.fallbacks
        if route.provider not in providers
    ]
