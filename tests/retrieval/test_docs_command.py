"""``agentledger docs add``: a Markdown file becomes a searchable revision (when approved)."""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from activities.ledger._engine import build_engine
from activities.retrieval import SqlRetriever
from agentledger.config import Settings
from agentledger.docs_command import add_docs_parser, docs_add
from agentledger.errors import ConfigError

POLICY = "# Warranty\n## Defects {#defects}\nDefective items are replaced within two years.\n"


def run(database_url: str, *argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_docs_parser(parser.add_subparsers(dest="command"))
    return asyncio.run(docs_add(Settings(database_url=database_url), parser.parse_args(argv)))


def test_docs_add_loads_a_revision_that_becomes_searchable_once_approved(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "warranty.md"
    path.write_text(POLICY, encoding="utf-8")
    add = ("docs", "add", str(path), "--id", "warranty-2026", "--tenant", "acme")

    assert run(database_url, *add, "--revision", "v1") == 0
    assert "draft" in capsys.readouterr().out
    assert run(database_url, *add, "--revision", "v1", "--approve-as", "ops_lead_1") == 0

    engine = build_engine(database_url)
    hits = SqlRetriever(engine).search("defective", tenant_id="acme", now=datetime.now(UTC))
    engine.dispose()
    assert [(h.source_id, h.revision) for h in hits] == [("warranty-2026#defects", "v1")]
    path.write_text(POLICY.replace("two", "three"), encoding="utf-8")
    with pytest.raises(ConfigError, match="new revision"):
        run(database_url, *add, "--revision", "v1")
