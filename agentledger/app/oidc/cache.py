"""Tokens from the identity provider, kept per data directory until they expire.

``identity/oidc-tokens.json`` in the data directory, readable by its owner only (a bearer token
is a password while it lives), one entry per (issuer, client, resource). Each entry keeps its
expiry; one that expires within ``EXPIRY_MARGIN`` is not used, so a request never leaves with a
token that dies on the way.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

EXPIRY_MARGIN_SECONDS = 30


@dataclass(frozen=True)
class Token:
    access_token: str
    expires_at: float
    """Epoch seconds, from the provider's ``expires_in`` when the token was issued."""
    subject: str
    refresh_token: str | None = None

    def usable(self, now: float) -> bool:
        return now < self.expires_at - EXPIRY_MARGIN_SECONDS


class TokenCache:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "identity" / "oidc-tokens.json"

    def get(self, key: str) -> Token | None:
        entry = self._read().get(key)
        if not isinstance(entry, dict):
            return None
        try:
            return Token(**entry)
        except TypeError:  # written by another version: as if absent
            return None

    def put(self, key: str, token: Token) -> None:
        entries = self._read()
        entries[key] = asdict(token)
        self._write(entries)

    def forget(self, key: str) -> bool:
        entries = self._read()
        if entries.pop(key, None) is None:
            return False
        self._write(entries)
        return True

    def _read(self) -> dict[str, object]:
        try:
            found = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def _write(self, entries: dict[str, object]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        draft = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(entries, out)
        os.replace(draft, self.path)  # whole or not at all, never half a file
