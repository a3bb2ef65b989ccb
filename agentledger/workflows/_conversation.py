"""Conversations: a run parked on its customer, the reply update, and the idle timeout.

A question or an answer open to follow-ups is recorded (``ReplyAwaited``) and flushed, so the
ledger shows what the customer is asked while the run waits. The customer writes through the
``reply`` update, signed for them by an issuer the run trusts (``domain.assertions``: the sender
and the exact text) and checked by ``domain.conversation``; the wait is a durable timer, and a
conversation nobody continues closes politely when it fires.
"""

from __future__ import annotations

from typing import NoReturn

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from agentledger.workflows import _patches as patches

with workflow.unsafe.imports_passed_through():
    from agentledger.domain import events as ev
    from agentledger.domain.approvals import ApprovalRefusal
    from agentledger.domain.assertions import (
        Expected,
        VerifiedAssertion,
        foreign_speaker,
        reply_audience,
        reply_digest,
    )
    from agentledger.domain.conversation import (
        MAX_RECORDED_REPLY_REFUSALS,
        ReplyRefusal,
        reply_refusal,
        user_turns,
    )
    from agentledger.domain.decisions import Answer
    from agentledger.domain.graph import ConversationPolicy
    from agentledger.domain.steps import await_reply, close_conversation, final_answer
    from agentledger.workflows.messages import Reply, ReplyResult

from agentledger.workflows._assertions import check_assertion, refuse_unsigned
from agentledger.workflows._core import Run
from agentledger.workflows._directory import directory_refusal, look_up_principal


