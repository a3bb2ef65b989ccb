"""``agentledger verify RUN``: the ledger's projection of a run against Temporal's history of
it, or, for a run whose content was erased, its log's kinds and digests against those the
erasure recorded."""

from __future__ import annotations

import argparse

from agentledger.app import runs as run_ops
from agentledger.app.config import Settings
from agentledger.app.erasure import ErasedCheck, erased_check
from agentledger.app.history import recorded_state
from agentledger.app.stack import open_ledger
from agentledger.app.temporal import connect
from agentledger.cli._common import say
from agentledger.domain.fold import project

__all__ = ["verify"]


async def verify(settings: Settings, args: argparse.Namespace) -> int:
    ledger = open_ledger(settings)
    if (erased := erased_check(ledger, args.run_id)) is not None:
        return verify_erased(args.run_id, erased)
    stored = project(ledger.read(args.run_id))
    client = await connect(settings)
    # From the history alone: verify starts no worker, sends no query and executes no work.
    live = await recorded_state(client, args.run_id)
    stuck = await run_ops.stuck_activity(client, args.run_id)
    ours, theirs = stored.model_dump(mode="json"), live.model_dump(mode="json")
    differences = [key for key in ours if ours[key] != theirs.get(key)]
    for key in differences:
        say(f"differs: {key}\n  ledger:   {ours[key]}\n  temporal: {theirs.get(key)}")
    if stored.last_seq < live.last_seq:
        say(
            f"note: the ledger holds events up to #{stored.last_seq}, Temporal up to "
            f"#{live.last_seq} (the newest ride in an activity that has not committed yet)"
        )
    if stuck is not None:
        say(f"stuck: {stuck}")
    elif live.status == "new":
        say("stuck: the run has recorded nothing yet")
    if differences or stuck is not None or live.status == "new":
        say(f"{len(differences)} field(s) differ" if differences else "the run does not match")
        return 1
    say("ledger projection matches the live state (as Temporal's history records it)")
    return 0


def verify_erased(run_id: str, check: ErasedCheck) -> int:
    """An erased run: its log's kinds and digests against those its erasure recorded."""
    record = check.record
    say(
        f"erased: {run_id}'s content was erased at {record.erased_at:%Y-%m-%d %H:%M:%S} UTC by "
        f"{record.erased_by} ({record.erasure_id})"
    )
    say(_BEFORE.get(record.verified, f"before erasure: {record.verified}"))
    if not check.intact:
        say(
            f"differs: the log holds {check.events} event(s), digest {check.log_digest[:16]}…; "
            f"the erasure recorded {record.events}, {record.log_digest[:16]}…"
        )
        return 1
    say(f"log intact: {check.events} events, each kind and digest as recorded at erasure")
    return 1 if record.verified == "differed" else 0


_BEFORE = {
    "matched": "before erasure, the ledger's projection matched Temporal's history",
    "differed": "before erasure, the ledger's projection differed from Temporal's history",
    "no history": "before erasure, Temporal held no history of the run (retention, another server)",
    "not compared": "shredded by the tenant's content retention, without comparing (the history "
    "is usually past the namespace's retention by then)",
}
