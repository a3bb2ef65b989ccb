"""AGENTLEDGER_RETRIEVAL: full-text by default, a typed error for what cannot be served."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import inspect

from agentledger.activities.ledger._engine import build_engine
from agentledger.activities.retrieval import _modes, active_mode
from agentledger.app.config import from_environment, retrieval_mode
from agentledger.app.errors import ConfigError
from agentledger.app.runtime import configure_policy_retrieval
from tests.e2e.test_cli import cli


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


def test_migrate_creates_the_retrieval_tables_with_the_embeddings(
    database_url: str, tmp_path: Path
) -> None:
    env = {**os.environ, "AGENTLEDGER_DATABASE_URL": database_url}
    env["AGENTLEDGER_DATA_DIR"] = str(tmp_path)
    done = cli(env, "migrate")
    assert done.returncode == 0, done.stderr
    engine = build_engine(database_url)
    try:
        tables = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert {"retrieval_passages", "retrieval_embeddings", "retrieval_generation"} <= tables


def test_an_unknown_retriever_stops_the_cli_with_the_config_exit_code(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTLEDGER_DATA_DIR": str(tmp_path), "AGENTLEDGER_RETRIEVAL": "vector"}
    env.pop("AGENTLEDGER_DATABASE_URL", None)
    done = cli(env, "migrate")
    assert done.returncode == 2
    assert "AGENTLEDGER_RETRIEVAL" in done.stderr + done.stdout
