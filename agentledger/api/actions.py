"""What the API changes, always through the same paths as the CLI: Temporal updates with their
validators for runs, the retrieval store's revision operations for policies.

A refusal by the run comes back as a typed problem in the run's own words; the run has already
recorded it (``approval_attempt_refused``), and a decided approval stays decided, so a double
submit applies nothing twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from pydantic import JsonValue
from temporalio.service import RPCError

from agentledger.activities.ledger import ApprovalRow
from agentledger.activities.retrieval import (
    DocumentConflict,
    DocumentNotFound,
    PolicyDocument,
    RetrievalError,
    SqlRetriever,
    install,
    parse_markdown,
)
from agentledger.api.auth import Caller
from agentledger.api.deps import ApiContext, visible_run
from agentledger.api.problems import ApiProblem, not_found, refusal_problem
from agentledger.app import operators
from agentledger.app import runs as run_ops
from agentledger.app.errors import NotFound, Refused, ServerUnavailable
from agentledger.app.registry import PackInstalledAfterStart, PackLoadError, UnknownPack, get_pack
from agentledger.domain.conversation import ended


def shown_digest(ctx: ApiContext, caller: Caller, run_id: str, approval_id: str) -> str:
    """The proposal digest the ledger shows for an approval of a run the caller may see: what
    the inbox displayed, so a decision binds to what the approver saw, with no query to the run
    (one trip off the event loop for both reads)."""
    return _shown(ctx, caller, run_id, approval_id).proposal_digest


def shown_arguments(
    ctx: ApiContext, caller: Caller, run_id: str, approval_id: str
) -> dict[str, JsonValue]:
    """The arguments of the call the inbox shows for the approval (what an edit changes)."""
    return dict(_shown(ctx, caller, run_id, approval_id).arguments)


def _shown(ctx: ApiContext, caller: Caller, run_id: str, approval_id: str) -> ApprovalRow:
    visible_run(ctx, caller, run_id, action="decide")
    for row in ctx.ledger.approvals(status=None, run_id=run_id):
        if row.approval_id == approval_id:
            return row
    raise not_found(f"approval {approval_id} in run {run_id}")


async def decide(
    ctx: ApiContext,
    caller: Caller,
    run_id: str,
    approval_id: str,
    *,
    approve: bool,
    reason: str,
    content: dict[str, JsonValue] | None = None,
    edits: dict[str, JsonValue] | None = None,
) -> dict[str, Any]:
    """Decide as the verified caller, signed for them; the run judges whether they may (and,
    for ``edits``, the edited call)."""
    digest = await asyncio.to_thread(shown_digest, ctx, caller, run_id, approval_id)
    try:
        result = await run_ops.decide(
            ctx.client,
            run_id,
            approval_id,
            caller.principal.user_id,
            issuer=ctx.signer,
            on_behalf_of=caller.verified(),
            approve=approve,
            reason=reason,
            content=content,
            digest=digest,
            edits=edits,
        )
    except NotFound:
        raise not_found(f"approval {approval_id} in run {run_id}") from None
    except Refused as exc:
        raise refusal_problem(exc) from None
    except (ServerUnavailable, RPCError) as exc:
        raise ApiProblem(
            503, "unavailable", f"Temporal could not take the decision: {exc}"
        ) from None
    return {"approval_id": result.approval_id, "decision": result.decision, "by": caller.subject}


MAX_BATCH = 50
"""Decisions one batch takes: an inbox page's worth."""


class Decided(Protocol):
    """One decision of a batch, as the API's body or the inbox's form gives it."""

    @property
    def run_id(self) -> str: ...
    @property
    def approval_id(self) -> str: ...
    @property
    def approve(self) -> bool: ...
    @property
    def reason(self) -> str: ...


async def decide_many(
    ctx: ApiContext, caller: Caller, decisions: Sequence[Decided]
) -> list[dict[str, Any]]:
    """Each decision on its own (signed, sent and judged by its run, concurrently); the answer
    says how each went, in the order given: a refusal is that item's, never the batch's."""

    async def one(d: Decided) -> dict[str, Any]:
        where = {"run_id": d.run_id, "approval_id": d.approval_id}
        try:
            decided = await decide(
                ctx, caller, d.run_id, d.approval_id, approve=d.approve, reason=d.reason
            )
        except ApiProblem as exc:
            return {**where, "ok": False, **exc.body()}
        return {**where, **decided, "ok": True}

    return list(await asyncio.gather(*(one(d) for d in decisions)))


