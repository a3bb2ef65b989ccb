"""``agentledger verify RUN``: the ledger's projection against what Temporal's history records."""

from __future__ import annotations

import argparse

from agentledger.app import runs as client_ops
from agentledger.app.config import Settings
from agentledger.app.temporal import connect
from agentledger.cli.show import open_ledger
from agentledger.domain.fold import project

say = print


async def verify(settings: Settings, args: argparse.Namespace) -> int:
    stored = project(open_ledger(settings).read(args.run_id))
    client = await connect(settings)
    # From the history alone: verify starts no worker, sends no query and executes no work.
    live = await client_ops.recorded_state(client, args.run_id)
    stuck = await client_ops.stuck_activity(client, args.run_id)
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
