"""What each provider kind can do, declared once; a profile freezes its declaration.

``openai``       Chat Completions or the Responses API (reasoning items only in the latter).
``anthropic``    Messages: tools or ``output_config.format``; cache breakpoints; thinking blocks.
``openai_compatible``  what the endpoint was configured to accept (llama.cpp, vLLM, Ollama,
                 Gemini's compatible endpoint, Azure OpenAI differ in tools and schemas).
"""

from __future__ import annotations

from typing import Literal

from agentledger.activities.models._settings import Api, ProviderSettings
from agentledger.domain.model_profile import ModelCapabilities

Kind = Literal["openai_compatible", "openai", "anthropic"]
KINDS: tuple[Kind, ...] = ("openai_compatible", "openai", "anthropic")
APIS: dict[Kind, tuple[Api, ...]] = {
    "openai_compatible": ("chat_completions",),
    "openai": ("chat_completions", "responses"),
    "anthropic": ("anthropic_messages",),
}


def capabilities(settings: ProviderSettings) -> ModelCapabilities:
    if settings.api == "anthropic_messages":
        return ModelCapabilities(
            native_tool_calls=True,
            json_schema_output=True,
            streaming=True,
            prompt_caching=True,
            reasoning_blocks=True,
        )
    if settings.api == "responses":
        return ModelCapabilities(
            native_tool_calls=True,
            json_schema_output=True,
            streaming=True,
            prompt_caching=True,
            reasoning_blocks=True,
        )
    return ModelCapabilities(
        native_tool_calls=settings.native_tools or settings.decisions == "tools",
        json_schema_output=settings.structured_output == "json_schema",
        streaming=True,
        prompt_caching=settings.send_prompt_cache_key,
        reasoning_blocks=False,
    )


def kind_defaults(kind: Kind) -> dict[str, str]:
    """Settings a kind implies unless configured: its first protocol, and decisions as native
    tool calls where the provider has them (the compatible servers vary, so JSON schema)."""
    defaults: dict[str, str] = {"api": APIS[kind][0]}
    if kind != "openai_compatible":
        defaults["decisions"] = "tools"
    return defaults
