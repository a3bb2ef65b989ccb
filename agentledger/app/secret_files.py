"""Secret files the data directory makes for itself (the local issuer's key, the payload key
ring): written once, readable by their owner only, never half-written."""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path


def write_once(path: Path, secret: bytes) -> None:
    """Write ``secret`` to ``path`` unless another process got there first (then its file
    stands). Written aside, then linked into place: two processes starting at once keep one
    secret, and nobody ever reads a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    draft = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(secret)
    try:
        with contextlib.suppress(FileExistsError):  # another process's won: keep that one
            os.link(draft, path)
    finally:
        draft.unlink()
