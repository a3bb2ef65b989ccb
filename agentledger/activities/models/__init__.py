"""Real model providers behind the ``ModelClient`` port (``activities.ports``).

``openai_compatible`` talks to any OpenAI chat-completions endpoint (OpenAI, Azure, vLLM, Ollama,
llama.cpp servers, LiteLLM). A work order may pick only a provider configured on the worker
(``_providers``). Provider failures are typed ``ApplicationError``s (see
``_errors``); replies that are not valid decisions come back as output for the model step to
reject and record.
"""

from agentledger.activities.models._client import OpenAICompatibleClient
from agentledger.activities.models._parse import MALFORMED, parse_reply, parse_usage
from agentledger.activities.models._providers import (
    ConfiguredProvider,
    ProviderConfig,
    chosen_model,
    providers_from,
)
from agentledger.activities.models._registry import (
    OPENAI_COMPATIBLE,
    model_clients,
    openai_compatible_profile,
)
from agentledger.activities.models._render import chat_request, messages, sent_messages
from agentledger.activities.models._settings import ProviderSettings

__all__ = [
    "MALFORMED",
    "OPENAI_COMPATIBLE",
    "ConfiguredProvider",
    "OpenAICompatibleClient",
    "ProviderConfig",
    "ProviderSettings",
    "chat_request",
    "chosen_model",
    "messages",
    "model_clients",
    "openai_compatible_profile",
    "parse_reply",
    "parse_usage",
    "providers_from",
    "sent_messages",
]
