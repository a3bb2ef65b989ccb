"""Temporal payloads encrypted with keys the application holds (AES-256-GCM, ``cryptography``).

Every client and worker connects with the same converter (``app.temporal.connect``), so workflow
and activity inputs and results, update arguments and results, and failures' details reach the
Temporal server as ciphertext: whoever reads its database, its UI or a fetched history without
the keys reads no customer text. A payload carries the id of the key that sealed it in its
metadata, and the key id is bound to the ciphertext (associated data), so rotation never breaks
an old history: new payloads use the ring's ``active`` key, old ones are opened with theirs.

A workflow's payloads are sealed under a key of its own (``WorkflowKeys``: made on its first
payload, kept in the ledger's database wrapped under the ring), which erasing or shredding its
run destroys: a history Temporal still holds, in its database, a backup or an export, then opens
with no key at all. What belongs to no workflow (an unbound call) is sealed under the ring.

Keys: ``AGENTLEDGER_PAYLOAD_KEYS`` names a key ring file (JSON: ``{"active": "k2", "keys":
{"k1": "<base64 of 32 bytes>", "k2": ...}}``, shared by every worker, the API and the CLI);
without it, the data directory's own ring (``identity/payload-keys.json``, made on first use,
readable by its owner only), which suits the embedded single-machine default. ``agentledger keys
rotate`` adds a fresh active key; a process that meets a key it lacks reads its ring again.
``AGENTLEDGER_PAYLOAD_CODEC=off`` leaves payloads in clear text (histories recorded so still
decode with the codec on: a payload without the encrypted encoding passes through).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Self

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import Engine
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
)

from agentledger.activities.ledger import (
    WORKFLOW_KEY_PREFIX,
    ContentErased,
    KeyWrap,
    Sealer,
    WorkflowKeys,
    build_engine,
)
from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError, in_words
from agentledger.app.secret_files import write_once

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
NONCE_BYTES = 12
LOCAL_RING = Path("identity") / "payload-keys.json"


class PayloadKeyMissing(ValueError):
    """A payload sealed under a key this process does not hold, or not sealed by it: it cannot
    be read here, and retrying cannot help (give this worker the key ring that sealed it)."""


@dataclass(frozen=True)
class KeyRing:
    active: str
    keys: Mapping[str, bytes]

    @classmethod
    def from_document(cls, document: object, where: str) -> KeyRing:
        """A ring from its JSON document; ``ConfigError`` naming ``where`` when unusable."""
        if not isinstance(document, dict):
            raise ConfigError(f"payload key ring {where}: not a JSON object")
        try:
            keys = {str(k): base64.b64decode(v, validate=True) for k, v in document["keys"].items()}
            active = str(document["active"])
        except (KeyError, AttributeError, TypeError, ValueError) as exc:
            raise ConfigError(f"payload key ring {where}: {in_words(exc)}") from None
        if active not in keys or any(len(k) != 32 for k in keys.values()):
            raise ConfigError(
                f"payload key ring {where}: the active key must be one of its keys, and every "
                "key 32 bytes (AES-256), base64"
            )
        return cls(active, keys)

    @classmethod
    def from_file(cls, path: Path) -> KeyRing:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"payload key ring {path}: {in_words(exc)}") from None
        return cls.from_document(document, str(path))

    @classmethod
    def local(cls, data_dir: Path) -> KeyRing:
        """The data directory's ring, made with one fresh key the first time."""
        path = data_dir / LOCAL_RING
        if not path.exists():
            key = base64.b64encode(AESGCM.generate_key(bit_length=256)).decode()
            document = {"active": "local-1", "keys": {"local-1": key}}
            write_once(path, json.dumps(document).encode())
        return cls.from_file(path)


