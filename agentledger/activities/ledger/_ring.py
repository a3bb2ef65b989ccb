"""The key ring's part in the ledger: it wraps each subject key and workflow key (``KeyWrap``),
and a process's view of it reads the ring again when another process rotated it first (``Ring``).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from agentledger.activities.ledger._errors import ContentErased

NONCE = 12


@lru_cache(maxsize=16)
def _cipher(kek: bytes) -> AESGCM:
    """A ring key's cipher, made once (every read of sealed content unwraps its key)."""
    return AESGCM(kek)


@dataclass(frozen=True)
class KeyWrap:
    """The key ring that wraps subject keys and workflow keys: ``keys[active]`` wraps new ones."""

    active: str
    keys: Mapping[str, bytes]

    def wrap(self, key: bytes, key_id: str) -> str:
        nonce = os.urandom(NONCE)
        sealed = _cipher(self.keys[self.active]).encrypt(nonce, key, key_id.encode())
        return base64.b64encode(nonce + sealed).decode()

    def unwrap(self, kek_id: str, wrapped: str, key_id: str) -> bytes:
        kek = self.keys.get(kek_id)
        if kek is None:
            raise ContentErased(
                f"key {key_id} is wrapped under ring key {kek_id!r}, "
                "which this process's key ring lacks"
            )
        raw = base64.b64decode(wrapped)
        try:
            return _cipher(kek).decrypt(raw[:NONCE], raw[NONCE:], key_id.encode())
        except InvalidTag:
            raise ContentErased(
                f"key {key_id} does not open with ring key {kek_id!r}: not the ring that wrapped it"
            ) from None


class Ring:
    """The key ring as this process holds it: new keys wrapped under its active key, stored ones
    unwrapped, and the ring read again (``reload``) when a key is wrapped under a ring key this
    process does not hold yet (another process rotated the ring first)."""

    def __init__(self, wrap: KeyWrap, reload: Callable[[], KeyWrap] | None = None) -> None:
        self._wrap, self._reload = wrap, reload

    def wrapped(self, key: bytes, key_id: str) -> dict[str, str]:
        """The stored columns of ``key``: which ring key wraps it, and it wrapped."""
        return {"kek_id": self._wrap.active, "wrapped": self._wrap.wrap(key, key_id)}

    def key(self, kek_id: str, wrapped: str, key_id: str) -> bytes:
        if kek_id not in self._wrap.keys and self._reload is not None:
            self._wrap = self._reload()
        return self._wrap.unwrap(kek_id, wrapped, key_id)

    def cipher(self, kek_id: str, wrapped: str, key_id: str) -> AESGCM:
        return AESGCM(self.key(kek_id, wrapped, key_id))
