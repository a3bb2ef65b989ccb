"""One ``ModelClient`` for every provider kind, each spoken through its maintained SDK.

Synchronous on purpose: activities run in the worker's thread pool. SDK clients are kept per
(protocol, base URL, timeout, key) for connection reuse, made with ``max_retries=0`` so each retry
is a Temporal activity attempt that shows in history. The API key is read from the environment on
every call, so rotating it needs no restart and it never reaches the manifest or an event. A
reply quoting the key is scrubbed before it becomes a decision, an event or a ledger row.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import anthropic
import httpx2
import openai

from agentledger.activities.models import _anthropic, _openai_chat, _openai_responses
from agentledger.activities.models._errors import sdk_error
from agentledger.activities.models._prompt import decision_tools
from agentledger.activities.models._reply import Called, Said, decision_of, problem
from agentledger.activities.models._settings import ProviderSettings
from agentledger.activities.ports import ModelReply, ModelUsage
from agentledger.activities.redaction import redact
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile

_USER_AGENT = "agentledger-model-client/2"
_NO_KEY = "unused"  # a keyless local server (llama.cpp, Ollama); the SDKs insist on some key
_ADAPTERS: dict[str, Any] = {
    "chat_completions": _openai_chat,
    "responses": _openai_responses,
    "anthropic_messages": _anthropic,
}


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
        settings = ProviderSettings.of(profile)
        key = settings.api_key(self._environ)
        adapter = _ADAPTERS[settings.api]
        body = adapter.request(packet, profile, settings)
        try:
            raw, parsed = adapter.call(self._client(settings, key), body)
        except (openai.OpenAIError, anthropic.AnthropicError) as exc:
            failure = sdk_error(exc, settings.base_url)
            if failure is None:
                raise
            raise failure from None
        tools = frozenset(t.name for t in decision_tools(packet, settings))
        reduced = adapter.said(parsed, redact(raw), tools)
        usage: ModelUsage = adapter.usage(parsed, packet.total_tokens)
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
    maker: Callable[..., Any] = (
        anthropic.Anthropic if settings.api == "anthropic_messages" else openai.OpenAI
    )
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
