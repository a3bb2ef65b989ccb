"""Stored events of older schema versions load as today's models."""

from __future__ import annotations

import copy

import pytest
from pydantic import ValidationError

from agentledger.domain.events import (
    EVENT_ADAPTER,
    SCHEMA_VERSION,
    ApprovalGranted,
    HistoryCompacted,
    RunFailed,
)
from agentledger.domain.fold import state_hash
from agentledger.domain.state import WorkingState
from agentledger.domain.upcasting import UnsupportedSchemaVersion, registered, upcast, upcaster

ENVELOPE = {
    "run_id": "run-1",
    "recorded_at": "2026-08-24T14:00:00Z",
    "manifest_hash": "sha256:" + "5e" * 32,
}


def test_a_v0_run_failed_loads_as_the_current_model() -> None:
    stored = {
        **ENVELOPE,
        "seq": 9,
        "kind": "run_failed",
        "error": "budget_exhausted: no steps left",
    }

    event = EVENT_ADAPTER.validate_python(upcast(stored))

    assert isinstance(event, RunFailed)
    assert (event.reason_code, event.message) == ("budget_exhausted", "no steps left")
    assert event.schema_version == SCHEMA_VERSION


def test_a_v0_error_without_a_code_keeps_its_text_as_the_message() -> None:
    stored = {**ENVELOPE, "seq": 9, "kind": "run_failed", "error": "worker lost"}

    event = EVENT_ADAPTER.validate_python(upcast(stored))

    assert isinstance(event, RunFailed)
    assert (event.reason_code, event.message) == ("unknown", "worker lost")


def test_a_v0_approval_granted_renames_approved_by_to_approver() -> None:
    stored = {
        **ENVELOPE,
        "seq": 4,
        "kind": "approval_granted",
        "approval_id": "appr_1",
        "approved_by": "mgr_1",
        "proposal_digest": "sha256:" + "ab" * 32,
    }

    event = EVENT_ADAPTER.validate_python(upcast(stored))

    assert isinstance(event, ApprovalGranted)
    assert event.approver == "mgr_1"


def test_kinds_whose_shape_did_not_change_only_move_their_version_on() -> None:
    stored = {**ENVELOPE, "seq": 2, "kind": "step_started", "step": "choose_next_action"}

    assert upcast(stored) == {**stored, "schema_version": SCHEMA_VERSION}


def test_a_current_payload_comes_back_untouched_and_uncopied() -> None:
    current = {
        **ENVELOPE,
        "seq": 2,
        "kind": "step_started",
        "step": "draft_answer",
        "schema_version": SCHEMA_VERSION,
    }

    assert upcast(current) is current


def test_upcasting_never_mutates_the_stored_payload() -> None:
    stored = {**ENVELOPE, "seq": 9, "kind": "run_failed", "error": "x: y"}
    before = copy.deepcopy(stored)

    upcast(stored)

    assert stored == before


@pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, -1, "1"])
def test_an_unknown_version_is_a_typed_error(version: object) -> None:
    stored = {**ENVELOPE, "seq": 2, "kind": "step_started", "step": "x", "schema_version": version}

    with pytest.raises(UnsupportedSchemaVersion, match="schema_version"):
        upcast(stored)


def test_registering_the_same_step_twice_is_refused() -> None:
    assert ("run_failed", 0) in registered()

    with pytest.raises(ValueError, match="already registered"):
        upcaster("run_failed", 0)(lambda payload: payload)


def test_an_upcaster_cannot_target_the_current_version() -> None:
    with pytest.raises(ValueError, match="not below SCHEMA_VERSION"):
        upcaster("step_started", SCHEMA_VERSION)(lambda payload: payload)


def test_an_event_stored_with_the_removed_causation_id_still_loads() -> None:
    stored = {**ENVELOPE, "seq": 3, "kind": "step_started", "step": "classify"}

    event = EVENT_ADAPTER.validate_python({**stored, "causation_id": None})

    assert event == EVENT_ADAPTER.validate_python(stored)
    assert "causation_id" not in event.model_dump()


def test_other_unknown_envelope_fields_are_still_refused() -> None:
    stored = {
        **ENVELOPE,
        "seq": 3,
        "kind": "step_started",
        "step": "classify",
        "causatoin_id": None,
    }

    with pytest.raises(ValidationError, match="causatoin_id"):
        EVENT_ADAPTER.validate_python(stored)


def test_a_state_recorded_with_the_removed_open_commitments_still_loads() -> None:
    recorded = WorkingState(run_id="run-1", last_seq=4).model_dump(mode="json")

    state = WorkingState.model_validate({**recorded, "open_commitments": {}})

    assert state == WorkingState.model_validate(recorded)
    assert state_hash(state) == state_hash(WorkingState(run_id="run-1", last_seq=4))


def test_compacted_facts_recorded_with_open_commitments_still_load() -> None:
    facts = {**WorkingState(run_id="run-1", last_seq=4).model_dump(mode="json")}
    stored = {**ENVELOPE, "seq": 5, "kind": "history_compacted", "through_seq": 4}
    stored |= {"facts": {**facts, "open_commitments": {}}, "facts_hash": "sha256:" + "0" * 64}

    event = EVENT_ADAPTER.validate_python(stored)

    assert isinstance(event, HistoryCompacted)
    assert event.facts == facts
