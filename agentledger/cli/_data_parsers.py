"""The arguments of the commands about stored data: backup, restore, rebuild-read-models and
the payload key ring. Cheap to import (argparse and the standard library only)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


def data_parsers(command: Callable[..., argparse.ArgumentParser]) -> None:
    backup = command("backup", help="copy the ledger to a new file (SQLite or pg_dump archive)")
    backup.add_argument("path", type=Path, help="the backup file to write (never overwritten)")
    restore = command("restore", help="restore a backup into an empty database and verify each run")
    restore.add_argument("path", type=Path, help="a file `agentledger backup` wrote")
    restore.add_argument(
        "--no-verify", action="store_true", help="skip checking each run against Temporal"
    )
    rebuild = command(
        "rebuild-read-models", help="recompute the runs, approvals and receipts tables from the log"
    )
    rebuild.add_argument("--run", metavar="RUN_ID", help="only this run (default: all)")
    keys = command("keys", help="the payload key ring: list its key ids, or rotate it")
    keys.add_argument(
        "keys_action", choices=("list", "rotate"), metavar="ACTION",
        help="list (key ids, the active one marked; no key material) or rotate (a fresh "
        "active key, the old ones kept)",
    )  # fmt: skip
    keys.add_argument("--file", type=Path, default=None, help="this ring file instead")
