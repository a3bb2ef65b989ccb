"""The key ring the contract tier seals ledgers with: one per test session, never on disk."""

from __future__ import annotations

import os

from agentledger.activities.ledger import KeyWrap

RING = KeyWrap("k1", {"k1": os.urandom(32)})
