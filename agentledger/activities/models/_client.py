"""The ``openai_compatible`` provider: one chat-completions call per model step.

Synchronous on purpose: activities run in the worker's thread pool. One ``httpx.Client`` per
(base URL, timeout) is kept for connection reuse; its transport never retries, so each retry is a
Temporal activity attempt that shows in history. The API key is read from the environment on every
call, so rotating it needs no restart and it never reaches the manifest or an event.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

import httpx

from agentledger.activities.models._errors import status_error, transport_error
from agentledger.activities.models._parse import parse_reply
from agentledger.activities.models._render import chat_request
from agentledger.activities.models._settings import ProviderSettings
from agentledger.activities.ports import ModelReply
from agentledger.activities.redaction import redact_bytes
from agentledger.domain.context import ContextPacket
from agentledger.domain.manifest import ModelProfile

_USER_AGENT = "agentledger-model-client/1"


class OpenAICompatibleClient:
    """A ``ModelClient`` for any endpoint that speaks OpenAI chat completions."""

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._environ = os.environ if environ is None else environ
        self._transport = transport
        self._clients: dict[tuple[str, float], httpx.Client] = {}
        self._lock = threading.Lock()

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        settings = ProviderSettings.of(profile)
        headers = settings.auth_headers(self._environ)
        body = chat_request(packet, profile, settings)
        url = settings.chat_url
        try:
            response = self._client(settings).post(url, json=body, headers=headers)
        except httpx.TransportError as exc:
            raise transport_error(exc, url) from None
        if not response.is_success:
            raise status_error(response, url)
        # A reply quoting the key would carry it into a decision, an event and the ledger.
        return parse_reply(redact_bytes(response.content), estimated_input=packet.total_tokens)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = self._clients, {}
        for client in clients.values():
            client.close()

    def _client(self, settings: ProviderSettings) -> httpx.Client:
        key = (settings.base_url, settings.timeout_seconds)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = httpx.Client(
                    timeout=settings.timeout_seconds,
                    transport=self._transport or httpx.HTTPTransport(retries=0),
                    headers={"User-Agent": _USER_AGENT},
                    follow_redirects=False,
                )
                self._clients[key] = client
            return client
