"""Real model providers behind the ``ModelClient`` port (``activities.ports``).

Provider kinds (``_capabilities``): ``openai`` (Chat Completions or the Responses API),
``anthropic`` (Messages) and ``openai_compatible`` (vLLM, llama.cpp, Ollama, Gemini's compatible
endpoint, Azure OpenAI), each spoken through its maintained SDK (``_sdk``) with the SDK's own
retries off. A work order may pick only a provider configured on the worker (``_providers``).
Provider failures are typed ``ApplicationError``s (``_errors``); replies that are not valid
decisions come back as output for the model step to reject and record (``_reply``).
"""

from agentledger.activities.models._capabilities import KINDS, capabilities
from agentledger.activities.models._fallback import decide_along_chain, unconfigured_fallbacks
from agentledger.activities.models._prompt import messages, prompt, sent_messages, tools
from agentledger.activities.models._providers import (
    ConfiguredProvider,
    ProviderConfig,
    chosen_model,
    providers_from,
)
from agentledger.activities.models._registry import (
    OPENAI_COMPATIBLE,
    load_sdks,
    model_clients,
    openai_compatible_profile,
    provider_profile,
)
from agentledger.activities.models._reply import MALFORMED
from agentledger.activities.models._sdk import ProviderClient
from agentledger.activities.models._settings import ProviderSettings
from agentledger.activities.models._tap import AnswerSink, ReplyTap, answer_in

__all__ = [
    "KINDS",
    "MALFORMED",
    "OPENAI_COMPATIBLE",
    "AnswerSink",
    "ConfiguredProvider",
    "ProviderClient",
    "ProviderConfig",
    "ProviderSettings",
    "ReplyTap",
    "answer_in",
    "capabilities",
    "chosen_model",
    "decide_along_chain",
    "load_sdks",
    "messages",
    "model_clients",
    "openai_compatible_profile",
    "prompt",
    "provider_profile",
    "providers_from",
    "sent_messages",
    "tools",
    "unconfigured_fallbacks",
]
