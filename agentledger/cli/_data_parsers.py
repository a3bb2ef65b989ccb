"""The arguments of the commands about stored data: backup, restore, rebuild-read-models, the
payload key ring, erasure and evaluation suites. Cheap to import (argparse and the standard library
only)."""

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
    erase = command(
        "erase", help="erase a subject: cancel their runs, shred their content, keep the audit"
    )
    erase.add_argument("--subject", required=True, help="the user whose content goes (usr_73)")
    erase.add_argument(
        "--as", dest="principal", required=True,
        help="who erases (the eraser role, in the subject's tenant)",
    )  # fmt: skip
    erase.add_argument("--reason", required=True, help="why (recorded in the erasure log)")


def eval_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "suite",
        help="a shipped suite (support, tau2-retail, tau2-airline, agentdojo-banking, "
        "agentdojo-slack) or a suite file (JSON); or `add RUN_ID --at SEQ --suite FILE`: a "
        "recorded run as a regression case, forked at SEQ, expecting what the run did after",
    )
    parser.add_argument("run_id", nargs="?", help="with add: the run to make a case of")
    parser.add_argument("--at", type=int, metavar="SEQ", help="with add: where the case forks")
    parser.add_argument("--suite", dest="into", type=Path, metavar="FILE", help="with add")
    parser.add_argument("--case-id", help="with add: the case's id (default RUN_ID-at-SEQ)")
    parser.add_argument("--approver", help="with add, a new file's (default: the run's)")
    parser.add_argument(
        "--manifest",
        action="append",
        type=Path,
        metavar="FILE",
        help="a configuration (JSON or TOML: a pack and its overrides); give exactly two",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per work order (default 1)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N work orders")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    parser.add_argument("--html", type=Path, metavar="PATH", help="write the HTML report here")
