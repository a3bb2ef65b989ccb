"""A run that starts for a subject while their erasure runs is refused, never half-stored: its
first append fails as a final ``subject_erased`` (no retry loop), and the ledger holds nothing of
it."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError

from agentledger.activities.ledger import erasure
from tests._temporal import Harness

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
