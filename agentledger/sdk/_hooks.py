"""``AgentPack``'s hooks: the pack's system of record (schema, samples, a fork's sandbox), its
work orders' references, its policy version and its webhooks, each declared with a decorator
before ``build()``."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlalchemy import Table, insert, select
from sqlalchemy.engine import Connection, Engine

from agentledger.activities.ports import Pack
from agentledger.domain.principal import Principal
from agentledger.sdk._errors import PackDefinitionError
from agentledger.sdk._webhook import Mapper, Webhook, webhook

References = Callable[[str, Principal], Mapping[str, str]]
Copy = Callable[[Engine, Connection], None]


class PackHooks:
    """The decorators that hook a pack's own code in (``AgentPack`` holds the state; the hooks
    that are optional are unset until a decorator sets them, the pack until ``build()``)."""

    name: str
    _built: Pack | None = None
    _webhooks: dict[str, Webhook]
    _install: Callable[[Engine], None]
    _seed: Callable[[Engine], bool]
    _references: References | None = None
    _policy_version: Callable[[Engine], str] | None = None
    _sandbox: Copy | None = None

    def webhook(self, source: str) -> Callable[[Mapper], Mapper]:
        """Map ``source``'s payloads to work orders (``POST /hooks/<pack>/<source>``)."""

        def register(mapper: Mapper) -> Mapper:
            self._check_open(f"webhook {source!r}")
            if source in self._webhooks:
                raise PackDefinitionError(f"webhook {source!r}", "declared twice", pack=self.name)
            self._webhooks[source] = webhook(source, mapper, pack=self.name)
            return mapper

        return register

    def install(self, function: Callable[[Engine], None]) -> Callable[[Engine], None]:
        """Create the system of record's schema if missing (idempotent)."""
        self._check_open("install")
        self._install = function
        return function

    def seed(self, function: Callable[[Engine], bool]) -> Callable[[Engine], bool]:
        """Insert sample records once; returns False when they were already there."""
        self._check_open("seed")
        self._seed = function
        return function

    def references(self, function: References) -> References:
        """Resolve a request's terms to canonical ids before the run starts (the work order's
        ``references``), e.g. ``{"subscription_id": "sub_1001"}``."""
        self._check_open("references")
        self._references = function
        return function

    def policy_version(self, function: Callable[[Engine], str]) -> Callable[[Engine], str]:
        """The policy version pinned for an attempt (default: ``<policy_bundle>:<version>``)."""
        self._check_open("policy_version")
        self._policy_version = function
        return function

    def sandbox(self, function: Copy) -> Copy:
        """Copy the system of record from production into a fork's sandbox (a connection to
        a schema ``install`` made): forks that are not dry run their writes there, never on
        production records (``copy_tables`` copies whole tables; copy what a write reads to
        check itself). Without it, forks run dry."""
        self._check_open("sandbox")
        self._sandbox = function
        return function

    def _check_open(self, subject: str) -> None:
        if self._built is not None:
            raise PackDefinitionError(subject, "declared after build()", pack=self.name)


def copy_tables(*tables: Table) -> Copy:
    """A sandbox hook that copies ``tables``' rows, in order (parents before the rows that
    refer to them): ``pack.sandbox(copy_tables(customers, orders, refunds))``."""

    def copy(production: Engine, sandbox: Connection) -> None:
        with production.connect() as source:
            for table in tables:
                rows = [dict(row) for row in source.execute(select(table)).mappings()]
                if rows:
                    sandbox.execute(insert(table), rows)

    return copy
