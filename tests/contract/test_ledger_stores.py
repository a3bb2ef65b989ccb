"""Content-addressed stores, the principal directory, schema and connectivity, on every backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select
from sqlalchemy.engine import make_url

from agentledger.activities.ledger import Ledger, LedgerUnavailable, PayloadTooLarge, upgrade
from agentledger.activities.ledger._migrate import VERSION_TABLE
from agentledger.activities.ledger._tables import metadata, tool_outputs
from agentledger.domain.canonical import sha256_hex
from bench.factories import principal, refund_run

PACKET = {
    "step": "choose_next_action",
    "sections": [
        {
            "name": "working_state",
            "tokens": 212,
            "items": [{"id": "fact:ord_4821.refundable_amount", "content": 42.5}],
        }
    ],
    "omissions": [
        {
            "item_id": "memory_778",
            "decision": "omitted",
            "reason": "not_required_for_step",
            "estimated_tokens": 48,
        }
    ],
}


def test_a_context_packet_round_trips_exactly(ledger: Ledger) -> None:
    digest = sha256_hex(PACKET)
    ledger.put_packet(digest, "run-1", "choose_next_action", PACKET)
    ledger.put_packet(digest, "run-1", "choose_next_action", PACKET)  # a retried activity

    assert ledger.get_packet(digest) == PACKET
    assert ledger.get_packet("sha256:missing") is None


def test_a_full_tool_output_round_trips_with_exact_numbers(ledger: Ledger) -> None:
    body = {
        "orders": [
            {
                "id": "ord_4821",
                "amount": 42.5,
                "big": 2**70,
                "tiny": 1e-300,
                "huge": 1e16,
                "flag": True,
                "note": "nul\x00inside",
            }
        ]
    }
    ledger.put_tool_output("sha256:out", "run-1", "op_104", "get_order", body)

    stored = _stored_output(ledger, "sha256:out")

    assert stored == body
    assert type(stored["orders"][0]["huge"]) is float and stored["orders"][0]["big"] == 2**70


def test_a_manifest_body_is_stored_under_its_hash(ledger: Ledger) -> None:
    body = {"attempt_id": "attempt-123", "policy_bundle": "returns-v5", "budgets": {"steps": 12}}

    digest = ledger.put_manifest(body)

    assert digest == sha256_hex(body)
    assert ledger.put_manifest(body) == digest
    assert ledger.get_manifest_body(digest) == body
    assert ledger.get_manifest_body("sha256:missing") is None
    assert ledger.get_manifest("sha256:missing") is None


def test_an_execution_manifest_round_trips_as_the_model_with_the_same_hash(ledger: Ledger) -> None:
    from agentledger.domain.manifest import resolve_manifest

    profile = pytest.importorskip("agentledger.packs.support.profile").SUPPORT_PROFILE
    manifest = resolve_manifest(
        profile,
        attempt_id="run-1/attempt-1",
        work_order_digest=sha256_hex({"order": "ord_4821"}),
        memory_snapshot="none",
        policy_version="returns-2026-08",
        contracts=pytest.importorskip("agentledger.packs.support").PACK.contracts,
    )

    digest = ledger.put_manifest(manifest)
    loaded = ledger.get_manifest(digest)

    assert digest == manifest.hash
    assert loaded == manifest and loaded is not None and loaded.hash == digest


def test_a_body_over_the_limit_is_rejected(database_url: str) -> None:
    with Ledger.open(database_url, max_body_bytes=1024) as ledger:
        with pytest.raises(PayloadTooLarge, match="tool output sha256:big of search"):
            ledger.put_tool_output("sha256:big", "run-1", "op_1", "search", {"x": "y" * 2000})
        assert _stored_output(ledger, "sha256:big") is None


def test_principals_are_upserted_from_the_directory(ledger: Ledger) -> None:
    dana = principal(roles=frozenset({"agent_user"}))
    ledger.put_principal(dana)
    assert ledger.get_principal("usr_73") == dana

    promoted = principal(roles=frozenset({"agent_user", "approver"}), display_name="Dana K.")
    ledger.put_principal(promoted)

    assert ledger.get_principal("usr_73") == promoted
    assert ledger.get_principal("usr_unknown") is None


def _schema_drift(ledger: Ledger) -> list[object]:
    with ledger.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return list(compare_metadata(context, metadata))


def test_the_migrations_create_exactly_the_declared_schema(ledger: Ledger) -> None:
    assert _schema_drift(ledger) == []


def test_upgrading_again_changes_nothing(ledger: Ledger) -> None:
    upgrade(ledger.engine)
    upgrade(ledger.engine)

    assert _schema_drift(ledger) == []


def test_an_unreachable_postgres_is_unavailable_and_the_password_stays_secret() -> None:
    url = "postgresql+psycopg://agent:s3cret@127.0.0.1:9/ledger"

    with pytest.raises(LedgerUnavailable) as caught:
        Ledger.open(url)

    message = str(caught.value)
    assert "127.0.0.1:9/ledger" in message and "s3cret" not in message
    assert "\n" not in message


def test_an_unopenable_sqlite_file_is_unavailable(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'missing-dir' / 'ledger.db'}"

    with pytest.raises(LedgerUnavailable, match="missing-dir"):
        Ledger.open(url)


@pytest.mark.postgres
def test_a_postgres_restart_costs_no_more_than_a_reconnect(postgres_database: str) -> None:
    """Pooled connections killed by the server are noticed (pre-ping) and replaced."""
    events = refund_run().events
    with Ledger.open(postgres_database) as ledger:
        ledger.append(events[:5])
        url = make_url(postgres_database)
        with psycopg.connect(
            host=url.host, port=url.port, user=url.username, dbname="postgres", autocommit=True
        ) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (url.database,),
            )

        assert ledger.append(events) == len(events) - 5
        assert ledger.read("run-1") == events


def _stored_output(ledger: Ledger, output_hash: str) -> Any:
    """The stored body, read as an auditor would (the runtime itself never reads outputs back)."""
    with ledger.engine.connect() as conn:
        key = tool_outputs.c.output_hash == output_hash
        return conn.execute(select(tool_outputs.c.body).where(key)).scalar_one_or_none()
