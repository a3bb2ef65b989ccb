"""A request is refused before its run starts when no step could hold it, with the limit; the
longest request that is taken runs without failing as ``insufficient_context``; an empty one is
refused as the API refuses it."""

from __future__ import annotations

import pytest

from agentledger.app import runs as client_ops
from agentledger.app.errors import Refused
from agentledger.app.registry import get_pack
from agentledger.domain.context.tokens import counter_for_encoding
from agentledger.domain.events import RunFailed
from agentledger.domain.request_limit import request_problem
from tests._temporal import Harness

pytestmark = pytest.mark.temporal

SENTENCE = "Where is my order ord_4823? "


def _longest_taken(harness: Harness) -> str:
    """The longest request of repeated sentences that the check takes."""
    pack = get_pack("support")
    counter = counter_for_encoding(pack.profile.model.encoding)
    low, high = 1, 2_000
    while low < high:
        middle = (low + high + 1) // 2
        order = pack.make_work_order(SENTENCE * middle, harness.principal("usr_73"))
        if request_problem(order, pack.profile, counter) is None:
            low = middle
        else:
            high = middle - 1
    return SENTENCE * low


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_request_no_step_can_hold_is_refused_before_the_run_starts(
    harness: Harness,
) -> None:
    order = get_pack("support").make_work_order("x " * 10_000, harness.principal("usr_73"))
    with pytest.raises(Refused, match=r"too long for pack support: \d+ tokens .* at most 1000"):
        await client_ops.start_run(
            harness.client, harness.settings.task_queue, order, issuer=harness.issuer
        )


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_longest_request_taken_is_never_failed_as_insufficient_context(
    harness: Harness,
) -> None:
    run_id = await harness.start(_longest_taken(harness).replace("ord_4823", "ord_4821", 1))
    state = await harness.until_approval_or_end(run_id)
    for approval_id in state.pending_approvals:  # on to the answer, the state at its largest
        await harness.decide(run_id, approval_id, "ops_lead_1")
    events = await harness.finish(run_id)
    failures = [e for e in events if isinstance(e, RunFailed)]
    assert [f.reason_code for f in failures] == [], failures
    assert any(e.kind == "run_completed" for e in events)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("request_text", ["", "   \n "])
async def test_an_empty_request_is_refused_before_the_run_starts(
    harness: Harness, request_text: str
) -> None:
    order = get_pack("support").make_work_order(request_text, harness.principal("usr_73"))
    with pytest.raises(Refused, match="the request is empty"):
        await client_ops.start_run(
            harness.client, harness.settings.task_queue, order, issuer=harness.issuer
        )
