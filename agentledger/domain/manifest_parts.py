"""Manifests share the parts that runs of one pack version have in common.

Every run freezes a manifest of its own (its attempt id and its work order's digest are its
own), yet most of a manifest is the same for every run a worker serves of one pack version: the
tool terms with their schemas, the step profiles, the instructions, the model. Decoded once per
run, those parts were held once per run: a worker keeping a thousand runs in its sticky cache
held a thousand equal copies (a support manifest is about 47 KB of Python objects; its worker's
memory with runs parked is what ``bench.parked`` prints). ``with_shared_parts`` returns the
manifest with them replaced by one instance per distinct value, kept for the process.

The replacements are equal to what they replace and frozen, so nothing a run computes from its
manifest changes (its hash, its context packets, its replay); only the copies are gone.
"""

from __future__ import annotations

from collections import OrderedDict

from agentledger.domain.manifest import ExecutionManifest

SHARED = frozenset(
    {
        "model", "instructions", "tool_grants", "step_profiles", "token_budget", "step_graph",
        "tool_terms", "trusted_keys", "handoffs", "mcp_servers", "conversation", "compaction",
    }
)  # fmt: skip
"""The fields every run of one pack version (and worker configuration) has in common."""

KEPT = 64
"""Distinct sets of shared parts kept (pack versions, workers' key sets); the oldest go first."""

_kept: OrderedDict[str, dict[str, object]] = OrderedDict()


def with_shared_parts(manifest: ExecutionManifest) -> ExecutionManifest:
    """``manifest`` with its common parts those of the first equal manifest seen (itself, the
    first time). Equal parts are found by their JSON, so a part that differs is never shared."""
    key = manifest.model_dump_json(include=set(SHARED))
    parts = _kept.get(key)
    if parts is None:
        _kept[key] = {name: getattr(manifest, name) for name in SHARED}
        while len(_kept) > KEPT:
            try:
                _kept.popitem(last=False)
            except KeyError:  # another thread emptied it first
                break
        return manifest
    return manifest.model_copy(update=parts)
