"""An accepted assertion's token id is spent: the fold keeps it in the state for as long as the
assertion could still be valid (whatever the window, across compaction and continue-as-new),
and drops it once it could not."""

from __future__ import annotations

from datetime import timedelta

from agentledger.domain import events as ev
from agentledger.domain.assertions import (
    CLOCK_SKEW_SECONDS,
    MAX_LIFETIME_SECONDS,
    VerifiedAssertion,
)
from agentledger.domain.compaction import compact, context_state
from agentledger.domain.fold import project, state_hash
from bench.factories import RunScript


def _signed(token_id: str) -> VerifiedAssertion:
    return VerifiedAssertion(
        subject="usr_73", issuer="agentledger-local", key_id="k1", token_id=token_id
    )


def _turn(s: RunScript, token_id: str) -> ev.UserReplied:
    s.add(
        ev.ReplyAwaited,
        reason="question",
        step="understand",
        message="Which order?",
        deadline=s.now + timedelta(minutes=5),
    )
    return s.add(
        ev.UserReplied,
        text="ord_4821",
        principal_id="usr_73",
        reply_id=f"rep_{s.seq + 1}",
        assertion=_signed(token_id),
    )


def test_a_replys_token_id_is_spent_through_a_window_of_one_and_from_the_compacted_head() -> None:
    s = RunScript()
    s.started()
    for n in range(5):
        _turn(s, f"tok-{n}")
    marker = compact(project(s.events), recorded_at=s.now, manifest_hash=s.manifest_hash, window=1)
    s.events.append(marker)
    full, from_head = project(s.events), project([marker])

    assert set(full.spent_assertions) == {f"tok-{n}" for n in range(5)}
    assert len(full.conversation) == 1  # the window moved the turns out; the spent ids stayed
    assert from_head.spent_assertions == full.spent_assertions
    assert state_hash(from_head) == state_hash(full)


def test_a_token_id_is_dropped_only_once_its_assertion_could_no_longer_be_valid() -> None:
    s = RunScript()
    s.started()
    first = _turn(s, "tok-early")
    lives = timedelta(seconds=MAX_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS)

    s.now = first.recorded_at + lives - timedelta(seconds=3)
    assert _turn(s, "tok-later").recorded_at < first.recorded_at + lives
    assert set(project(s.events).spent_assertions) == {"tok-early", "tok-later"}

    s.now = first.recorded_at + lives - timedelta(seconds=2)
    assert _turn(s, "tok-last").recorded_at == first.recorded_at + lives
    assert set(project(s.events).spent_assertions) == {"tok-later", "tok-last"}


def test_the_model_is_not_sent_the_spent_token_ids() -> None:
    s = RunScript()
    s.started()
    _turn(s, "tok-1")
    assert project(s.events).spent_assertions
    assert context_state(project(s.events)).spent_assertions == {}


def test_an_approval_decisions_token_id_is_spent_too() -> None:
    s = RunScript()
    s.started()
    asked = s.request_approval("apr_1", "op_1", "create_refund", {"order_id": "ord_4821"})
    s.add(
        ev.ApprovalGranted,
        approval_id=asked.approval_id,
        approver="mgr_1",
        proposal_digest=asked.proposal_digest,
        assertion=_signed("tok-approval"),
    )
    assert set(project(s.events).spent_assertions) == {"tok-approval"}
