"""What every run activity shares: the ledger, the packs, the models, and the manifests and
contracts already read (cached by hash: a frozen manifest never changes)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from temporalio.exceptions import ApplicationError

from agentledger.activities import _telemetry
from agentledger.activities._final import erased_is_final
from agentledger.activities.ledger import Ledger
from agentledger.activities.memory import MemoryStore
from agentledger.activities.messages import ActivityQueues
from agentledger.activities.notices import NoticeConfig
from agentledger.activities.ports import ModelClient, Pack, PackLookup, UnknownPack
from agentledger.activities.sandboxes import Sandboxes
from agentledger.domain.assertions import TrustedKey
from agentledger.domain.events import RunEvent
from agentledger.domain.manifest import ExecutionManifest
from agentledger.domain.manifest_parts import with_shared_parts
from agentledger.domain.tools import ToolContract


class RunBase:
    """Activity implementations bound to one ledger and the installed packs and models."""

    def __init__(
        self,
        ledger: Ledger,
        models: Mapping[str, ModelClient],
        packs: PackLookup,
        memory: MemoryStore | None = None,
        *,
        trusted_keys: tuple[TrustedKey, ...],
        queues: ActivityQueues | None = None,
        notices: NoticeConfig | None = None,
    ) -> None:
        self._memory = memory
        self._queues = queues or ActivityQueues()
        self._trusted_keys = trusted_keys
        self._ledger = ledger
        self._notices = notices
        self._sandboxes = Sandboxes(ledger.engine)
        self._models = models
        self._packs = packs
        self._manifests = lru_cache(maxsize=256)(self._load_manifest)
        self._contracts = lru_cache(maxsize=256)(self._load_contracts)

    def _append(self, events: list[RunEvent]) -> int:
        with erased_is_final(self._ledger):
            appended = self._ledger.append(events)
        _telemetry.log_recorded(events)
        return appended

    def _pack(self, name: str) -> Pack:
        try:
            return self._packs(name)
        except UnknownPack as exc:
            # Final: retrying cannot install a pack; the run is recorded as failed instead.
            raise ApplicationError(str(exc), type="UnknownPack", non_retryable=True) from None

    def _load_manifest(self, manifest_hash: str) -> ExecutionManifest:
        manifest = self._ledger.get_manifest(manifest_hash)
        if manifest is None:
            raise ApplicationError(
                f"no manifest {manifest_hash} in the ledger",
                type="UnknownManifest",
                non_retryable=True,
            )
        return with_shared_parts(manifest)

    def _load_contracts(self, manifest_hash: str, pack: str) -> Mapping[str, ToolContract]:
        return self._manifests(manifest_hash).tool_contracts(self._pack(pack).contracts)