class EncryptionCodec(PayloadCodec, WithSerializationContext):
    """AES-256-GCM over each whole serialized payload, its key id as associated data.

    ``workflows``: each workflow's own key (``WorkflowKeys``, in the ledger's database). Bound to
    a workflow (``with_context``: the SDK binds the codec to the workflow whose payload it is, for
    workflows, activities, updates, queries and children alike), it seals under that workflow's
    key, which erasing its run destroys; unbound (or without ``workflows``), under the ring's
    active key. Opening goes by the key id a payload names, so either kind opens anywhere.

    ``reload``: where the ring came from, read again when a payload names a key this codec does
    not hold (another process of the fleet rotated first): a rotation reaches running workers
    without a restart. Sealing keeps the active key this codec loaded until then."""

    def __init__(
        self,
        ring: KeyRing,
        reload: Callable[[], KeyRing] | None = None,
        workflows: WorkflowKeys | None = None,
    ) -> None:
        self._reload = reload
        self._workflows = workflows
        self._workflow_id: str | None = None
        self._take(ring)

    def _take(self, ring: KeyRing) -> None:
        self._active = ring.active
        self._ciphers = {kid: AESGCM(key) for kid, key in ring.keys.items()}

    def with_context(self, context: SerializationContext) -> Self:
        workflow_id = getattr(context, "workflow_id", None)  # workflow and activity contexts
        if self._workflows is None or workflow_id == self._workflow_id:
            return self
        bound = copy.copy(self)
        bound._workflow_id = workflow_id
        return bound

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        kid, cipher = self._active, self._ciphers[self._active]
        if self._workflows is not None and self._workflow_id is not None and payloads:
            found = self._workflows.cached(self._workflow_id)
            if found is None:
                found = await asyncio.to_thread(self._workflows.sealing, self._workflow_id)
            kid, cipher = found
        return [_sealed(payload, kid, cipher) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [await self._opened(payload) for payload in payloads]

    async def _opened(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload  # recorded before the codec, or by a client without it
        kid = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        cipher = await self._cipher(kid)
        nonce, sealed = payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:]
        try:
            return Payload.FromString(cipher.decrypt(nonce, sealed, kid.encode()))
        except InvalidTag:
            raise PayloadKeyMissing(
                f"payload under key {kid!r} fails authentication: this ring's key of that id "
                "is not the one it was sealed with"
            ) from None

    async def _cipher(self, kid: str) -> AESGCM:
        if kid.startswith(WORKFLOW_KEY_PREFIX) and self._workflows is not None:
            cipher = self._workflows.cached_id(kid)
            if cipher is None:
                try:
                    cipher = await asyncio.to_thread(self._workflows.opening, kid)
                except ContentErased as exc:
                    raise PayloadKeyMissing(str(exc)) from None
            return cipher
        if kid not in self._ciphers and self._reload is not None:
            self._take(self._reload())
        ring_cipher = self._ciphers.get(kid)
        if ring_cipher is None:
            raise PayloadKeyMissing(f"payload sealed under key {kid!r}, which this ring lacks")
        return ring_cipher


def _sealed(payload: Payload, kid: str, cipher: AESGCM) -> Payload:
    nonce = os.urandom(NONCE_BYTES)
    sealed = cipher.encrypt(nonce, payload.SerializeToString(), kid.encode())
    return Payload(metadata={"encoding": ENCODING, KEY_ID: kid.encode()}, data=nonce + sealed)


def ring_path(settings: Settings) -> Path:
    """The key ring file this process uses: ``AGENTLEDGER_PAYLOAD_KEYS``, else the data
    directory's."""
    configured = settings.temporal_security.payload_keys
    return configured if configured is not None else settings.data_dir / LOCAL_RING


def rotate(path: Path) -> str:
    """Add a fresh key to the ring at ``path`` and make it active (the old keys stay, to open
    what they sealed); the new key's id. The file is replaced whole, owner-only."""
    ring = KeyRing.from_file(path)
    kid = f"{datetime.now(UTC):%Y%m%d}-{os.urandom(3).hex()}"
    keys = {**ring.keys, kid: AESGCM.generate_key(bit_length=256)}
    document = {"active": kid, "keys": {k: base64.b64encode(v).decode() for k, v in keys.items()}}
    draft = path.with_name(f".{path.name}.{os.urandom(6).hex()}")
    with os.fdopen(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
        out.write(json.dumps(document).encode())  # owner-only from its first byte
    draft.replace(path)
    return kid


def payload_codec(settings: Settings) -> EncryptionCodec | None:
    """The codec every client and worker of ``settings`` uses (``None``: codec off)."""
    if not settings.temporal_security.payload_codec:
        return None
    path = ring_path(settings)
    ring = _ring(settings)
    workflows = WorkflowKeys(
        _ledger_engine(settings), _wrap(ring), reload=lambda: _wrap(KeyRing.from_file(path))
    )
    return EncryptionCodec(ring, reload=lambda: KeyRing.from_file(path), workflows=workflows)


_ENGINES: OrderedDict[str, Engine] = OrderedDict()
ENGINES_HELD = 4
_ENGINES_LOCK = threading.Lock()


def _ledger_engine(settings: Settings) -> Callable[[], Engine]:
    """The ledger's database, where workflows' payload keys live: connected to only when a
    payload needs a key this process does not hold yet. Pooled (a fresh connection per new
    workflow cost more than sealing its payloads), and a process keeps the engines of its last
    ``ENGINES_HELD`` ledgers used, the others disposed."""
    url = settings.ledger_url

    def engine() -> Engine:
        with _ENGINES_LOCK:  # the codec looks keys up on worker threads
            if url not in _ENGINES:
                if (missing := settings.missing_ledger) is not None:
                    raise PayloadKeyMissing(
                        f"no ledger at {missing}, where workflows' payload keys are kept"
                    )
                _ENGINES[url] = build_engine(url)
                while len(_ENGINES) > ENGINES_HELD:
                    _ENGINES.popitem(last=False)[1].dispose()
            _ENGINES.move_to_end(url)  # the least recently used goes first
            return _ENGINES[url]

    return engine


def subject_sealer(settings: Settings) -> Sealer | None:
    """What seals the ledger's run content per subject, under the same ring as the payloads
    (``None`` with the codec off: the ledger then stores events in clear)."""
    if not settings.temporal_security.payload_codec:
        return None
    path = ring_path(settings)
    return Sealer(_wrap(_ring(settings)), reload=lambda: _wrap(KeyRing.from_file(path)))


def _wrap(ring: KeyRing) -> KeyWrap:
    return KeyWrap(ring.active, ring.keys)


def _ring(settings: Settings) -> KeyRing:
    if settings.temporal_security.payload_keys is None:
        return KeyRing.local(settings.data_dir)  # made on first use
    return KeyRing.from_file(ring_path(settings))
