"""A data directory's own Temporal server, for every command: the ports it remembers, and who
holds them.

``demo``, ``dev`` and ``serve`` start the embedded server on the data directory's remembered
ports (``server.json``), else on 7233/8233, else, when another checkout holds those, on free
ports they then remember. Every command that talks to Temporal connects to the directory's own
server and refuses a port held by another directory's: its workers would run this directory's
runs against their own ledger. An explicit ``--temporal-address`` is left alone.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from agentledger.app.config import DEFAULT_TEMPORAL_PORT, DEFAULT_UI_PORT, Settings
from agentledger.app.devserver import (
    DevServer,
    ensure_dev_server,
    free_port,
    port_open,
    read_pid,
    server_holding,
    server_ports,
)
from agentledger.app.errors import ConfigError, ServerUnavailable

HOST = "127.0.0.1"
RECORD = "server.json"


@dataclass(frozen=True)
class Ports:
    port: int
    ui_port: int | None


def remembered(data_dir: Path) -> Ports | None:
    """The ports this data directory's server last listened on (``None``: never started)."""
    try:
        found = json.loads((data_dir / RECORD).read_text())
        return Ports(int(found["port"]), found.get("ui_port"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remember(data_dir: Path, ports: Ports) -> None:
    record = {"address": f"{HOST}:{ports.port}", "port": ports.port, "ui_port": ports.ui_port}
    (data_dir / RECORD).write_text(json.dumps(record) + "\n")


def current(data_dir: Path) -> Ports | None:
    """The ports of this data directory's server while it runs, else the remembered ones."""
    pid = read_pid(data_dir / "temporal.pid")
    running = server_ports(pid) if pid is not None else None
    return Ports(*running) if running is not None else remembered(data_dir)


def own_settings(settings: Settings) -> Settings:
    """``settings`` with the data directory's own server's ports where none were given, after
    refusing a port that another data directory's server holds."""
    if not settings.embedded_temporal:
        return settings
    data_dir = settings.data_dir.resolve()
    known = current(data_dir)
    port = settings.temporal_port or (known.port if known else DEFAULT_TEMPORAL_PORT)
    ui_port = settings.ui_port or (known.ui_port if known else None)
    refuse_foreign(data_dir, port)
    return settings.with_overrides(temporal_port=port, ui_port=ui_port)


def refuse_foreign(data_dir: Path, port: int) -> None:
    """Raise ``ServerUnavailable`` when ``port`` is open but not this data directory's server."""
    if not port_open(HOST, port):
        return
    holder = server_holding(port)
    if holder is not None and holder[1] == (data_dir / "temporal.db").resolve():
        return
    if holder is None and read_pid(data_dir / "temporal.pid") is not None:
        return  # no /proc to ask (not Linux): the directory's own server is running
    whose = (
        f"the Temporal server of {holder[1].parent}/ (pid {holder[0]})"
        if holder is not None
        else "something that is not this data directory's Temporal server"
    )
    raise ServerUnavailable(
        f"{HOST}:{port} is held by {whose}, not by the server of {data_dir}/; start this "
        "directory's own with `agentledger dev` (it picks free ports when 7233/8233 are taken "
        f"and remembers them in {data_dir / RECORD}), or use that one knowingly with "
        f"--temporal-address {HOST}:{port}"
        + (
            f" (AGENTLEDGER_TEMPORAL_PORT={port} chose this port: unset it to use the one "
            "this directory remembers)"
            if os.environ.get("AGENTLEDGER_TEMPORAL_PORT") == str(port)
            else ""
        )
    )


def start_own_server(settings: Settings) -> tuple[DevServer, Settings]:
    """This data directory's server, started or reused, and ``settings`` pinned to its ports."""
    data_dir = settings.data_dir.resolve()
    running = read_pid(data_dir / "temporal.pid")
    ports = current(data_dir) if running is not None else None
    if ports is not None and settings.temporal_port not in (None, ports.port):
        raise ConfigError(
            f"AGENTLEDGER_TEMPORAL_PORT={settings.temporal_port}, but this data directory's "
            f"server runs on {ports.port}; `agentledger stop` it first to move it, or unset "
            "AGENTLEDGER_TEMPORAL_PORT"
        )
    ports = ports or _chosen(data_dir, settings)
    server = ensure_dev_server(data_dir, port=ports.port, ui_port=ports.ui_port)
    data_dir.mkdir(parents=True, exist_ok=True)
    remember(data_dir, ports)
    return server, settings.with_overrides(temporal_port=ports.port, ui_port=ports.ui_port)


def _chosen(data_dir: Path, settings: Settings) -> Ports:
    """Ports to start on: the given ones (refused when taken), else the remembered or default
    ones, else free ones when another checkout holds those."""
    known = remembered(data_dir)
    port = settings.temporal_port or _free_unless_open(
        known.port if known else DEFAULT_TEMPORAL_PORT
    )
    if settings.ui_port is not None:
        if port_open(HOST, settings.ui_port):
            raise ServerUnavailable(
                f"the Temporal UI port {settings.ui_port} (AGENTLEDGER_UI_PORT) is taken; "
                "unset AGENTLEDGER_UI_PORT (this data directory then picks a free one and "
                "remembers it) or set another"
            )
        return Ports(port, settings.ui_port)
    preferred_ui = known.ui_port if known and known.ui_port else DEFAULT_UI_PORT
    return Ports(port, _free_unless_open(preferred_ui))


def _free_unless_open(port: int) -> int:
    return free_port() if port_open(HOST, port) else port
