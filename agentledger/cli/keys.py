"""``agentledger keys list`` and ``agentledger keys rotate [--file PATH]``: the payload key ring
(``app.payloads``) by key id, never its key material, and a fresh active key added to it."""

from __future__ import annotations

import argparse

from agentledger.app.config import Settings
from agentledger.app.payloads import KeyRing, ring_path, rotate
from agentledger.cli._common import say

__all__ = ["keys"]


async def keys(settings: Settings, args: argparse.Namespace) -> int:
    path = args.file or ring_path(settings)
    if args.keys_action == "rotate":
        if args.file is None and settings.temporal_security.payload_keys is None:
            KeyRing.local(settings.data_dir)  # a data directory's first rotation makes it
        kid = rotate(path)
        say(kid)
        say(f"· {path}: {kid} is active; older keys stay, to open what they sealed")
        say(
            "· a fleet shares one ring: give every worker and the API this file (they read it "
            "again when they meet a key they lack); running processes seal with their old "
            "active key until restarted"
        )
        return 0
    ring = KeyRing.from_file(path)
    for kid in ring.keys:
        say(f"{kid}{'  (active)' if kid == ring.active else ''}")
    say(f"· {path}")
    return 0