class Conversation:
    def __init__(self, run: Run) -> None:
        self._run = run

    @property
    def policy(self) -> ConversationPolicy | None:
        return self._run.manifest.conversation

    def ask(self, question: str) -> None:
        assert self.policy is not None
        await_reply(self._run.rec, workflow.now(), self.policy, "question", question)

    def after_answer(self, answer: str) -> Answer | None:
        """Keep the conversation open for a follow-up (``None``), or close it once the customer
        has had their turns: then the answer the run completes with."""
        policy = self.policy
        assert policy is not None
        if user_turns(self._run.state) < policy.max_turns:
            await_reply(self._run.rec, workflow.now(), policy, "follow_up", answer)
            return None
        close_conversation(self._run.rec, workflow.now(), policy, "max_turns")
        return final_answer(self._run.state, policy)

    async def wait(self) -> Answer | None:
        """Until the customer writes (``None``) or the wait's deadline passes: the conversation
        closes, and the answer the run completes with is returned."""
        run, policy = self._run, self.policy
        awaited = run.state.awaiting
        assert awaited is not None and policy is not None
        await run.flush()  # the customer (and the inspector) must see the question now
        left = (awaited.deadline - workflow.now()).total_seconds()
        try:
            await workflow.wait_condition(
                lambda: run.state.awaiting is None or run.cancelled,
                timeout=max(left, 0.001),
            )
        except TimeoutError:
            close_conversation(run.rec, workflow.now(), policy, "idle_timeout")
            return final_answer(run.state, policy)
        return None

    # ------------------------------------------------------------ the reply update
    async def reply(self, reply: Reply) -> ReplyResult:
        run = self._run
        # An update can arrive before the run method has started (the first task of a run that
        # continued as new): wait for the state it carries before judging the reply.
        await workflow.wait_condition(lambda: run.state.status != "new")
        once = workflow.patched(patches.SINGLE_USE_ASSERTIONS)
        proven = self._proven(reply, once=once)
        if isinstance(proven, ReplyRefusal):
            await self._refuse(reply, proven)
        if await self._spoken_for(reply, proven):
            # The state may have moved on while the directory answered: judge the assertion
            # again (a copy sent meanwhile may have been taken first).
            proven = self._proven(reply, once=once)
            if isinstance(proven, ReplyRefusal):
                await self._refuse(reply, proven)
        sender = proven.subject if proven is not None else reply.principal_id
        refusal = reply_refusal(run.state, run.manifest_or_none, sender, reply.text)
        if refusal is not None:
            await self._refuse(reply, refusal)
        reply_id = f"rep_{run.state.last_seq + 1}"
        held = run.state.awaiting is None  # sent while the run works: the policy holds it
        run.record(
            ev.UserReplied(
                **run.stamp(),
                text=reply.text,
                principal_id=sender,
                reply_id=reply_id,
                assertion=proven,
                queued=held,
            )
        )
        if held:
            await run.flush()  # in the ledger before the customer is told it was taken
        return ReplyResult(seq=run.state.last_seq, reply_id=reply_id, queued=held)

    def take_if_interrupting(self) -> bool:
        """At a safe point: take the oldest held message when the policy says a message
        interrupts (``ReplyTaken``: the decided, undone work is set aside); whether it did."""
        run = self._run
        if not run.interrupted:
            return False
        run.record(ev.ReplyTaken(**run.stamp(), reply_seq=run.state.queued_replies[0].seq))
        return True

    async def _spoken_for(self, reply: Reply, proven: VerifiedAssertion | None) -> bool:
        """Whether the directory was asked about a foreign issuer speaking for the sender; the
        reply is refused (``assertion_foreign_issuer``) when it may not speak for them."""
        manifest = self._run.manifest_or_none
        keys = manifest.trusted_keys if manifest is not None else ()
        foreign = foreign_speaker(proven, keys)
        if (
            proven is None
            or foreign is None
            or not workflow.patched(patches.ISSUERS_BOUND_TO_TENANTS)
        ):
            return False
        found = await look_up_principal(proven.subject, proven, foreign)
        refusal = directory_refusal(found, proven.subject, foreign, "unknown_sender")
        if refusal is not None:
            await self._refuse(reply, ReplyRefusal(**refusal.model_dump()))
        return True

    def _proven(self, reply: Reply, *, once: bool) -> VerifiedAssertion | ReplyRefusal | None:
        """Who the reply's assertion proves sent it; ``None`` for a run whose manifest pins no
        keys (frozen before replies were signed: it takes the id it is sent). ``once``: an
        assertion the run accepted before is refused, and one for another question than the
        one awaited (a reply with nothing awaited is refused as ``not_waiting``)."""
        run = self._run
        manifest = run.manifest_or_none
        if manifest is None or not manifest.trusted_keys:
            return None
        awaited = run.state.awaiting
        expected = Expected(
            audience=reply_audience(run.state.run_id or run.rec.run_id),
            digest=reply_digest(reply.text),
            decision="reply",
            what="this run's replies",
            reply_to=awaited.seq if once and awaited is not None else None,
        )
        found = check_assertion(
            reply.assertion,
            manifest.trusted_keys,
            expected,
            claimed_id=reply.principal_id,
            now=workflow.now(),
            spent=run.state.spent_assertions if once else (),
        )
        if isinstance(found, ApprovalRefusal):
            return ReplyRefusal(reason_code=found.reason_code, detail=found.detail)
        return found

    async def _refuse(self, reply: Reply, refusal: ReplyRefusal) -> NoReturn:
        run = self._run
        if run.state.status == "running" and run.state.reply_refusals < MAX_RECORDED_REPLY_REFUSALS:
            run.record(
                ev.ReplyRefused(
                    **run.stamp(),
                    attempted_by=reply.principal_id[:200],
                    reason_code=refusal.reason_code,
                    detail=refusal.detail,
                )
            )
            await run.flush()
        raise ApplicationError(refusal.detail, type=refusal.reason_code, non_retryable=True)

    def check(self, reply: Reply) -> None:
        """The update's validator: what it refuses never reaches history. A reply no pinned key
        signed is always refused here; once a run has recorded its share of refused replies,
        every further refusal is made here too."""
        run = self._run
        if run.state.status == "new":
            return  # not started (or resumed) yet: the handler judges it once it has
        manifest = run.manifest_or_none
        if manifest is not None:
            refuse_unsigned("reply", reply.assertion, manifest.trusted_keys)
        proven = self._proven(reply, once=True)  # validators do not run on replay
        if isinstance(proven, ReplyRefusal):
            refusal: ReplyRefusal | None = proven
        else:
            sender = proven.subject if proven is not None else reply.principal_id
            refusal = reply_refusal(run.state, run.manifest_or_none, sender, reply.text)
        if refusal is None:
            return
        if run.state.status != "running" or run.state.reply_refusals >= MAX_RECORDED_REPLY_REFUSALS:
            raise ValueError(f"{refusal.reason_code}: {refusal.detail}")
