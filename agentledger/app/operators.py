"""What operators do to live runs through Temporal, signed as the operator: cancel one, or
tell it something it does not know (steer)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from temporalio.client import Client, WorkflowUpdateFailedError
from temporalio.service import RPCError, RPCStatusCode

from agentledger.app import liveness
from agentledger.app.errors import NotFound, Refused
from agentledger.domain.state import RunStatus
from agentledger.workflows import AgentRunWorkflow, CancelOrder, SteerOrder

if TYPE_CHECKING:
    from agentledger.app.identity import Issuer, VerifiedCaller


async def cancel(
    client: Client,
    run_id: str,
    operator_id: str,
    reason: str,
    *,
    issuer: Issuer,
    on_behalf_of: VerifiedCaller | None = None,
) -> RunStatus:
    """Cancel ``run_id`` as ``operator_id`` for ``reason``, signed by ``issuer``; returns how
    the run ended once it has (``cancelled``, unless a call in flight ended it first). The run
    checks the signature and asks the directory for the ``canceller`` role; a refusal, or a
    run that has ended, is ``Refused`` with the run's reason code."""
    order = CancelOrder(
        operator_id=operator_id,
        reason=reason,
        assertion=issuer.operator_assertion(
            operator_id, "cancel", run_id=run_id, text=reason, on_behalf_of=on_behalf_of
        ),
    )
    result = await _send(client, run_id, AgentRunWorkflow.cancel_run, order, "cancel")
    return result.status  # type: ignore[no-any-return]


async def steer(
    client: Client,
    run_id: str,
    operator_id: str,
    text: str,
    *,
    issuer: Issuer,
    on_behalf_of: VerifiedCaller | None = None,
) -> int:
    """Tell ``run_id`` ``text`` as ``operator_id``, signed by ``issuer``; returns the seq of the
    recorded ``operator_instructed`` event (the run's later packets carry it). The run checks
    the signature, the ``steerer`` role and the text; a refusal is ``Refused``."""
    order = SteerOrder(
        operator_id=operator_id,
        text=text,
        assertion=issuer.operator_assertion(
            operator_id, "steer", run_id=run_id, text=text, on_behalf_of=on_behalf_of
        ),
    )
    result = await _send(client, run_id, AgentRunWorkflow.steer_run, order, "steer")
    return result.seq  # type: ignore[no-any-return]


async def _send(client: Client, run_id: str, update: Any, order: Any, action: str) -> Any:
    try:
        return await client.get_workflow_handle(run_id).execute_update(update, order)
    except WorkflowUpdateFailedError as exc:
        raise _refused(exc.cause, action) from None
    except RPCError as exc:
        if "already completed" in exc.message:  # said with NOT_FOUND
            raise Refused(f"run {run_id} has already ended", "run_ended") from None
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise NotFound(f"no run {run_id} on this Temporal server") from None
        raise liveness.rpc_failure(exc, f"sending the {action} to run {run_id}") from None


def _refused(cause: BaseException, action: str) -> Refused:
    """The run's refusal: its reason code is the failure's type, or (from the validator, which
    can only raise ``ValueError``) the message's prefix."""
    message = str(getattr(cause, "message", cause))
    code = getattr(cause, "type", None)
    if code in (None, "ValueError") and ": " in message:
        code = message.split(": ", 1)[0]
    return Refused(f"{action} refused: {message}", code)
