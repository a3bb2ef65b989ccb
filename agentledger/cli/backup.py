"""``agentledger backup PATH``, ``agentledger restore PATH [--no-verify]`` and ``agentledger
rebuild-read-models [--run RUN_ID]``: the ledger copied out, copied into an empty database and
checked run by run against Temporal's history, and its read models recomputed from the log."""

from __future__ import annotations

import argparse

from sqlalchemy.engine import make_url

from agentledger.app.backups import backup as back_up
from agentledger.app.backups import restore as restore_into
from agentledger.app.config import Settings
from agentledger.app.erasure import erased_check
from agentledger.app.erasure_register import entries, register_path
from agentledger.app.errors import NotFound
from agentledger.app.history import recorded_state
from agentledger.app.payloads import subject_sealer
from agentledger.app.stack import open_ledger, require_ledger
from agentledger.app.temporal import connect
from agentledger.cli._common import say
from agentledger.domain.fold import project

__all__ = ["backup", "rebuild_read_models", "restore"]

KEYS = (
    "· not in it: the payload key ring, the erasure register and the issuer's key (<data "
    "dir>/identity, or AGENTLEDGER_PAYLOAD_KEYS and AGENTLEDGER_ERASURE_REGISTER): keep them "
    "apart; without the ring, sealed events and Temporal histories are unreadable by design"
)


async def backup(settings: Settings, args: argparse.Namespace) -> int:
    require_ledger(settings)
    done = back_up(settings.ledger_url, args.path)
    say(f"backed up {done.runs} runs ({done.events} events) to {done.path}")
    say(KEYS)
    say(
        "· runs' events, requests, packets, outputs and answers, and memories about a customer, "
        "are sealed per customer; the search indexes hold keyed digests, never a word"
    )
    return 0


async def restore(settings: Settings, args: argparse.Namespace) -> int:
    register = register_path(settings)
    done = restore_into(settings.ledger_url, args.path, subject_sealer(settings), entries(register))
    where = make_url(settings.ledger_url).render_as_string(hide_password=True)
    runs, events = len(done.run_ids), done.events
    say(f"restored {runs} runs into {where}; read models rebuilt from {events} events")
    if done.erased_again:
        say(f"· erased again as {register} says: {', '.join(done.erased_again)}")
    if args.no_verify:
        say("· not verified against Temporal (--no-verify)")
        return 0
    found = await _compared(settings, done.run_ids)
    say(
        f"· {len(found['match'])} runs match Temporal's history, {len(found['differ'])} differ, "
        f"{len(found['behind'])} are behind it (events recorded after the backup: the ledger "
        f"lacks them), {len(found['missing'])} have no history there (retention, another "
        f"server), {len(found['erased'])} were erased (their logs' digests intact)"
    )
    for run_id in (*found["differ"], *found["behind"]):
        say(f"check: {run_id} (agentledger verify {run_id})")
    return 1 if found["differ"] or found["behind"] else 0


async def _compared(settings: Settings, run_ids: tuple[str, ...]) -> dict[str, list[str]]:
    """Each restored run's projection against the state its Temporal history records."""
    client, ledger = await connect(settings), open_ledger(settings)
    found: dict[str, list[str]] = {
        "match": [], "differ": [], "behind": [], "missing": [], "erased": [],
    }  # fmt: skip
    for run_id in run_ids:
        if (erased := erased_check(ledger, run_id)) is not None:  # its history went with it
            found["erased" if erased.intact else "differ"].append(run_id)
            continue
        try:
            live = await recorded_state(client, run_id)
        except NotFound:
            found["missing"].append(run_id)
            continue
        stored = project(ledger.read(run_id))
        verdict = (
            "match" if stored == live else "behind" if stored.last_seq < live.last_seq else "differ"
        )
        found[verdict].append(run_id)
    return found


async def rebuild_read_models(settings: Settings, args: argparse.Namespace) -> int:
    replayed = open_ledger(settings).rebuild_read_models(args.run)
    say(f"read models rebuilt from {replayed} events" + (f" of {args.run}" if args.run else ""))
    return 0
