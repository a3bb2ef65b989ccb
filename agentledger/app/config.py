"""Settings from flags and ``AGENTLEDGER_*`` environment variables, resolved once."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentledger.app.errors import ConfigError, in_words
from agentledger.app.frontend import TemporalSecurity as TemporalSecurity
from agentledger.app.frontend import temporal_security as temporal_security
from agentledger.domain.retention import parse_retention

if TYPE_CHECKING:
    from agentledger.activities.models import ProviderConfig

PROVIDERS_VARIABLE = "AGENTLEDGER_MODEL_PROVIDERS"
ISSUERS_VARIABLE = "AGENTLEDGER_OIDC_ISSUERS"
DEFAULT_TEMPORAL_PORT = 7233
DEFAULT_UI_PORT = 8233
DEFAULT_MAX_CACHED_RUNS = 1000  # Temporal's own max_cached_workflows default


KINDS = ("workflows", "models", "tools")
"""The kinds of work a worker can take, each on its task queue (``Settings.queue_of``)."""


@dataclass(frozen=True)
class QueueLimits:
    concurrency: int = 64
    """Activities (or workflow tasks) one worker runs at once on this queue."""
    per_second: float | None = None
    """Activities started per second across the whole queue (every worker), e.g. a provider's
    rate limit; ``None``: no limit."""


@dataclass(frozen=True)
class Settings:
    data_dir: Path = Path(".agentledger")
    database_url: str | None = None
    temporal_address: str | None = None
    temporal_port: int | None = None
    """The embedded server's port (``AGENTLEDGER_TEMPORAL_PORT``; ``None``: the one the data
    directory remembers, else 7233, else a free one: ``agentledger.app.own_server``)."""
    ui_port: int | None = None
    """Its web UI's port (``AGENTLEDGER_UI_PORT``; ``None``: likewise, from 8233)."""
    namespace: str = "default"
    task_queue: str = "agentledger"
    model_queue: str | None = None
    """Model calls' task queue (``AGENTLEDGER_MODEL_QUEUE``; ``None``: ``task_queue``)."""
    tool_queue: str | None = None
    """Tool calls' task queue (``AGENTLEDGER_TOOL_QUEUE``; ``None``: ``task_queue``)."""
    limits: Mapping[str, QueueLimits] = field(default_factory=dict, hash=False)
    """Per kind of work (``workflows``, ``models``, ``tools``): concurrency per worker and
    activities per second across the queue (``AGENTLEDGER_MODELS_CONCURRENCY``,
    ``AGENTLEDGER_MODELS_RATE``, and likewise for ``TOOLS`` and ``WORKFLOWS``)."""
    deployment: str | None = None
    """Temporal worker deployment this worker belongs to (``AGENTLEDGER_DEPLOYMENT``), with
    ``build_id`` (``AGENTLEDGER_BUILD_ID``): runs are pinned to the build that started them, so
    a run parked for days finishes on the code it started on (README: Scale out)."""
    build_id: str | None = None
    demo_approver: str | None = None
    """Who approves in ``demo`` (``None``: the pack's sample approver)."""
    extra_packs: tuple[str, ...] = ()
    """``name=module:attribute`` entries: packs beyond the built-in ones (tests, user packs)."""
    temporal_security: TemporalSecurity = field(default_factory=TemporalSecurity)
    max_cached_runs: int = DEFAULT_MAX_CACHED_RUNS
    """Runs a worker keeps in memory between their tasks (Temporal's sticky cache, whose default
    this is). An evicted run is replayed from history at its next task: a smaller cache saves
    memory on parked runs but replays busy ones. ``python -m bench.parked`` measures both."""
    ended_runs_kept_hours: int = 24
    """How long after a run ends what it left beside its log is kept: its answer streams and a
    fork's sandbox (``AGENTLEDGER_ENDED_RUNS_KEPT_HOURS``); housekeeping drops them after that
    (``activities.leftovers``). The log, with the recorded answer, is kept."""

    content_retention: Mapping[str, int] = field(default_factory=dict)
    """Days each tenant keeps run content after a run ends (``AGENTLEDGER_CONTENT_RETENTION``,
    ``domain.retention``); empty: kept until erased."""
    erasure_register: Path | None = None
    """``AGENTLEDGER_ERASURE_REGISTER``: what erasures destroyed, kept outside the ledger so a
    restored backup is erased again (``app.erasure_register``; default: the data directory's)."""

    metrics_port: int | None = None
    """Serve ``/metrics`` on this port (worker and dev; ``None``: no metrics at all)."""
    metrics_host: str = "0.0.0.0"
    """Where ``/metrics`` listens: every interface, as a fleet's Prometheus scrapes from
    elsewhere (``AGENTLEDGER_METRICS_HOST=127.0.0.1`` keeps it on the machine)."""
    trusted_keys_file: Path | None = None
    """A JWKS file of the public keys decisions and replies may be signed with, pinned into
    each new run's manifest (``AGENTLEDGER_TRUSTED_KEYS``; ``None``: this process's own
    issuer's key)."""
    notify_file: Path | None = None
    """The approval notices' channels, their secrets' variables and tenants (JSON,
    ``AGENTLEDGER_NOTIFY_FILE``; ``activities.notices``); ``None``: no notices."""
    revoked_keys: frozenset[str] = frozenset()
    """Key ids (``kid``) no longer trusted, even by runs that pinned them: a decision they sign
    is refused when it arrives (``AGENTLEDGER_REVOKED_KEYS``, comma-separated)."""
    issuer_key: Path | None = None
    """The Ed25519 private key (PEM) this process signs with (``AGENTLEDGER_ISSUER_KEY``;
    ``None``: the data directory's local issuer, created on first use)."""
    issuer_name: str = "agentledger-local"
    """The ``iss`` this process signs as (``AGENTLEDGER_ISSUER_NAME``)."""
    issuer_tenants: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    """The tenants each external issuer may speak for (``tenants`` of each
    ``AGENTLEDGER_OIDC_ISSUERS`` entry): a decision or reply signed on behalf of one of its
    callers is refused for anyone outside them (``domain.assertions.issuer_refusal``)."""
    retrieval: str = "fulltext"
    """How policy searches rank passages (``AGENTLEDGER_RETRIEVAL``): ``fulltext`` (the
    default, base install), ``semantic`` (sentence embeddings) or ``fused`` (both, by reciprocal
    rank); the last two need ``pip install 'agentledger[semantic]'``."""
    model_providers: Mapping[str, ProviderConfig] = field(default_factory=dict, hash=False)
    """The model providers a run may name: endpoint, key variable and allowed models, set on
    the worker (``AGENTLEDGER_MODEL_PROVIDERS``), never by whoever starts a run."""

    @property
    def ended_runs_kept(self) -> timedelta:
        return timedelta(hours=self.ended_runs_kept_hours)

    @property
    def ledger_url(self) -> str:
        """The embedded default is SQLite in the data directory."""
        return self.database_url or f"sqlite:///{(self.data_dir / 'ledger.db').resolve()}"

    @property
    def missing_ledger(self) -> Path | None:
        """The embedded ledger's path when it is the one configured and does not exist yet."""
        path = (self.data_dir / "ledger.db").resolve()
        return path if self.database_url is None and not path.exists() else None

    @property
    def embedded_temporal(self) -> bool:
        return self.temporal_address is None

    @property
    def address(self) -> str:
        return self.temporal_address or f"127.0.0.1:{self.temporal_port or DEFAULT_TEMPORAL_PORT}"

    def queue_of(self, kind: str) -> str:
        """The task queue of a kind of work."""
        queues = {"workflows": self.task_queue, "models": self.model_queue,
                  "tools": self.tool_queue}  # fmt: skip
        return queues[kind] or self.task_queue

    def with_overrides(self, **overrides: Any) -> Settings:
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def _int(name: str, default: int) -> int:
    found = _optional_int(name)
    return default if found is None else found


