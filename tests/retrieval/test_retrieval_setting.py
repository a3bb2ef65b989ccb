"""AGENTLEDGER_RETRIEVAL: full-text by default, a typed error for what cannot be served."""

from __future__ import annotations

import pytest

from agentledger.activities.retrieval import _modes, active_mode
from agentledger.app import configure_policy_retrieval
from agentledger.config import from_environment, retrieval_mode
from agentledger.errors import ConfigError


def test_full_text_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTLEDGER_RETRIEVAL", raising=False)
    assert from_environment().retrieval == "fulltext"
    assert active_mode() == "fulltext"


def test_an_unknown_retriever_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="expected one of fulltext, semantic, fused"):
        retrieval_mode("vector")


@pytest.mark.parametrize("mode", ["semantic", "fused"])
def test_semantic_without_the_extra_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    monkeypatch.setattr(_modes, "semantic_installed", lambda: False)
    with pytest.raises(ConfigError, match=r"agentledger\[semantic\]"):
        retrieval_mode(mode)
    with pytest.raises(ConfigError, match=r"agentledger\[semantic\]"):
        configure_policy_retrieval(mode)
    assert active_mode() == "fulltext"
    assert retrieval_mode("fulltext") == "fulltext"  # needs nothing beyond the base install
