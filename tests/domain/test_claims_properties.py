"""Properties of claims over random conversations about several resources: whatever a model
claims, a completed answer never reports an operation on a resource without a succeeded
receipt of that tool about that resource, and a script written with the SDK's lookups by
resource never claims one about another resource than the one it is asked about."""

from __future__ import annotations

import re
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from agentledger.domain import events as ev
from agentledger.domain.context import ContextPacket, PacketItem, Section
from agentledger.domain.context.state_view import state_view
from agentledger.domain.decisions import Answer, Claim
from agentledger.domain.fold import project
from agentledger.domain.run_loop import DRAFT_ANSWER
from agentledger.domain.steps import ModelStepResult, Recording, after_model_step, complete
from agentledger.domain.tools import ReceiptStatus
from agentledger.sdk import PacketView, answer
from bench.factories import T0, RunScript
from tests.domain.test_claims import MANIFEST

PROPERTY = settings(max_examples=120, deadline=None)
CARDS = ("gc_1001", "gc_1002", "gc_1003")
TOOLS = ("get_card", "extend_card")
_CARD = re.compile(r"\bgc_[0-9]{4}\b")

Call = tuple[str, str, ReceiptStatus]
calls = st.lists(
    st.tuples(
        st.sampled_from(TOOLS),
        st.sampled_from(CARDS),
        st.sampled_from(("succeeded", "failed")),
    ),
    max_size=6,
)


def history(made: list[Call]) -> RunScript:
    """A run whose calls (tool, card, outcome) each recorded the card it was about."""
    s = RunScript(manifest_hash=MANIFEST.hash)
    s.started()
    s.step()
    for n, (tool, card, status) in enumerate(made, start=1):
        s.authorise(f"op_{n}", tool, {"card_id": card}, write=tool != "get_card", resource_id=card)
        s.receipt(f"op_{n}", tool, status=status, write=tool != "get_card")
    s.step(DRAFT_ANSWER)
    return s


def completed_with(s: RunScript, said: Answer) -> ev.RunCompleted | None:
    """The run's completion when the runtime accepts the answer (``None``: refused)."""
    rec = Recording(run_id="run-1", state=project(s.events), manifest_hash=MANIFEST.hash)
    at = T0 + timedelta(hours=1)
    accepted = after_model_step(rec, at, DRAFT_ANSWER, ModelStepResult(decision=said), MANIFEST)
    if accepted is None:
        return None
    complete(rec, at, said)
    done = rec.outbox[-1]
    assert isinstance(done, ev.RunCompleted)
    return done


def supported(claim: Claim, made: list[Call]) -> bool:
    n = int(claim.operation_id.removeprefix("op_")) if claim.operation_id[3:].isdigit() else 0
    return 1 <= n <= len(made) and made[n - 1] == (claim.tool, claim.resource_id, "succeeded")


claims = st.lists(
    st.builds(
        Claim,
        operation_id=st.sampled_from([f"op_{n}" for n in range(1, 8)]),
        tool=st.sampled_from(TOOLS),
        resource_id=st.sampled_from((*CARDS, None)),
    ),
    max_size=3,
)


@PROPERTY
@given(calls, claims)
def test_no_completed_answer_claims_an_effect_without_its_receipt(
    made: list[Call], claimed: list[Claim]
) -> None:
    done = completed_with(history(made), Answer(answer="Done.", claims=tuple(claimed)))
    assert (done is not None) == all(supported(c, made) for c in claimed)
    if done is not None:
        assert all(supported(c, made) for c in done.claims)
        assert done.answer.count("\n- ") == len(set(claimed))


def respond(view: PacketView) -> dict[str, JsonValue]:
    """The tutorial's answer, looked up by the card the customer's newest message names."""
    card = next((m[0] for t in reversed(view.user_texts()) if (m := _CARD.findall(t))), None)
    extended = view.succeeded("extend_card", card_id=card) if card else None
    if extended is not None:
        return answer(f"Card {card} is extended.", confirms=[extended])
    return answer(f"Card {card} is not extended.")


def asked(s: RunScript, questions: list[str]) -> PacketView:
    turns = tuple(
        PacketItem.model_construct(
            id=f"turn_{n}",
            kind="conversation_turn" if n else "user_request",
            content={"role": "user", "text": f"{n}: and what about {card}?"},
            created_at=T0 + timedelta(minutes=n),
        )
        for n, card in enumerate(questions)
    )
    state = state_view(project(s.events), ("completed_actions",))
    packet = ContextPacket.model_construct(
        step=DRAFT_ANSWER,
        working_state=state,
        sections=(Section.model_construct(name="conversation", items=turns),),
    )
    return PacketView(packet)


@PROPERTY
@given(calls, st.lists(st.sampled_from(CARDS), min_size=1, max_size=4))
def test_a_script_using_lookups_by_resource_claims_only_the_card_it_is_asked_about(
    made: list[Call], questions: list[str]
) -> None:
    s = history(made)
    said = Answer.model_validate(respond(asked(s, questions)))
    done = completed_with(s, said)
    assert done is not None, "the script's claims are always supported"
    card = questions[-1]
    assert all(c.resource_id == card and supported(c, made) for c in done.claims)
    extended = ("extend_card", card, "succeeded") in made
    assert bool(done.claims) == extended
