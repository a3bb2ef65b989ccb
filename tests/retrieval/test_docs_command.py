"""``agentledger docs add``: a Markdown file becomes a searchable revision (when approved)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentledger.activities.ledger import Ledger
from agentledger.activities.ledger._engine import build_engine
from agentledger.activities.retrieval import SqlRetriever
from agentledger.cli import _parser
from agentledger.config import Settings
from agentledger.docs_command import docs_add
from agentledger.errors import ConfigError, Refused
from agentledger.packs.support.seed import PRINCIPALS

POLICY = "# Warranty\n## Defects {#defects}\nDefective items are replaced within two years.\n"


def run(database_url: str, *argv: str) -> int:
    args = _parser().parse_args(argv)
    return asyncio.run(docs_add(Settings(database_url=database_url), args))


@pytest.fixture
def directory(database_url: str) -> str:
    with Ledger.open(database_url) as ledger:
        for principal in PRINCIPALS:
            ledger.put_principal(principal)
    return database_url


@pytest.mark.parametrize(
    ("who", "problem"),
    [("nobody_at_all", "not in the directory"), ("agent_2", "lacks the policy_approver")],
)
def test_only_a_policy_approver_can_approve_a_revision(
    directory: str, tmp_path: Path, who: str, problem: str
) -> None:
    path = tmp_path / "warranty.md"
    path.write_text(POLICY, encoding="utf-8")
    add = ("docs", "add", str(path), "--id", "warranty-2026", "--revision", "v1")
    with pytest.raises(Refused, match=problem):
        run(directory, *add, "--approve-as", who)
    with pytest.raises(Refused, match="cannot approve policies for tenant acme"):
        run(directory, *add, "--tenant", "acme", "--approve-as", "ops_globex")


def test_docs_add_loads_a_revision_that_becomes_searchable_once_approved(
    directory: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database_url = directory
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
