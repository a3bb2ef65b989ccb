"""The approval and idempotency protocol model (``domain/approval_protocol.pml``) holds over
every interleaving spin can reach, can fail (each broken variant is caught), and speaks the
ledger's event names.

CI checks every interleaving without crashes (a few seconds) and each broken variant with them
(spin stops at the first violation); ``python -m bench.protocol`` checks the whole model, a crash
at every step included (about a minute)."""

from __future__ import annotations

import os
import re
import shutil
import typing

import pytest

from agentledger.domain import events as ev
from bench.protocol import BROKEN, MODEL, check


def _needs_spin() -> None:
    if shutil.which("spin") is None or shutil.which("cc") is None:
        if os.environ.get("CI"):
            pytest.fail("spin is missing (Debian package spin; ./run.sh test installs it)")
        pytest.skip("spin is not installed (apt-get install spin)")


def _event_kinds() -> set[str]:
    kinds = set()
    for member in typing.get_args(typing.get_args(ev.RunEvent)[0]):
        (kind,) = typing.get_args(member.model_fields["kind"].annotation)
        kinds.add(kind)
    return kinds


def test_the_model_names_only_events_the_ledger_records() -> None:
    declared = re.search(r"mtype = \{([^}]*)\}", MODEL.read_text())
    assert declared is not None
    modelled = {name.strip() for name in declared.group(1).split(",")}
    assert modelled <= _event_kinds(), modelled - _event_kinds()
    # Every approval event the ledger knows is one the model moves through, but for the
    # notices: they record where a request was announced and change nothing it can become.
    notices = {"approval_notified", "approval_notification_failed"}
    assert notices <= _event_kinds()
    assert {k for k in _event_kinds() if k.startswith("approval_")} - notices <= modelled


def test_no_interleaving_pays_twice_decides_twice_acts_ungranted_or_obeys_a_forger() -> None:
    _needs_spin()
    result = check("MAX_CRASHES=0", optimise=False)
    assert result.errors == 0, result.report
    assert result.states > 100_000  # the search really explored the interleavings


@pytest.mark.parametrize("variant", BROKEN)
def test_each_broken_variant_of_the_protocol_is_caught(variant: str) -> None:
    """No row lock: the cross-run double refund. No idempotency key: a retry after a crash past
    the commit answers that nothing was refunded. A handler trusting its validator: two
    approvers both decide, and a forgery gets through."""
    _needs_spin()
    result = check(variant, optimise=False)
    assert result.errors >= 1, result.report
    assert "assertion violated" in result.report
