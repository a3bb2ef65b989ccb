"""Content-addressed stores (manifests, context packets, tool outputs) and the principal directory.

A packet and a tool's full output copy a run's content: with a key ring they are sealed under the
run's subject key, as its events are (``_subjects``); manifests hold the pack's terms, not a
customer's, and stay in clear.

Content-addressed puts are insert-or-ignore: the hash names the content, so a second put of the
same hash (a retried activity) is a no-op on both backends. Principals are upserted, because the
directory is the source of truth for roles and scopes and they change.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, Table, Text, cast, select

from agentledger.activities._sql import insert_for, insert_missing
from agentledger.activities.ledger._base import LedgerBase
from agentledger.activities.ledger._codec import check_ids, encode_body, loads
from agentledger.activities.ledger._tables import (
    context_packets,
    manifests,
    principals,
    tool_outputs,
)
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.principal import Principal, canonical_user_id

_OF_A_RUN = frozenset({context_packets.name, tool_outputs.name})
"""Content-addressed tables whose rows copy a run's content: sealed like its events."""


class ContentStore(LedgerBase):
    def put_manifest(self, manifest: ExecutionManifest | Mapping[str, Any]) -> str:
        """Store a frozen manifest under its hash and return the hash."""
        if isinstance(manifest, Mapping):
            body, digest = dict(manifest), sha256_hex(manifest)
        else:
            body, digest = manifest.canonical(), manifest.hash
        self._put(
            manifests, {"hash": digest, "created_at": datetime.now(UTC)}, body, f"manifest {digest}"
        )
        return digest

    def get_manifest(self, manifest_hash: str) -> ExecutionManifest | None:
        body = self.get_manifest_body(manifest_hash)
        if body is None:
            return None
        return ExecutionManifest.model_validate(body)

    def get_manifest_body(self, manifest_hash: str) -> dict[str, Any] | None:
        return self._get(manifests, manifests.c.hash, manifest_hash)

    def put_packet(self, packet_hash: str, run_id: str, step: str, body: Any) -> None:
        with self._writing() as conn:
            self.put_packet_in(conn, packet_hash, run_id, step, body)

    def put_packet_in(
        self, conn: Connection, packet_hash: str, run_id: str, step: str, body: Any
    ) -> None:
        """``put_packet`` inside the caller's transaction (a model step stores its packet in
        the one that appends its outbox: one commit per step instead of two)."""
        row = {"packet_hash": packet_hash, "run_id": run_id, "step": step}
        self._insert(conn, context_packets, row, body, f"context packet {packet_hash}")

    def get_packet(self, packet_hash: str) -> dict[str, Any] | None:
        """The packet as built (``ContentErased`` when sealed under a key that is gone)."""
        query = select(cast(context_packets.c.body, Text)).where(
            context_packets.c.packet_hash == packet_hash
        )
        with self._reading() as conn:
            stored = conn.execute(query).scalar_one_or_none()
            if stored is None:
                return None
            found: dict[str, Any] = loads(self.open_stored(conn, [stored])[0])
        return found

    def put_tool_output(
        self, output_hash: str, run_id: str, operation_id: str, tool: str, body: Any
    ) -> None:
        row = {
            "output_hash": output_hash,
            "run_id": run_id,
            "operation_id": operation_id,
            "tool": tool,
        }
        self._put(tool_outputs, row, body, f"tool output {output_hash} of {tool}")

    def put_principal(self, principal: Principal) -> None:
        row = {
            "user_id": principal.user_id,
            "tenant_id": principal.tenant_id,
            "roles": sorted(principal.roles),
            "scopes": sorted(principal.scopes),
            "display_name": principal.display_name,
        }
        what = f"principal {principal.user_id!r}"
        if canonical_user_id(principal.user_id) != principal.user_id:
            # One spelling per identity, so lookups by any spelling find exactly one entry.
            raise ValueError(
                f"{what}: directory ids are canonical, "
                f"write {canonical_user_id(principal.user_id)!r}"
            )
        check_ids(
            what,
            principal.user_id,
            principal.tenant_id,
            principal.display_name,
            *principal.roles,
            *principal.scopes,
        )
        with self._writing() as conn:
            stmt = insert_for(conn.dialect.name, principals)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[principals.c.user_id],
                    set_={
                        k: stmt.excluded[k]
                        for k in ("tenant_id", "roles", "scopes", "display_name")
                    },
                ),
                row,
            )

    def get_principal(self, user_id: str) -> Principal | None:
        """The directory entry for ``user_id`` in any spelling (``USR_73`` finds ``usr_73``)."""
        with self._reading() as conn:
            row = conn.execute(
                select(principals).where(principals.c.user_id == canonical_user_id(user_id))
            ).first()
        return None if row is None else _principal(row)

    def principals_over(self, tenant_id: str) -> list[Principal]:
        """Everyone whose tenant is ``tenant_id`` or one that contains it (``acme`` for
        ``acme/eu``): the people who may act in that tenant."""
        parts = tenant_id.split("/")
        tenants = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        with self._reading() as conn:
            rows = conn.execute(
                select(principals)
                .where(principals.c.tenant_id.in_(tenants))
                .order_by(principals.c.user_id)
            ).all()
        return [_principal(row) for row in rows]

    def _put(self, table: Table, row: dict[str, Any], body: Any, what: str) -> None:
        with self._writing() as conn:
            self._insert(conn, table, row, body, what)

    def _insert(
        self, conn: Connection, table: Table, row: dict[str, Any], body: Any, what: str
    ) -> None:
        if isinstance(body, BaseModel):
            body = body.model_dump(mode="json")
        # Encoded once, checked, and handed over as-is (no second serialisation).
        check_ids(what, *(v for v in row.values() if isinstance(v, str)))
        encoded = encode_body(body, what, self.max_body_bytes)
        if self.sealer is not None and table.name in _OF_A_RUN:
            encoded = self.sealer.seal_body(conn, row["run_id"], bytes(encoded))
        row["body"] = encoded
        insert_missing(conn, table, [row])

    def _get(self, table: Table, key: Any, value: str) -> Any | None:
        with self._reading() as conn:
            return conn.execute(select(table.c.body).where(key == value)).scalar_one_or_none()


def _principal(row: Any) -> Principal:
    m = row._mapping
    return Principal(
        user_id=m["user_id"],
        tenant_id=m["tenant_id"],
        roles=frozenset(m["roles"]),
        scopes=frozenset(m["scopes"]),
        display_name=m["display_name"],
    )
