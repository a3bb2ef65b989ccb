"""``POST /api/runs/{id}/fork``'s work: a fork planned against the ledger and started, signed
for the verified caller as its operator (the fork run checks the ``forker`` role)."""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.service import RPCError

from agentledger.api.auth import Caller
from agentledger.api.deps import ApiContext
from agentledger.api.problems import ApiProblem, not_found, refusal_problem
from agentledger.app import forks
from agentledger.app.errors import NotFound, Refused, ServerUnavailable, StillRunning
from agentledger.domain.workorder import ModelOverride


async def fork(
    ctx: ApiContext,
    caller: Caller,
    run_id: str,
    at: int,
    *,
    dry: bool,
    model: str | None,
    profile: str | None,
) -> dict[str, Any]:
    """The fork's id, origin and first state hash once it has taken up the run's state."""
    override = ModelOverride(provider=model) if model else None
    try:
        plan = await asyncio.to_thread(
            forks.plan_fork,
            ctx.ledger,
            run_id,
            at,
            caller.principal.user_id,
            dry=dry,
            model=override,
            profile=profile,
        )
        fork_id = await forks.start_fork(
            ctx.client, ctx.task_queue, plan, issuer=ctx.signer, on_behalf_of=caller.verified()
        )
        started = await forks.forked(ctx.ledger, fork_id)
    except NotFound:
        raise not_found(f"run {run_id}") from None
    except Refused as exc:
        raise refusal_problem(exc) from None
    except (ServerUnavailable, RPCError, StillRunning) as exc:
        raise ApiProblem(503, "unavailable", f"the fork could not start: {exc}") from None
    return {
        "run_id": fork_id,
        "origin": {"run_id": run_id, "seq": at},
        "state_hash": started.facts_hash,
        "dry": started.dry,
        "by": caller.subject,
    }
