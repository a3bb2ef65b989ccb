"""The approval protocol's state machine over the pure domain (``bench.protocol_deep``): a few
examples here for CI's budget (``python -m bench.protocol`` runs thousands), an approval's expiry
reached on the machine's clock, and a machine that does fail when the domain's checks are
taken away."""

from __future__ import annotations

import pytest

from agentledger.domain import events as ev
from bench import protocol_deep, protocol_desk
from bench.protocol_deep import DeepProtocol, Tally, explore
from bench.protocol_prefix import TTL_SECONDS


def test_a_sample_of_interleavings_breaks_nothing() -> None:
    found = explore(30, 20, derandomize=True)

    assert found.violation is None, found.violation
    assert found.examples >= 30
    assert found.rules["step"] and found.rules["decide"], found.rules


def test_an_approval_expires_on_the_clock_the_domain_sees() -> None:
    DeepProtocol.tally = Tally()
    machine = DeepProtocol()
    machine.first_run("ord_1")
    machine.step(pick=0, crash_at=None)
    run = machine.world.runs[0]
    assert run.pending() is not None
    machine.tick(TTL_SECONDS)
    machine.decide(pick=0, who="ops_lead_1", approve=True, ago=0, crash_at=None)
    machine.expire(pick=0, crash_at=None)
    machine.the_protocol_holds()
    machine.teardown()

    refused = [e for e in run.ledger if isinstance(e, ev.ApprovalAttemptRefused)]
    assert [e.reason_code for e in refused] == ["expired"]
    assert any(isinstance(e, ev.ApprovalExpired) for e in run.ledger)
    assert machine.tally.outcomes["expire:expired"] == 1


def test_without_the_policy_check_the_machine_finds_a_violation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Decisions judged on their signature alone (not pending, expired, another digest: all
    taken): the machine must catch it, or its checks prove nothing."""
    monkeypatch.setattr(protocol_desk, "check_approval_decision", lambda *a, **k: None)

    found = protocol_deep.explore(200, 30, derandomize=True, shrink=False)

    assert found.violation is not None
