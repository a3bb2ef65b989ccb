"""Two data directories side by side never share a server, so never a ledger: a command whose
data directory is not the one the server on its port persists to refuses, naming both."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentledger.devserver import ensure_dev_server, stop_dev_server
from agentledger.errors import ServerUnavailable
from bench._stack import free_port
from tests.e2e.test_cli import CLI


def test_a_second_data_directory_refuses_the_first_ones_server(tmp_path: Path) -> None:
    first, second, port = tmp_path / "a", tmp_path / "b", free_port()
    server = ensure_dev_server(first, port=port, ui_port=None)
    try:
        assert server.started
        assert not ensure_dev_server(first, port=port, ui_port=None).started  # its own: reused
        with pytest.raises(ServerUnavailable, match=f"held by the Temporal server of {first}"):
            ensure_dev_server(second, port=port, ui_port=None)

        env = {**os.environ, "AGENTLEDGER_DATA_DIR": str(second)}
        env |= {"AGENTLEDGER_TEMPORAL_PORT": str(port), "AGENTLEDGER_UI_PORT": str(free_port())}
        env.pop("AGENTLEDGER_TEMPORAL_ADDRESS", None)
        env.pop("AGENTLEDGER_DATABASE_URL", None)
        demo = subprocess.run([*CLI, "demo"], env=env, capture_output=True, text=True, timeout=120)
        assert demo.returncode == 3, demo.stdout + demo.stderr
        assert f"held by the Temporal server of {first}" in demo.stderr
        assert "Traceback" not in demo.stderr
        assert not (second / "ledger.db").exists()  # nothing written for the refused directory
    finally:
        stop_dev_server(first)


def test_a_port_held_by_something_else_is_refused(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ServerUnavailable, match="not this data directory's Temporal server"):
            ensure_dev_server(tmp_path, port=port, ui_port=None)
