"""Shared fixtures. Each section is self-contained; add new sections rather than mixing them."""

from __future__ import annotations

# ===============================================================================================
# Database fixtures: `database_url` (SQLite and PostgreSQL) and `ledger` on it.
#
# PostgreSQL tests get a fresh database per test on the server named by
# AGENTLEDGER_TEST_DATABASE_URL, dropped afterwards. When that server does not answer, the
# PostgreSQL cases are skipped on a developer machine and fail under CI (env CI set), so a
# broken database can never turn a CI run green by skipping.
# ===============================================================================================
import os
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import URL, make_url

from agentledger.activities.ledger import Ledger
from bench._faultdb import DEFAULT_ADMIN_URL, conninfo, scratch_database

_FALLBACK_USERS = ("postgres", "root")


def _find_postgres() -> tuple[URL | None, str]:
    """An admin URL that answers, or None and the reason (naming the URL, never a password)."""
    configured = os.environ.get("AGENTLEDGER_TEST_DATABASE_URL")
    base = make_url(configured or DEFAULT_ADMIN_URL)
    candidates = [base] if configured else [base.set(username=u) for u in _FALLBACK_USERS]
    errors = []
    for url in candidates:
        try:
            with psycopg.connect(conninfo(url), autocommit=True):
                return url, ""
        except psycopg.Error as exc:
            errors.append(
                f"{url.render_as_string(hide_password=True)}: {str(exc).strip().splitlines()[0]}"
            )
    return None, "PostgreSQL not reachable: " + "; ".join(errors)


@pytest.fixture(scope="session")
def postgres_server() -> URL:
    """The admin URL of the test PostgreSQL server: skip locally, fail under CI."""
    url, reason = _find_postgres()
    if url is None:
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set, so this is an error, not a skip)", pytrace=False)
        pytest.skip(reason)
    return url


@pytest.fixture
def postgres_database(postgres_server: URL) -> Iterator[str]:
    """A fresh, empty database for one test, dropped (even with open connections) afterwards."""
    with scratch_database(postgres_server, "agentledger_test") as url:
        yield url


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh database URL, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    url: str = request.getfixturevalue("postgres_database")
    return url


@pytest.fixture
def ledger(database_url: str) -> Iterator[Ledger]:
    with Ledger.open(database_url) as opened:
        yield opened


# ===============================================================================================
# (end of database fixtures)
# ===============================================================================================


# ===============================================================================================
# Temporal fixtures: one real dev server per session (`temporal_server`) and a `harness` with a
# worker on a private task queue, over the `database_url` fixture above.
# ===============================================================================================
pytest_plugins = ["tests._temporal", "tests._watchdog"]