async def operate(
    ctx: ApiContext, caller: Caller, run_id: str, action: Literal["cancel", "steer"], text: str
) -> dict[str, Any]:
    """Cancel (for the reason ``text``) or steer (with the instruction ``text``) as the
    verified caller, signed for them; the run judges whether they may. A cancel answers with
    how the run ended, a steer with the seq of the recorded instruction."""
    send = operators.cancel if action == "cancel" else operators.steer
    try:
        result = await send(
            ctx.client,
            run_id,
            caller.principal.user_id,
            text,
            issuer=ctx.signer,
            on_behalf_of=caller.verified(),
        )
    except NotFound:
        raise not_found(f"run {run_id}") from None
    except Refused as exc:
        raise refusal_problem(exc) from None
    except (ServerUnavailable, RPCError) as exc:
        detail = f"Temporal could not take the {action}: {exc}"
        raise ApiProblem(503, "unavailable", detail) from None
    answer = "status" if action == "cancel" else "seq"
    return {"run_id": run_id, answer: result, "by": caller.subject}


async def start_run(ctx: ApiContext, caller: Caller, pack_name: str, request: str) -> str:
    """A run for the caller as its requester: nobody starts a run in another's name."""
    try:
        pack = get_pack(pack_name)
    except PackInstalledAfterStart as exc:
        raise ApiProblem(503, "pack-installed-after-start", str(exc)) from None
    except PackLoadError as exc:  # installed, but broken: the others still serve
        raise ApiProblem(503, "pack-unavailable", str(exc)) from None
    except UnknownPack:
        raise not_found(f"pack {pack_name}") from None
    work_order = pack.make_work_order(request, caller.principal)
    try:
        handle = await run_ops.start_run(
            ctx.client,
            ctx.task_queue,
            work_order,
            issuer=ctx.signer,
            on_behalf_of=caller.verified(),
        )
    except Refused as exc:
        raise ApiProblem(422, "work-order-refused", str(exc)) from None
    except (ServerUnavailable, RPCError) as exc:  # Temporal down: the caller may retry
        raise ApiProblem(503, "unavailable", f"Temporal could not start the run: {exc}") from None
    return handle.id


async def reply(ctx: ApiContext, caller: Caller, run_id: str, text: str) -> dict[str, Any]:
    try:
        result = await run_ops.reply(
            ctx.client,
            run_id,
            caller.principal.user_id,
            text,
            issuer=ctx.signer,
            on_behalf_of=caller.verified(),
        )
    except NotFound:
        # The run is in the ledger (``visible_run`` checked): its workflow has ended.
        told = await asyncio.to_thread(_ended, ctx, run_id)
        raise ApiProblem(409, "run-ended", told, reason_code="run_ended") from None
    except Refused as exc:
        code = exc.reason_code or "refused"
        raise ApiProblem(409, "reply-refused", str(exc), reason_code=code) from None
    return result.model_dump(mode="json")


def _ended(ctx: ApiContext, run_id: str) -> str:
    row = ctx.ledger.get_run(run_id)
    status = row.status if row is not None else "ended"
    return ended(ctx.ledger.read(run_id), run_id, status)


def add_policy(
    ctx: ApiContext,
    caller: Caller,
    *,
    document_id: str,
    revision: str,
    tenant_id: str,
    markdown: str,
    effective_from: datetime | None,
) -> PolicyDocument:
    """A draft revision: searchable only once a policy approver approves it."""
    now = datetime.now(UTC)
    retriever = _retriever(ctx)
    try:
        retriever.add_document(
            parse_markdown(markdown, default_title=document_id),
            tenant_id=tenant_id,
            document_id=document_id,
            revision=revision,
            effective_from=effective_from or now,
            now=now,
        )
    except DocumentConflict as exc:
        raise ApiProblem(409, "conflict", str(exc)) from None
    except (RetrievalError, ValueError) as exc:
        raise ApiProblem(422, "invalid-document", str(exc)) from None
    (doc,) = [d for d in retriever.revisions(tenant_id, document_id) if d.revision == revision]
    return doc


def approve_policy(
    ctx: ApiContext, caller: Caller, tenant_id: str, document_id: str, revision: str
) -> PolicyDocument:
    """Approved by the verified caller, with an assertion the API's issuer signs for them (as
    it signs a run's approvals), bound to the revision's content and kept with it."""
    retriever, who = _retriever(ctx), caller.principal.user_id
    found = [d for d in retriever.revisions(tenant_id, document_id) if d.revision == revision]
    if not found:
        raise not_found(f"revision {document_id}@{revision}")
    assertion = ctx.signer.policy_assertion(
        who,
        tenant_id=tenant_id,
        document_id=document_id,
        revision=revision,
        content_hash=found[0].content_hash,
        on_behalf_of=caller.verified(),
    )
    try:
        return retriever.approve(
            tenant_id, document_id, revision, approved_by=who, assertion=assertion
        )
    except DocumentNotFound:
        raise not_found(f"revision {document_id}@{revision}") from None
    except (DocumentConflict, RetrievalError) as exc:
        raise ApiProblem(409, "conflict", str(exc)) from None


def policy_revisions(ctx: ApiContext, tenant_id: str, document_id: str) -> list[PolicyDocument]:
    return _retriever(ctx).revisions(tenant_id, document_id)


def _retriever(ctx: ApiContext) -> SqlRetriever:
    install(ctx.ledger.engine)
    return SqlRetriever(ctx.ledger.engine)
