"""Tool contracts for runs whose manifest froze none.

A run prepared before manifests froze each tool's terms was authorised against its pack's
contracts as deployed, and replays the same way. The worker's composition root installs the
lookup; the module is passed through the sandbox so a run sees the worker's lookup. Every run
prepared since reads the terms its manifest froze and never comes here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from temporalio import workflow

from agentledger.domain.tools import ToolContract

ContractLookup = Callable[[str], Mapping[str, ToolContract]]
_lookup: list[ContractLookup] = []


def install(lookup: ContractLookup) -> None:
    """Called by the composition root (the pack registry lives there); the last one wins."""
    _lookup[:] = [lookup]


def contracts_of(pack: str) -> Mapping[str, ToolContract]:
    if not _lookup:
        raise LookupError(
            f"a run prepared before manifests froze tool terms needs pack {pack!r}'s contracts, "
            "and this worker installed no pack lookup"
        )
    # The lookup may import the pack on first use: as the worker's module, not the sandbox's.
    with workflow.unsafe.imports_passed_through():
        return _lookup[0](pack)
