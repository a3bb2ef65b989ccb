"""One ``ModelClient`` for every provider kind, each spoken through its maintained SDK.

Synchronous on purpose: activities run in the worker's thread pool. SDK clients are kept per
(protocol, base URL, timeout, key) for connection reuse, made with ``max_retries=0`` so each retry
is a Temporal activity attempt that shows in history. The API key is read from the environment on
every call, so rotating it needs no restart and it never reaches the manifest or an event. A
reply quoting the key is scrubbed before it becomes a decision, an event or a ledger row.

The SDKs are imported when a protocol is first spoken, or at worker start by ``load`` for the
protocols the worker is configured to speak: together they cost a process some 80 MB and over a
second of CPU (``anthropic`` alone is 3,500 modules), which a worker whose runs use a pack's
scripted models, or only one provider, should not carry.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from types import ModuleType
from typing import TYPE_CHECKING, Any

from agentledger.activities.models._errors import sdk_error
from agentledger.activities.models._prompt import decision_tools
from agentledger.activities.models._reply import Called, Said, decision_of, problem
from agentledger.activities.models._settings import ProviderSettings
from agentledger.activities.ports import ModelReply, ModelUsage, ReplyDeltas
from agentledger.activities.redaction import redact
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile

if TYPE_CHECKING:
    import httpx2

_USER_AGENT = "agentledger-model-client/2"
_NO_KEY = "unused"  # a keyless local server (llama.cpp, Ollama); the SDKs insist on some key
_ADAPTERS = {
    "chat_completions": "_openai_chat",
    "responses": "_openai_responses",
    "anthropic_messages": "_anthropic",
}


def adapter(api: str) -> ModuleType:
    """The module that speaks ``api`` (importing it imports its SDK)."""
    return importlib.import_module(f"agentledger.activities.models.{_ADAPTERS[api]}")


def load(apis: Iterable[str]) -> None:
    """Import now the SDKs of these protocols: at worker start, so a missing SDK stops the
    worker there and a run's first model call does not pay for the import."""
    for api in sorted(set(apis)):
        adapter(api)


class ProviderClient:
    """A ``ModelClient`` that speaks the protocol a profile's settings name."""

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        transport: httpx2.BaseTransport | None = None,
    ) -> None:
        self._environ = os.environ if environ is None else environ
        self._transport = transport
        self._clients: dict[tuple[object, ...], Any] = {}
        self._lock = threading.Lock()

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        return self._decide(packet, profile, None)

    def decide_streaming(
        self, packet: ContextPacket, profile: ModelProfile, tap: ReplyDeltas
    ) -> ModelReply:
        """``decide``, streamed when the profile's settings say ``stream``: the reply's parts
        reach ``tap`` as they arrive, and the whole reply is read as if it came at once."""
        return self._decide(packet, profile, tap)

    def _decide(
        self, packet: ContextPacket, profile: ModelProfile, tap: ReplyDeltas | None
    ) -> ModelReply:
        settings = ProviderSettings.of(profile)
        key = settings.api_key(self._environ)
        speaker = adapter(settings.api)
        body = speaker.request(packet, profile, settings)
        try:
            client = self._client(settings, key)
            if tap is not None and settings.stream:
                raw, parsed = speaker.stream(client, body, tap)
            else:
                raw, parsed = speaker.call(client, body)
        except Exception as exc:
            failure = sdk_error(exc, settings.base_url)
            if failure is None:
                raise
            raise failure from None
        tools = frozenset(t.name for t in decision_tools(packet, settings))
        reduced = speaker.said(parsed, redact(raw), tools)
        usage: ModelUsage = speaker.usage(parsed, packet.total_tokens)
        if isinstance(reduced, str):
            return ModelReply(output=problem(reduced, redact(raw)), usage=usage)
        return ModelReply(output=decision_of(_scrubbed(reduced)), usage=usage)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = self._clients, {}
        for client in clients.values():
            client.close()

    def _client(self, settings: ProviderSettings, key: str | None) -> Any:
        ident = (
            settings.api,
            settings.base_url,
            settings.timeout_seconds,
            key,
            settings.api_key_header,
        )
        with self._lock:
            client = self._clients.get(ident)
            if client is None:
                client = _make(settings, key, self._http(settings))
                self._clients[ident] = client
            return client

    def _http(self, settings: ProviderSettings) -> httpx2.Client:
        import httpx2

        return httpx2.Client(
            timeout=settings.timeout_seconds,
            transport=self._transport or httpx2.HTTPTransport(retries=0),
            follow_redirects=False,
        )


def _make(settings: ProviderSettings, key: str | None, http: httpx2.Client) -> Any:
    headers = {"User-Agent": _USER_AGENT}
    if key is not None and settings.key_in_own_header:
        headers[settings.api_key_header] = key
        key = None
    maker: Callable[..., Any] = adapter(settings.api).CLIENT
    return maker(
        api_key=key or _NO_KEY,
        base_url=settings.base_url,
        timeout=settings.timeout_seconds,
        max_retries=0,  # Temporal owns retries: every attempt shows in history
        default_headers=headers,
        http_client=http,
    )


def _scrubbed(said: Said) -> Said:
    """The reply's texts without any secret the worker holds."""
    calls = tuple(
        Called(
            c.name, redact(c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments))
        )
        for c in said.calls
    )
    return replace(said, text=redact(said.text), refusal=redact(said.refusal), calls=calls)
