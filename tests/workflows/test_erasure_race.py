"""A run that starts for a subject while their erasure runs is refused, never half-stored: its
first append fails as a final ``subject_erased`` (no retry loop), and the ledger holds nothing of
it."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError

from agentledger.activities.ledger import erasure, refusals
from agentledger.activities.ledger._tables import payload_keys
from agentledger.app.erasure import erase
from tests._temporal import Harness, gone

pytestmark = pytest.mark.temporal
REQUEST = "Where is my parcel ord_5100? It has not arrived."


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_run_starting_during_an_erasure_fails_once_as_subject_erased(
    harness: Harness,
) -> None:
    first = await harness.start(REQUEST, user="usr_88")
    await harness.until_approval_or_end(first)
    begun = erasure.begin(harness.runtime.ledger, "acme", "usr_88")  # not finished yet

    late = await harness.start(REQUEST, user="usr_88")
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(harness.client.get_workflow_handle(late).result(), 60)
    cause = failed.value.cause
    assert isinstance(cause, ActivityError) and isinstance(cause.cause, ApplicationError)
    assert cause.cause.type == "subject_erased" and cause.cause.non_retryable
    assert harness.runtime.ledger.read(late) == []
    assert begun.runs == (first,)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_erasure_also_closes_out_a_run_it_refused_history_and_payload_key(
    harness: Harness,
) -> None:
    """The refused run stored nothing, but Temporal had its request (sealed under its own
    payload key): the erasure that refused it destroys that key and deletes its history."""
    ledger = harness.runtime.ledger
    first = await harness.start(REQUEST, user="usr_88")
    await harness.until_approval_or_end(first)
    erasure.begin(ledger, "acme", "usr_88")  # under way: the next start is refused
    late = await harness.start(REQUEST, user="usr_88")
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(harness.client.get_workflow_handle(late).result(), 60)
    assert refusals.of_subject(ledger, "acme", "usr_88") == (late,)

    done = await erase(
        harness.client, ledger, "usr_88", by=harness.principal("dpo_1"), reason="r", register=None
    )

    assert done.refused == (late,) and done.affected["refused_runs"] == 1
    assert refusals.of_subject(ledger, "acme", "usr_88") == ()
    with ledger.engine.connect() as conn:
        keys = dict(conn.execute(select(payload_keys.c.workflow_id, payload_keys.c.wrapped)).all())
    assert keys[late] is None and keys[first] is None  # both destroyed
    assert await gone(harness, late)  # its history deleted (in the background)
