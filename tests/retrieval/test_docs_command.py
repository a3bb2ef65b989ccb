"""``agentledger docs add``: a Markdown file becomes a searchable revision (when approved)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentledger.activities.ledger import Ledger
from agentledger.activities.ledger._engine import build_engine
from agentledger.activities.retrieval import SqlRetriever
from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError, Refused
from agentledger.app.identity import Issuer, verify_policy_approval
from agentledger.cli.docs import docs_add
from agentledger.cli.main import _parser
from agentledger.packs.support.seed import PRINCIPALS

POLICY = "# Warranty\n## Defects {#defects}\nDefective items are replaced within two years.\n"


def run(database_url: str, *argv: str, data_dir: Path = Path(".agentledger")) -> int:
    args = _parser().parse_args(argv)
    return asyncio.run(docs_add(Settings(database_url=database_url, data_dir=data_dir), args))


@pytest.fixture
def directory(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)  # the default data directory (its signing key) is the test's
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


def test_an_approval_by_docs_add_is_signed_by_the_data_directorys_issuer(
    directory: str, tmp_path: Path
) -> None:
    """Like a run's approval: an assertion the issuer signed, naming the approver and bound to
    this revision's content, kept with the revision and verifiable with the public key alone."""
    path = tmp_path / "warranty.md"
    path.write_text(POLICY, encoding="utf-8")
    add = ("docs", "add", str(path), "--id", "warranty-2026", "--tenant", "acme")
    data_dir = tmp_path / "data"
    assert (
        run(directory, *add, "--revision", "v1", "--approve-as", "ops_lead_1", data_dir=data_dir)
        == 0
    )

    engine = build_engine(directory)
    retriever = SqlRetriever(engine)
    (doc,) = retriever.revisions("acme", "warranty-2026")
    assertion = retriever.approval_assertion("acme", "warranty-2026", "v1")
    engine.dispose()
    assert assertion is not None and doc.approved_by == "ops_lead_1"
    key = Issuer.local(data_dir).trusted_key()
    assert verify_policy_approval(assertion, key, doc) == "ops_lead_1"

    other_content = doc.model_copy(update={"content_hash": "sha256:" + "0" * 64})
    with pytest.raises(Refused, match="not about this revision"):
        verify_policy_approval(assertion, key, other_content)
    with pytest.raises(Refused, match="signature"):
        verify_policy_approval(assertion, Issuer.local(tmp_path / "elsewhere").trusted_key(), doc)


def test_a_draft_carries_no_signed_approval(directory: str, tmp_path: Path) -> None:
    path = tmp_path / "warranty.md"
    path.write_text(POLICY, encoding="utf-8")
    assert run(directory, "docs", "add", str(path), "--id", "w", "--revision", "v1") == 0
    engine = build_engine(directory)
    assert SqlRetriever(engine).approval_assertion("*", "w", "v1") is None
    engine.dispose()
