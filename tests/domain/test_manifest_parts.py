"""Runs' manifests share what they have in common, and only that: each keeps its own identity
and hash, and a part that differs is never taken from another run's manifest."""

from __future__ import annotations

from agentledger.domain.manifest import ExecutionManifest, resolve_manifest
from agentledger.domain.manifest_parts import SHARED, with_shared_parts
from agentledger.packs.support import PACK
from agentledger.packs.support.profile import SUPPORT_PROFILE


def _manifest(attempt: str, **profile: object) -> ExecutionManifest:
    return resolve_manifest(
        SUPPORT_PROFILE.model_copy(update=profile),
        attempt_id=attempt,
        work_order_digest="sha256:" + attempt.encode().hex().ljust(64, "0"),
        memory_snapshot="memory:empty",
        policy_version="returns-2026-08",
        contracts=PACK.contracts,
    )


def test_two_runs_manifests_hold_one_copy_of_their_common_parts() -> None:
    first, second = _manifest("att-share-1"), _manifest("att-share-2")
    hashes = first.hash, second.hash
    a, b = with_shared_parts(first), with_shared_parts(second)
    assert all(getattr(a, name) is getattr(b, name) for name in SHARED)
    assert b.tool_terms is not second.tool_terms  # the second run's own copy is let go
    assert (a.attempt_id, b.attempt_id) == ("att-share-1", "att-share-2")
    assert (a, b) == (first, second) and (a.hash, b.hash) == hashes
    assert b.terms == second.terms


def test_a_part_that_differs_is_the_runs_own() -> None:
    plain = with_shared_parts(_manifest("att-own-1"))
    ttl = SUPPORT_PROFILE.approval_ttl_seconds  # not shared: the rest is
    other = _manifest("att-own-2", approval_ttl_seconds=ttl + 1)
    assert with_shared_parts(other).tool_terms is plain.tool_terms
    instructions = (
        SUPPORT_PROFILE.instructions[0].model_copy(update={"text": "Answer in French."}),
        *SUPPORT_PROFILE.instructions[1:],
    )
    changed = _manifest("att-own-3", instructions=instructions)
    shared = with_shared_parts(changed)
    assert shared.instructions == instructions and shared.instructions is not plain.instructions
    assert shared.hash == changed.hash != plain.hash