def _retention(raw: str) -> dict[str, int]:
    try:
        return parse_retention(raw)
    except ValueError as exc:
        raise ConfigError(f"AGENTLEDGER_CONTENT_RETENTION={raw!r}: {exc}") from None


def _optional_path(name: str) -> Path | None:
    raw = os.environ.get(name, "").strip()
    return Path(raw).expanduser() if raw else None


def _optional_int(name: str) -> int | None:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a whole number") from None


def model_providers(value: str | None) -> dict[str, ProviderConfig]:
    """The provider table: inline JSON, or the path of a ``.json`` or ``.toml`` file."""
    if not value or not value.strip():
        return {}
    from agentledger.activities.models import (
        providers_from,  # the providers' code only when configured
    )

    try:
        if value.lstrip().startswith("{"):
            return providers_from(json.loads(value))
        path = Path(value).expanduser()
        text = path.read_text()
        return providers_from(tomllib.loads(text) if path.suffix == ".toml" else json.loads(text))
    except (OSError, ValueError) as exc:  # JSON and TOML decode errors are ValueErrors
        raise ConfigError(
            f"{PROVIDERS_VARIABLE}: {in_words(exc)}. Expected {{name: {{kind, base_url, "
            "api_key_env, models}} as JSON, or the path of such a .json/.toml file"
        ) from None


def issuer_tenants(value: str | None) -> dict[str, tuple[str, ...]]:
    """``AGENTLEDGER_OIDC_ISSUERS`` (inline JSON or a ``.json`` file's path), as the tenants
    each issuer is bound to: every entry names them (``"tenants": ["acme"]``)."""
    if not value or not value.strip():
        return {}
    try:
        raw = json.loads(value if value.lstrip().startswith("[") else Path(value).read_text())
        return {str(entry["issuer"]): bound_tenants(entry) for entry in raw}
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ConfigError(f"{ISSUERS_VARIABLE}: {exc}") from None


