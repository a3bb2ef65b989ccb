"""Production runs as regression cases (``agentledger eval add RUN --at SEQ --suite S``): the
case forks the run at a completed-operation boundary, and expects what the run did after it.

What the original did after ``seq`` becomes the case's expectation: how it ended, the sources
its answer cited, how many approvals it asked for, a succeeded receipt of every consequential
call it made with the arguments it was authorised with, and none of a consequential tool it
did not call. The scripted approver decides as the original's approvers did. A run that has
not ended has no outcome to expect and is refused.

Pure: the caller reads the events and manifests from its ledger.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import JsonValue

from agentledger.domain.evaluation.figures import RunFigures, figures_of
from agentledger.domain.evaluation.suite import EvalCase, Expectation, ForkedFrom, ReceiptPattern
from agentledger.domain.events import ApprovalRejected, RunEvent, RunStarted
from agentledger.domain.fold import state_hash
from agentledger.domain.forks import ForkRefused, fork_point

__all__ = ["checked_origin", "regression_case"]


def regression_case(
    case_id: str,
    events: Sequence[RunEvent],
    seq: int,
    writes: frozenset[str],
    manifests: Mapping[str, Mapping[str, JsonValue]],
) -> EvalCase:
    """The case that forks ``events``' run at ``seq`` and expects what it did after; ``writes``
    are the pack's consequential tools, ``manifests`` every manifest by hash."""
    state = fork_point(events, seq)
    started = events[0]
    after = figures_of([started, *(e for e in events if e.seq > seq)])
    if not isinstance(started, RunStarted) or after.status not in {"completed", "failed"}:
        raise ForkRefused(
            "run_not_ended", "the run has not ended: a regression case expects its outcome"
        )
    prefix = tuple(e for e in events if e.seq <= seq)
    return EvalCase(
        case_id=case_id,
        request=started.work_order.request_text,
        user=started.work_order.principal.user_id,
        approve=not any(isinstance(e, ApprovalRejected) and e.seq > seq for e in events),
        expect=_expected(after, writes),
        fork=ForkedFrom(
            run_id=events[0].run_id,
            seq=seq,
            state_hash=state_hash(state),
            events=prefix,
            manifests=tuple(dict(manifests[h]) for h in sorted({e.manifest_hash for e in prefix})),
        ),
    )


def _expected(after: RunFigures, writes: frozenset[str]) -> Expectation:
    """What the original did after the fork point, as a case's expectation."""
    done = {r.tool for r in after.receipts if r.status == "succeeded"}
    return Expectation(
        status="completed" if after.status == "completed" else "failed",
        citations=after.citations,
        receipts=tuple(
            ReceiptPattern(tool=r.tool, arguments=r.arguments)
            for r in after.receipts
            if r.status == "succeeded" and r.tool in writes
        ),
        no_receipts=tuple(ReceiptPattern(tool=t) for t in sorted(writes - done)),
        approvals=after.approvals_asked,
    )


def checked_origin(fork: ForkedFrom, pack: str) -> str | None:
    """Why a case's recorded origin cannot be forked as it says under ``pack`` (``None``: it
    can)."""
    first = fork.events[0] if fork.events else None
    if not isinstance(first, RunStarted) or first.work_order.pack != pack:
        return f"its events are not a run of pack {pack}"
    try:
        state = fork_point(fork.events, fork.seq)
    except ForkRefused as exc:
        return f"{exc.code}: {exc}"
    if state_hash(state) != fork.state_hash:
        return "its events do not fold to the state hash it records"
    return None
