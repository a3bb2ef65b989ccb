"""The arguments of the commands about the ledger's data: backup, restore, rebuild-read-models.
Cheap to import (argparse and the standard library only)."""

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
