"""A schema at its newest revision is recognised without Alembic (``schema_versions``), on both
backends: the heads read from the scripts are Alembic's own for every history the product ships
and for a branched one; a database behind, or with no version table, is not at head and is
migrated; one at head is left alone."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from agentledger.activities.ledger import build_engine
from agentledger.activities.pack_schemas import version_table
from agentledger.activities.schema_versions import at_head, script_heads
from agentledger.packs.support import records as support

ROOT = Path(__file__).resolve().parents[2] / "agentledger"
SHIPPED = sorted(ROOT.glob("**/migrations/versions"))


def _alembic_heads(migrations: Path) -> frozenset[str]:
    config = Config()
    config.set_main_option("script_location", str(migrations))
    return frozenset(ScriptDirectory.from_config(config).get_heads())


def _script(versions: Path, revision: str, down: str | tuple[str, ...] | None) -> None:
    annotated = "revision: str" if revision.endswith("b") else "revision"  # both spellings
    (versions / f"{revision}.py").write_text(
        f"from alembic import op\n\n{annotated} = {revision!r}\ndown_revision = {down!r}\n"
        "branch_labels = None\ndepends_on = None\n\n\n"
        "def upgrade() -> None:\n    pass\n\n\ndef downgrade() -> None:\n    pass\n"
    )


def test_every_shipped_history_has_the_heads_alembic_reads() -> None:
    assert len(SHIPPED) >= 3  # the ledger's and the two packs'
    for versions in SHIPPED:
        heads = script_heads(versions.parent)
        assert heads is not None and heads == _alembic_heads(versions.parent), versions


def test_branches_and_merges_are_read_as_alembic_reads_them(tmp_path: Path) -> None:
    versions = tmp_path / "versions"
    versions.mkdir()
    (tmp_path / "script.py.mako").write_text("")
    _script(versions, "r1", None)
    _script(versions, "r2a", "r1")
    _script(versions, "r2b", "r1")
    assert script_heads(tmp_path) == _alembic_heads(tmp_path) == {"r2a", "r2b"}
    _script(versions, "r3", ("r2a", "r2b"))
    assert script_heads(tmp_path) == _alembic_heads(tmp_path) == {"r3"}


def test_a_script_whose_revision_is_not_a_literal_is_left_to_alembic(tmp_path: Path) -> None:
    versions = tmp_path / "versions"
    versions.mkdir()
    (versions / "r1.py").write_text("revision = 'r' + '1'\ndown_revision = None\n")
    assert script_heads(tmp_path) is None


def test_only_a_database_at_head_is_left_alone(database_url: str) -> None:
    engine = build_engine(database_url)
    table = version_table("support")
    try:
        assert not at_head(engine, support.MIGRATIONS, table)  # fresh: no version table
        config = Config()
        config.set_main_option("script_location", str(support.MIGRATIONS))
        with engine.begin() as conn:
            config.attributes.update(connection=conn, version_table=table)
            command.upgrade(config, "support_0001")
        assert not at_head(engine, support.MIGRATIONS, table)  # one revision behind
        support.install(engine)  # migrates
        assert at_head(engine, support.MIGRATIONS, table)
        with engine.connect() as conn:
            found = conn.execute(sa.text(f"SELECT version_num FROM {table}")).scalars().all()
        assert found == ["support_0002"]
    finally:
        engine.dispose()


def test_a_history_with_two_heads_is_never_taken_as_migrated(
    database_url: str, tmp_path: Path
) -> None:
    versions, heads = tmp_path / "versions", ("r2a", "r2b")
    versions.mkdir()
    _script(versions, "r1", None)
    for head in heads:
        _script(versions, head, "r1")
    engine = build_engine(database_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE branched_version (version_num VARCHAR(32))"))
            for head in heads:
                conn.execute(sa.text("INSERT INTO branched_version VALUES (:v)"), {"v": head})
        assert not at_head(engine, tmp_path, "branched_version")  # Alembic's to judge
    finally:
        engine.dispose()
