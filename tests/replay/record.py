"""Record the checked-in workflow histories replayed by ``test_replay.py``.

    .venv/bin/python -m tests.replay.record

Run it when a workflow's behaviour changes on purpose (behind ``workflow.patched``), and keep the
old histories: they prove that runs started by older code still replay.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError

from agentledger.activities.memory import MemoryStore
from agentledger.app import forks, operators
from agentledger.app import runs as client_ops
from agentledger.app.errors import Refused
from agentledger.app.registry import get_pack
from agentledger.app.runtime import Runtime
from agentledger.domain.forks import boundaries
from agentledger.domain.principal import Principal
from agentledger.workflows import AgentRunWorkflow, ApprovalDecision, Reply
from agentledger.workflows.housekeeping import HOUSEKEEPING
from bench._stack import embedded_stack
from bench.harness import Harness
from tests.replay._recorded import SEEDED_MEMORIES

HISTORIES = Path(__file__).with_name("histories")
HOUSEKEEPING_HISTORIES = Path(__file__).with_name("housekeeping")
REQUEST = "Can I get a refund for order ord_4821? It arrived late."


def _stack() -> Any:
    """A stack whose histories stay readable without its keys: checked-in histories replay on
    any machine (the payload codec off; ``app.payloads``)."""
    return embedded_stack(payload_codec=False)


async def _record(
    name: str, approve: bool, *, forged_first: bool = False, pack: str = "support"
) -> None:
    """A refund run of ``pack`` decided once by the approver (after a forged and a stranger's
    attempt, with ``forged_first``)."""
    async with _stack() as stack, stack.runtime.worker(stack.client):
        principal = stack.runtime.ledger.get_principal("usr_73")
        assert principal is not None
        order = get_pack(pack).make_work_order(REQUEST, principal)
        handle = await client_ops.start_run(
            stack.client,
            stack.settings.task_queue,
            order,
            run_id=f"replay-{name}",
            issuer=stack.issuer,
        )
        state = await client_ops.wait_for(stack.client, handle.id, pending_approval=True)
        for approval_id in state.pending_approvals:
            # Refused: the unknown one recorded; the unsigned one recorded in the histories
            # checked in (v9, v10), refused unrecorded by the validator since.
            if forged_first:
                unsigned = ApprovalDecision(
                    approval_id=approval_id,
                    approver_id="ops_lead_1",
                    approve=True,
                    proposal_digest=state.pending_approvals[approval_id].proposal_digest,
                )
                with contextlib.suppress(WorkflowUpdateFailedError):
                    await handle.execute_update(AgentRunWorkflow.decide_approval, unsigned)
                with contextlib.suppress(Refused):
                    await client_ops.decide(
                        stack.client,
                        handle.id,
                        approval_id,
                        "mallory",
                        issuer=stack.issuer,
                        approve=True,
                    )
            await client_ops.decide(
                stack.client,
                handle.id,
                approval_id,
                "ops_lead_1",
                issuer=stack.issuer,
                approve=approve,
                reason="" if approve else "not today",
            )
        await handle.result()
        history = await handle.fetch_history()
        (HISTORIES / f"{name}.json").write_text(history.to_json())
        _note_seeded_memory(name, stack.runtime.ledger.engine, principal)
        print(f"recorded {name}: {len(history.events)} history events")


async def _record_parked(name: str, act: Callable[[Any, str], Awaitable[object]]) -> None:
    """A refund run parked on its approval, then ``act(stack, run_id)`` (an operator's)."""
    async with _stack() as stack, stack.runtime.worker(stack.client):
        await _record_parked_on(stack, name, act)


async def _record_parked_on(
    stack: Harness, name: str, act: Callable[[Any, str], Awaitable[object]]
) -> None:
    principal = stack.runtime.ledger.get_principal("usr_73")
    assert principal is not None
    order = get_pack("support").make_work_order(REQUEST, principal)
    handle = await client_ops.start_run(
        stack.client, stack.settings.task_queue, order, run_id=f"replay-{name}",
        issuer=stack.issuer,
    )  # fmt: skip
    await client_ops.wait_for(stack.client, handle.id, pending_approval=True)
    await act(stack, handle.id)
    await handle.result()
    history = await handle.fetch_history()
    (HISTORIES / f"{name}.json").write_text(history.to_json())
    _note_seeded_memory(name, stack.runtime.ledger.engine, principal)
    print(f"recorded {name}: {len(history.events)} history events")


async def _record_fork(name: str) -> None:
    """A refund run parked on its approval, forked dry by an operator where the refund was
    proposed from: the fork (recorded) takes the state there up and its refund is refused."""
    async with _stack() as stack, stack.runtime.worker(stack.client):
        principal = stack.runtime.ledger.get_principal("usr_73")
        assert principal is not None
        order = get_pack("support").make_work_order(REQUEST, principal)
        handle = await client_ops.start_run(
            stack.client, stack.settings.task_queue, order, run_id=f"replay-{name}-origin",
            issuer=stack.issuer,
        )  # fmt: skip
        await client_ops.wait_for(stack.client, handle.id, pending_approval=True)
        events = stack.runtime.ledger.read(handle.id)
        seq = max(seq for seq in boundaries(events) if seq < events[-1].seq)
        plan = forks.plan_fork(stack.runtime.ledger, handle.id, seq, "ops_lead_1", dry=True)
        plan = dataclasses.replace(plan, run_id=f"replay-{name}")
        await forks.start_fork(stack.client, stack.settings.task_queue, plan, issuer=stack.issuer)
        forked = stack.client.get_workflow_handle(plan.run_id)
        await forked.result()
        history = await forked.fetch_history()
        (HISTORIES / f"{name}.json").write_text(history.to_json())
        _note_seeded_memory(name, stack.runtime.ledger.engine, principal)
        print(f"recorded {name}: {len(history.events)} history events")


async def _record_notified(name: str) -> None:
    """A refund run whose worker announces approvals on two webhooks, one taking the message and
    one refusing it (404), then approved: approval_notified, approval_notification_failed."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    os.environ["RECORD_HOOK_OK"] = f"http://127.0.0.1:{server.server_address[1]}/ok"
    os.environ["RECORD_HOOK_GONE"] = f"http://127.0.0.1:{server.server_address[1]}/gone"
    channels = {
        "ops-chat": {"kind": "webhook", "url_env": "RECORD_HOOK_OK"},
        "old-chat": {"kind": "webhook", "url_env": "RECORD_HOOK_GONE"},
    }
    async with _stack() as stack:
        notify = stack.settings.data_dir / "notify.json"
        config = {"base_url": "https://agents.example.test", "channels": channels}
        notify.write_text(json.dumps({**config, "tenants": {"*": list(channels)}}))
        settings = dataclasses.replace(stack.settings, notify_file=notify)
        noticed = Harness(Runtime.open(settings), stack.client, settings)
        async with noticed.runtime.worker(stack.client):
            await _record_parked_on(noticed, name, _approve)
    server.shutdown()


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200 if self.path == "/ok" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


async def _approve(stack: Any, run_id: str) -> None:
    """The approver grants the refund once its notices are recorded."""
    while not any(e.kind == "approval_notified" for e in stack.runtime.ledger.read(run_id)):
        await asyncio.sleep(0.1)
    state = await client_ops.live_state(stack.client, run_id)
    (approval_id,) = state.pending_approvals
    await client_ops.decide(
        stack.client, run_id, approval_id, "ops_lead_1", issuer=stack.issuer, approve=True
    )


async def _cancel(stack: Any, run_id: str) -> None:
    """The operator cancels (its approval expires, the run ends run_cancelled)."""
    reason = "the customer withdrew the request"
    await operators.cancel(stack.client, run_id, "ops_lead_1", reason, issuer=stack.issuer)


async def _steer_then_approve(stack: Any, run_id: str) -> None:
    """An operator's instruction while the refund waits, then the approver grants it."""
    text = "The customer called: mention that the second parcel is on its way."
    await operators.steer(stack.client, run_id, "ops_lead_1", text, issuer=stack.issuer)
    state = await client_ops.live_state(stack.client, run_id)
    (approval_id,) = state.pending_approvals
    await client_ops.decide(
        stack.client, run_id, approval_id, "ops_lead_1", issuer=stack.issuer, approve=True
    )


async def _approve_halved(stack: Any, run_id: str) -> None:
    """The approver grants the refund at half the proposed amount (an edited, signed grant)."""
    state = await client_ops.live_state(stack.client, run_id)
    ((approval_id, pending),) = state.pending_approvals.items()
    amount = round(float(pending.proposal.arguments["amount"]) / 2, 2)
    await client_ops.decide(
        stack.client, run_id, approval_id, "ops_lead_1", issuer=stack.issuer, approve=True,
        edits={"amount": amount},
    )  # fmt: skip


def _note_seeded_memory(name: str, engine: Engine, principal: Principal) -> None:
    """Packets that show the stack's seeded preference carry its created_at, which the history
    does not: keep it beside the histories for the packet-hash check (see ``_recorded.py``)."""
    now = datetime.now(UTC)
    profile = MemoryStore(engine).retrieve(principal, now, use_cache=False).profile
    seeded = json.loads(SEEDED_MEMORIES.read_text()) if SEEDED_MEMORIES.exists() else {}
    seeded.pop(name, None)
    if profile is not None:
        # The check re-seeds exactly this one preference; anything else would not rebuild.
        assert profile.item.content == {"language": "en"}, profile.item.content
        seeded[name] = profile.item.created_at.isoformat()
    SEEDED_MEMORIES.write_text(json.dumps(seeded, indent=2, sort_keys=True) + "\n")


async def _record_continue_as_new(name: str, pack: str = "CONTINUING_PACK") -> None:
    """A 30-step loop of ``bench._noop_pack``'s ``pack`` that continues as new every ~120
    history events: every run of the chain, as ``{name}_0.json``, ``{name}_1.json``… in the
    order they ran."""
    from bench import _noop_pack
    from tests.replay._recorded import register_loop_packs

    register_loop_packs()
    async with _stack() as stack, stack.runtime.worker(stack.client):
        loop = getattr(_noop_pack, pack)
        order = loop.make_work_order("loop", _noop_pack.BENCH_PRINCIPAL)
        handle = await client_ops.start_run(
            stack.client,
            stack.settings.task_queue,
            order,
            run_id=f"replay-{name}",
            issuer=stack.issuer,
        )
        await handle.result()
        runs = [e async for e in stack.client.list_workflows(f'WorkflowId = "{handle.id}"')]
        for index, execution in enumerate(sorted(runs, key=lambda e: e.start_time)):
            run = stack.client.get_workflow_handle(handle.id, run_id=execution.run_id)
            history = await run.fetch_history()
            (HISTORIES / f"{name}_{index}.json").write_text(history.to_json())
        print(f"recorded {name}: {len(runs)} runs")


async def _record_conversation(name: str) -> None:
    """A conversation under a step graph: a question, the reply, an answer, a follow-up, its
    answer, then the idle timer closing it (``bench._chat_pack``)."""
    from bench._chat_pack import CHAT, CUSTOMER

    async with _stack() as stack, stack.runtime.worker(stack.client):
        order = CHAT.make_work_order("I'd like to pick a colour", CUSTOMER)
        handle = await client_ops.start_run(
            stack.client,
            stack.settings.task_queue,
            order,
            run_id=f"replay-{name}",
            issuer=stack.issuer,
        )
        for text in ("red, please", "actually blue"):
            state = await client_ops.wait_for(stack.client, handle.id, pending_approval=False)
            assert state.awaiting is not None, state.status
            with contextlib.suppress(Refused):  # refused (not the requester) and recorded
                await client_ops.reply(
                    stack.client, handle.id, "usr_other", text, issuer=stack.issuer
                )
            await client_ops.reply(
                stack.client, handle.id, CUSTOMER.user_id, text, issuer=stack.issuer
            )
        await handle.result()
        history = await handle.fetch_history()
        (HISTORIES / f"{name}.json").write_text(history.to_json())
        print(f"recorded {name}: {len(history.events)} history events")


async def _record_double_texted(name: str, pack_name: str) -> None:
    """A conversation whose customer writes again while the run decides its answer: "red,
    please", then, while ``respond`` is held (``RESPONDING``), "no, make it blue" (held by the
    pack's policy: taken after the answer, or interrupting it); then the idle close."""
    from bench._chat_pack import CUSTOMER, RESPONDING, chat_pack

    pack = chat_pack(pack_name, double_texting="queue" if "queue" in pack_name else "interrupt")
    async with _stack() as stack, stack.runtime.worker(stack.client):
        order = pack.make_work_order("I'd like to pick a colour", CUSTOMER)
        handle = await client_ops.start_run(
            stack.client, stack.settings.task_queue, order, run_id=f"replay-{name}",
            issuer=stack.issuer,
        )  # fmt: skip
        await client_ops.wait_for(stack.client, handle.id, pending_approval=False)
        RESPONDING.clear()
        try:
            for text in ("red, please", "no, make it blue"):
                await client_ops.reply(
                    stack.client, handle.id, CUSTOMER.user_id, text, issuer=stack.issuer
                )
                while (await client_ops.live_state(stack.client, handle.id)).current_step != (
                    "respond"
                ):
                    await asyncio.sleep(0.05)
        finally:
            RESPONDING.set()
        await handle.result()
        history = await handle.fetch_history()
        (HISTORIES / f"{name}.json").write_text(history.to_json())
        print(f"recorded {name}: {len(history.events)} history events")


async def _record_single_use(name: str) -> None:
    """A conversation whose replies are single-use and bound to their question: "red, please"
    taken, the same signed reply copied from history and sent again (refused, replayed), a reply
    signed on behalf of an issuer the workers bind to no tenant (refused, after asking the
    directory), then "actually blue" and the idle close."""
    from agentledger.app.identity import VerifiedCaller
    from bench._chat_pack import CHAT, CUSTOMER

    async with _stack() as stack, stack.runtime.worker(stack.client):
        order = CHAT.make_work_order("I'd like to pick a colour", CUSTOMER)
        handle = await client_ops.start_run(
            stack.client,
            stack.settings.task_queue,
            order,
            run_id=f"replay-{name}",
            issuer=stack.issuer,
        )
        await client_ops.wait_for(stack.client, handle.id, pending_approval=False)
        await client_ops.reply(
            stack.client, handle.id, CUSTOMER.user_id, "red, please", issuer=stack.issuer
        )
        state = await client_ops.wait_for(stack.client, handle.id, pending_approval=False)
        assert state.awaiting is not None, state.status
        copied = await _accepted_reply(handle)
        foreign = VerifiedCaller(CUSTOMER.user_id, "https://idp.unbound.test", "tok-foreign")
        spoken_for = Reply(
            principal_id=CUSTOMER.user_id,
            text="green",
            assertion=stack.issuer.reply_assertion(
                CUSTOMER.user_id,
                run_id=handle.id,
                text="green",
                reply_to=state.awaiting.seq,
                on_behalf_of=foreign,
            ),
        )
        for refused in (copied, spoken_for):
            with contextlib.suppress(WorkflowUpdateFailedError):
                await handle.execute_update(AgentRunWorkflow.reply, refused)
        await client_ops.reply(
            stack.client, handle.id, CUSTOMER.user_id, "actually blue", issuer=stack.issuer
        )
        await handle.result()
        history = await handle.fetch_history()
        (HISTORIES / f"{name}.json").write_text(history.to_json())
        print(f"recorded {name}: {len(history.events)} history events")


async def _accepted_reply(handle: WorkflowHandle[Any, Any]) -> Reply:
    """The first reply update the run accepted, as anyone reading its history finds it."""
    accepted = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    async for event in handle.fetch_history_events():
        request = event.workflow_execution_update_accepted_event_attributes.accepted_request
        if event.event_type == accepted and request.input.name == "reply":
            return Reply.model_validate_json(request.input.args.payloads[0].data)
    raise AssertionError("no reply in the history")


async def _record_housekeeping(name: str) -> None:
    """One firing of the housekeeping workflow, as its schedule starts it: nothing is due, so
    each of its activities runs once and finds nothing."""
    async with _stack() as stack, stack.runtime.worker(stack.client):
        done = await stack.client.execute_workflow(
            HOUSEKEEPING, id=f"replay-{name}", task_queue=stack.settings.task_queue
        )
        history = await stack.client.get_workflow_handle(f"replay-{name}").fetch_history()
        HOUSEKEEPING_HISTORIES.mkdir(exist_ok=True)
        (HOUSEKEEPING_HISTORIES / f"{name}.json").write_text(history.to_json())
        print(f"recorded {name}: {len(history.events)} history events ({done})")


async def main() -> None:
    HISTORIES.mkdir(exist_ok=True)
    # Histories recorded by older workflow code stay checked in (they prove old runs still
    # replay); a behaviour change behind workflow.patched adds new ones under a new suffix.
    # v5: approvers from the directory, budget ceiling and work-order limits.
    # v6: tool terms frozen into the manifest (the gate reads them, not the pack's code).
    # v7: step graphs frozen into the manifest (the support pack's two steps as a graph), and
    # conversations (questions, replies, follow-ups, the idle close).
    # v8: trusted keys pinned into the manifest; decisions and replies signed (an unsigned
    # attempt and a signed stranger refused first); workflow spans and run logs.
    # v9: model and tool queues from the deployment's workers (a local activity), never the
    # starter; a continuation checked against its ledger (resume_run) before it is taken up.
    await _record("refund_approved_v9", approve=True, forged_first=True)
    await _record("refund_rejected_v9", approve=False)
    await _record_conversation("conversation_v9")
    await _record_continue_as_new("loop_continue_as_new_v9")
    # v10: a run's state bounded to a window as it continues (domain.window), here 5 entries.
    await _record_continue_as_new("loop_continue_as_new_v10", pack="WINDOWED_PACK")
    # handoff_v1: the support agent delegating a fraud check to a read-only reviewer (a child
    # workflow, agentledger.packs.support.review; behind workflow.patched("handoffs")).
    await _record("handoff_v1", approve=True, pack="support_reviewed")
    # v10: assertions single-use and a reply bound to its question (patch assertions-single-use),
    # a foreign issuer's caller checked against the directory (issuers-bound-to-tenants).
    await _record("refund_approved_v10", approve=True, forged_first=True)
    await _record_single_use("conversation_v10")
    # v11: claims bound to what they are about (manifest bound_claims): tool_call_authorised
    # records the call's resource, the answer claims (operation, tool, resource) and the run
    # completes with the receipt's confirmation line.
    await _record("refund_approved_v11", approve=True)
    # sdk_v1: the support pack declared with agentledger.sdk (AgentPack, @pack.read_tool,
    # @pack.write_tool); same workflow code as v11, same tool names, versions and schemas.
    await _record("refund_approved_sdk_v1", approve=True)
    await _record("refund_rejected_sdk_v1", approve=False)
    # v12: the start signed by its requester (patch signed-requester) and its grants planned
    # by the worker in prepare_run (planned-grants); the requester's assertion is in the input.
    await _record("refund_approved_v12", approve=True)
    # cancelled_v1: a parked refund cancelled by an operator (the cancel_run update, signed),
    # its approval expired and the run ended run_cancelled.
    await _record_parked("refund_cancelled_v1", _cancel)
    # edited_v1: the approver grants the refund at half the proposed amount; the gate runs the
    # edited call (its own idempotency key) and the run completes.
    await _record_parked("refund_edited_v1", _approve_halved)
    # steered_v1: an operator's signed instruction (steer_run) while the refund waits; the
    # packets after it carry the operator_instruction item.
    await _record_parked("refund_steered_v1", _steer_then_approve)
    # double-texting: a message while the run works, held (chat_queue) or interrupting
    # (chat_interrupt): user_replied(queued), reply_taken.
    await _record_double_texted("conversation_queue_v1", "chat_queue")
    await _record_double_texted("conversation_interrupt_v1", "chat_interrupt")
    # forked_v1: a dry fork of a parked refund run at its last boundary (run_forked with the
    # original's state, the operator's signed start); its refund is refused (fork_dry).
    await _record_fork("refund_forked_v1")
    # notified_v1: approvals announced on the worker's channels (manifest notify_channels):
    # one webhook takes the message (approval_notified), one refuses it (webhook_refused).
    await _record_notified("refund_notified_v1")
    # housekeeping_v1: a firing that also drops what ended runs left (prune-ended-runs).
    await _record_housekeeping("housekeeping_v1")


if __name__ == "__main__":
    asyncio.run(main())
