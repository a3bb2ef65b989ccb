"""The erasure register: which subject keys each erasure destroyed, kept outside the ledger.

A backup taken before an erasure still holds the subject's wrapped key, and the key ring that
opens it; restored alone, it would bring the subject back. So every erasure also appends a line
here, and ``app.backups.restore`` erases again, in the restored ledger, every subject the
register lists (``reapply``). A line holds the erasure's id, when it was done, the subject as the
erasure log names it (``subject_digest``) and the ids of the keys destroyed; none of them names
anybody::

    {"erasure_id": "era_…", "erased_at": "2026-12-07T09:00:00+00:00",
     "subject_digest": "…", "key_ids": ["sk_…"]}

``AGENTLEDGER_ERASURE_REGISTER`` names the file; by default it is the data directory's
``identity/erasures.jsonl``. Keep it where the key ring is kept, and back it up with the ring:
a restore reads the register as it is then, not as it was when the backup was taken.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agentledger.activities.ledger import Ledger, erasure
from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError

LOCAL_REGISTER = Path("identity") / "erasures.jsonl"


@dataclass(frozen=True)
class Entry:
    erasure_id: str
    erased_at: datetime
    subject_digest: str
    key_ids: tuple[str, ...]


def register_path(settings: Settings) -> Path:
    configured = settings.erasure_register
    return configured if configured is not None else settings.data_dir / LOCAL_REGISTER


def record(path: Path, erased: erasure.Erased, subject_digest: str) -> None:
    """Append the erasure's line, on disk before this returns (owner-only when created)."""
    erasure_id = erased.erasure_id
    line = json.dumps(
        {"erasure_id": erasure_id, "erased_at": erased.erased_at.isoformat(),
         "subject_digest": subject_digest, "key_ids": erased.key_ids}
    )  # fmt: skip
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise ConfigError(
            f"erasure {erasure_id} is done, but the erasure register {path} could not be "
            f"written ({exc.strerror}): add this line to it by hand: {line}"
        ) from None


def entries(path: Path) -> list[Entry]:
    """The register's lines; none when it does not exist yet. A line that is not one is a
    ``ConfigError`` naming it: a restore must not skip an erasure unseen."""
    if not path.exists():
        return []
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            found.append(
                Entry(
                    str(data["erasure_id"]),
                    datetime.fromisoformat(data["erased_at"]),
                    str(data["subject_digest"]),
                    tuple(map(str, data["key_ids"])),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"{path}:{number} is not an erasure register line ({exc})") from None
    return found


def reapply(ledger: Ledger, register: list[Entry]) -> list[str]:
    """Erase again, in ``ledger``, what each registered erasure destroyed and the ledger still
    holds; the ids of the erasures made (by ``restore``, their reason naming the one
    re-applied)."""
    done = []
    for entry in register:
        for tenant, subject in erasure.unerased(
            ledger, entry.subject_digest, entry.key_ids, entry.erased_at
        ):
            begun = erasure.begin(ledger, tenant, subject)
            reason = f"{entry.erasure_id} re-applied to a restored backup"
            erased = erasure.finish(ledger, begun, by="restore", reason=reason, verified={})
            done.append(erased.erasure_id)
    return done
