"""The embedded stack's operations, shared by the CLI, the API's ``serve`` and eval: start (or
reuse) a data directory's own Temporal server, open the runtime or the ledger, look up a
principal, stop the stack. Each returns what it did; the faces say it (``agentledger.cli``).
"""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentledger.activities.ledger import Ledger, LedgerUnavailable
from agentledger.app.config import DEFAULT_TEMPORAL_PORT, DEFAULT_UI_PORT, Settings
from agentledger.app.devserver import DevServer, stop_dev_server
from agentledger.app.errors import DatabaseUnavailable, NotFound
from agentledger.app.own_server import RECORD, start_own_server
from agentledger.app.payloads import subject_sealer
from agentledger.domain.principal import Principal

if TYPE_CHECKING:
    from agentledger.app.runtime import Runtime

DEV_PID_FILE = "dev.pid"


@dataclass(frozen=True)
class ServerStart:
    """``settings`` pinned to the server's ports; ``server`` None for ``--temporal-address``."""

    settings: Settings
    server: DevServer | None = None

    @property
    def ports_moved(self) -> bool:
        """Ports other than 7233/8233 (taken, or set): remembered in the data directory."""
        return self.server is not None and (
            self.settings.temporal_port != DEFAULT_TEMPORAL_PORT
            or self.settings.ui_port != DEFAULT_UI_PORT
        )

    @property
    def record(self) -> Path:
        return self.settings.data_dir / RECORD


def start_server(settings: Settings) -> ServerStart:
    """Start (or reuse) the data directory's own embedded server; unchanged settings for an
    explicit ``--temporal-address``."""
    if not settings.embedded_temporal:
        return ServerStart(settings)
    server, settings = start_own_server(settings)
    return ServerStart(settings, server)


@dataclass(frozen=True)
class RuntimeOpened:
    runtime: Runtime
    created_ledger: bool  # the embedded ledger did not exist before
    seeded: bool  # sample records were created now
    broken_packs: list[str] = field(default_factory=list)  # each a pack's problem, refused alone


def open_runtime(settings: Settings, *, seed: bool = False) -> RuntimeOpened:
    # The whole runtime (workers' activities, MCP, providers) only for commands that run one.
    from agentledger.app.runtime import Runtime

    fresh = settings.missing_ledger is not None
    runtime = Runtime.open(settings)
    seeded = bool(seed and runtime.seed())
    broken = [str(problem) for problem in runtime.broken_packs.values()]
    return RuntimeOpened(runtime, fresh, seeded, broken)


def require_ledger(settings: Settings) -> None:
    """Refuse to go on without an existing embedded ledger (``demo``/``seed`` create it)."""
    if (path := settings.missing_ledger) is not None:
        raise NotFound(
            f"no ledger at {path}; `agentledger demo` or `agentledger seed` creates one, or "
            "pass --data-dir / --database-url"
        )


def open_ledger(settings: Settings) -> Ledger:
    """The configured ledger; the embedded one only if it exists (reads create nothing)."""
    require_ledger(settings)
    try:
        ledger = Ledger.open(settings.ledger_url)
    except LedgerUnavailable as exc:
        hint = "Check AGENTLEDGER_DATABASE_URL / --database-url."
        raise DatabaseUnavailable(f"{exc}. {hint}") from exc
    ledger.seal_with(subject_sealer(settings))
    return ledger


def principal_of(ledger: Ledger, user_id: str) -> Principal:
    principal = ledger.get_principal(user_id)
    if principal is None:
        raise NotFound(
            f"unknown principal {user_id!r}; known principals come from "
            "`agentledger seed` (e.g. usr_73, ops_lead_1)"
        )
    return principal


@dataclass(frozen=True)
class Stopped:
    dev_pid: int | None  # the `dev` worker ended, if one ran
    server: bool  # the embedded server was running and is stopped


async def stop_stack(data_dir: Path) -> Stopped:
    data_dir = data_dir.resolve()
    if (dev_pid := _running_pid(data_dir / DEV_PID_FILE)) is not None:
        os.kill(dev_pid, signal.SIGTERM)  # before the server, or it retries against a dead port
    return Stopped(dev_pid, await asyncio.to_thread(stop_dev_server, data_dir))


def _running_pid(pid_file: Path) -> int | None:
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


async def until_recorded(
    runtime: Runtime, run_id: str, timeout: float = 15.0, seq: int = 1
) -> bool:
    """Wait until the run's events up to ``seq`` are in the ledger (its first, by default), so
    `show` finds them right away."""
    deadline = asyncio.get_running_loop().time() + timeout
    while runtime.ledger.last_seq(run_id) < seq:
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True
