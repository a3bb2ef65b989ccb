"""``agentledger erase --subject S --as P --reason R``: a subject's content erased, the audit kept
(``app.erasure``)."""

from __future__ import annotations

import argparse

from agentledger.app.config import Settings
from agentledger.app.erasure import erase as erase_subject
from agentledger.app.erasure_register import register_path
from agentledger.app.stack import open_ledger, principal_of
from agentledger.app.temporal import connect
from agentledger.cli._common import say

__all__ = ["erase"]


async def erase(settings: Settings, args: argparse.Namespace) -> int:
    ledger = open_ledger(settings)
    by = principal_of(ledger, args.principal)
    client = await connect(settings)
    register = register_path(settings)
    done = await erase_subject(
        client, ledger, args.subject, by=by, reason=args.reason, register=register
    )
    affected = done.affected
    say(done.erasure_id)
    say(
        f"· erased {args.subject} of {by.tenant_id}: {len(done.runs)} run(s) "
        f"({len(done.cancelled)} cancelled in flight), {affected['events']} event(s) shredded, "
        f"{affected['memories']} memory entr{'y' if affected['memories'] == 1 else 'ies'} "
        f"deleted, {affected['packets']} packet(s) and {affected['tool_outputs']} tool "
        "output(s) deleted"
    )
    for run_id in done.runs:
        say(f"  {run_id}: {done.verified[run_id]} its Temporal history before; history deleted")
    for name in done.schedules:
        say(f"  schedule {name}: deleted (it ran as them); its requests blanked in the journal")
    for run_id in done.refused:
        say(f"  {run_id}: its start refused during the erasure (nothing stored); history deleted")
    say(
        "· Temporal removes the deleted histories in the background, within a minute; each "
        "run's own payload key is destroyed already, so no copy of them opens"
    )
    say("· the log keeps each event's kind and digest: `agentledger verify RUN` checks them")
    say(f"· registered in {register}: a restored backup is erased again")
    return 0
