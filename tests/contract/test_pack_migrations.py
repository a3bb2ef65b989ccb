"""Pack schemas under Alembic, on both backends: a fresh database migrates to exactly the shape
the pack's tables declare; one that ``install`` made before migrations existed (support amounts
Numeric(12, 2)) is taken over and widened, its rows kept; a second run does nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy.engine import Engine

from agentledger.activities.ledger import build_engine
from agentledger.activities.pack_schemas import version_table
from agentledger.packs.billing import records as billing
from agentledger.packs.support import records as support

AT = datetime(2026, 11, 2, tzinfo=UTC)
CUSTOMER = {
    "customer_id": "cus_1", "tenant_id": "t1", "name": "Ana", "email": "ana@example.com",
    "language": "en", "tier": "standard",
}  # fmt: skip
ORDER = {
    "order_id": "ord_1", "tenant_id": "t1", "customer_id": "cus_1", "status": "delivered",
    "amount": Decimal("42.50"), "currency": "EUR", "ordered_at": AT, "promised_by": AT,
    "delivered_at": AT, "items": "[]",
}  # fmt: skip


def _differences(engine: Engine, metadata: sa.MetaData) -> list[object]:
    """What differs between the database's tables of ``metadata`` and their declaration."""
    mine = set(metadata.tables)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        found = compare_metadata(context, metadata)
    return [d for d in found if _table_of(d) in mine]


def _table_of(difference: Any) -> str | None:
    """The table an Alembic difference is about (a list of ``modify_*`` is about one column)."""
    op = difference[0] if isinstance(difference, list) else difference
    for part in op[1:]:
        if isinstance(part, sa.Table):
            return part.name
        if isinstance(getattr(part, "table", None), sa.Table):
            return str(part.table.name)
    return op[2] if len(op) > 2 and isinstance(op[2], str) else None


def _amounts(engine: Engine) -> set[tuple[int, int]]:
    """The declared (precision, scale) of the support tables' amount columns, as reflected."""
    found = set()
    for table in ("support_orders", "support_payments", "support_refunds"):
        for column in sa.inspect(engine).get_columns(table):
            if column["name"] == "amount":
                found.add((column["type"].precision, column["type"].scale))
    return found


def _revision(engine: Engine, pack: str) -> str:
    with engine.connect() as conn:
        return conn.execute(sa.text(f"SELECT version_num FROM {version_table(pack)}")).scalar_one()


def test_a_fresh_database_migrates_to_the_declared_shape(database_url: str) -> None:
    engine = build_engine(database_url)
    try:
        support.install(engine)
        billing.install(engine)
        support.install(engine)  # again: nothing to do
        assert _differences(engine, support.metadata) == []
        assert _differences(engine, billing.metadata) == []
        assert (_revision(engine, "support"), _revision(engine, "billing")) == (
            "support_0002",
            "billing_0001",
        )
    finally:
        engine.dispose()


def test_tables_made_before_migrations_are_taken_over_and_widened(database_url: str) -> None:
    engine = build_engine(database_url)
    try:
        _as_install_made_them(engine)
        assert _amounts(engine) == {(12, 2)}
        with engine.begin() as conn:
            conn.execute(sa.insert(support.customers).values(CUSTOMER))
            conn.execute(sa.insert(support.orders).values(ORDER))
        support.install(engine)
        assert _differences(engine, support.metadata) == []
        assert _amounts(engine) == {(13, 3)}
        orders, one = support.orders, support.orders.c.order_id == ORDER["order_id"]
        with engine.begin() as conn:
            kept = conn.execute(sa.select(orders.c.amount).where(one)).scalar_one()
            conn.execute(sa.update(orders).where(one).values(amount=Decimal("1.125")))
            exact = conn.execute(sa.select(orders.c.amount).where(one)).scalar_one()
        assert (kept, exact) == (Decimal("42.50"), Decimal("1.125"))
    finally:
        engine.dispose()


def _as_install_made_them(engine: Engine) -> None:
    """The support tables as ``install`` created them before the pack had migrations: the
    first revision's shape (amounts Numeric(12, 2)), and no version table."""
    config = Config()
    config.set_main_option("script_location", str(support.MIGRATIONS))
    with engine.begin() as conn:
        config.attributes.update(connection=conn, version_table=version_table("support"))
        command.upgrade(config, "support_0001")
        conn.execute(sa.text(f"DROP TABLE {version_table('support')}"))