def bound_tenants(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """The tenants one issuer entry may speak for (sub-tenants included); required."""
    tenants = entry.get("tenants")
    if not isinstance(tenants, list) or not tenants:
        raise ValueError(f"issuer {entry.get('issuer')!r}: name the tenants it speaks for")
    if not all(isinstance(t, str) and t.strip() for t in tenants):
        raise ValueError(f"issuer {entry.get('issuer')!r}: tenants must be tenant ids")
    return tuple(tenants)


def _limits() -> dict[str, QueueLimits]:
    found = {}
    for kind in KINDS:
        concurrency = _optional_int(f"AGENTLEDGER_{kind.upper()}_CONCURRENCY")
        rate = os.environ.get(f"AGENTLEDGER_{kind.upper()}_RATE", "").strip()
        try:
            per_second = float(rate) if rate else None
        except ValueError:
            raise ConfigError(f"AGENTLEDGER_{kind.upper()}_RATE={rate!r} is not a number") from None
        if concurrency is not None or per_second is not None:
            found[kind] = QueueLimits(concurrency or 64, per_second)
    return found


def database_url(url: str | None, password_file: str | None) -> str | None:
    """The ledger's URL, its password read from a file when one is named (a container secret),
    so that the password is in no environment variable and no manifest."""
    if url is None or not password_file:
        return url
    from sqlalchemy.engine import make_url  # only for the deployments that use it

    try:
        password = Path(password_file).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"AGENTLEDGER_DATABASE_PASSWORD_FILE: {exc}") from None
    return make_url(url).set(password=password).render_as_string(hide_password=False)


def retrieval_mode(value: str | None) -> str:
    """``AGENTLEDGER_RETRIEVAL`` checked: a known mode whose packages are installed."""
    from agentledger.activities.retrieval import SemanticUnavailable, check_mode

    raw = (value or "").strip().lower() or "fulltext"
    try:
        return check_mode(raw)
    except ValueError as exc:
        raise ConfigError(f"AGENTLEDGER_RETRIEVAL: {exc}") from None
    except SemanticUnavailable as exc:
        raise ConfigError(f"AGENTLEDGER_RETRIEVAL={raw}: {exc}") from None


def from_environment() -> Settings:
    env = os.environ.get
    return Settings(
        data_dir=Path(env("AGENTLEDGER_DATA_DIR", ".agentledger")),
        database_url=database_url(
            env("AGENTLEDGER_DATABASE_URL") or None, env("AGENTLEDGER_DATABASE_PASSWORD_FILE")
        ),
        temporal_address=env("AGENTLEDGER_TEMPORAL_ADDRESS") or None,
        temporal_port=_optional_int("AGENTLEDGER_TEMPORAL_PORT"),
        ui_port=_optional_int("AGENTLEDGER_UI_PORT"),
        namespace=env("AGENTLEDGER_NAMESPACE", "default"),
        task_queue=env("AGENTLEDGER_TASK_QUEUE", "agentledger"),
        deployment=env("AGENTLEDGER_DEPLOYMENT") or None,
        build_id=env("AGENTLEDGER_BUILD_ID") or None,
        model_queue=env("AGENTLEDGER_MODEL_QUEUE") or None,
        tool_queue=env("AGENTLEDGER_TOOL_QUEUE") or None,
        limits=_limits(),
        demo_approver=env("AGENTLEDGER_DEMO_APPROVER") or None,
        extra_packs=tuple(p for p in env("AGENTLEDGER_PACKS", "").split(",") if p.strip()),
        temporal_security=temporal_security(os.environ),
        max_cached_runs=_int("AGENTLEDGER_MAX_CACHED_RUNS", DEFAULT_MAX_CACHED_RUNS),
        ended_runs_kept_hours=_int("AGENTLEDGER_ENDED_RUNS_KEPT_HOURS", 24),
        content_retention=_retention(env("AGENTLEDGER_CONTENT_RETENTION", "")),
        erasure_register=_optional_path("AGENTLEDGER_ERASURE_REGISTER"),
        metrics_port=_optional_int("AGENTLEDGER_METRICS_PORT"),
        metrics_host=env("AGENTLEDGER_METRICS_HOST") or "0.0.0.0",
        trusted_keys_file=_optional_path("AGENTLEDGER_TRUSTED_KEYS"),
        notify_file=_optional_path("AGENTLEDGER_NOTIFY_FILE"),
        revoked_keys=frozenset(
            k.strip() for k in env("AGENTLEDGER_REVOKED_KEYS", "").split(",") if k.strip()
        ),
        issuer_key=_optional_path("AGENTLEDGER_ISSUER_KEY"),
        issuer_name=env("AGENTLEDGER_ISSUER_NAME") or "agentledger-local",
        issuer_tenants=issuer_tenants(env(ISSUERS_VARIABLE)),
        retrieval=retrieval_mode(env("AGENTLEDGER_RETRIEVAL")),
        model_providers=model_providers(env(PROVIDERS_VARIABLE)),
    )
