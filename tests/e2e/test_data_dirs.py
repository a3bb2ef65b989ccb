"""Two data directories side by side never share a server, so never a ledger: a command whose
data directory is not the one the server on its port persists to refuses, naming both."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from agentledger.app.devserver import ensure_dev_server, stop_dev_server
from agentledger.app.errors import ServerUnavailable
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


def _second_env(second: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    return {**env, "AGENTLEDGER_DATA_DIR": str(second), **extra}


def _refused(env: dict[str, str], first: Path, *args: str) -> None:
    try:
        done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:  # a worker that took the other directory's server
        pytest.fail(f"`{' '.join(args)}` connected to {first}'s server and kept serving it")
    assert done.returncode == 3, (args, done.stdout, done.stderr)
    assert f"held by the Temporal server of {first}/" in done.stderr, (args, done.stderr)
    assert "agentledger dev" in done.stderr and "--temporal-port" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_every_command_of_a_second_data_directory_refuses_the_first_ones_server(
    tmp_path: Path,
) -> None:
    first, second, port = tmp_path / "a", tmp_path / "b", free_port()
    ensure_dev_server(first, port=port, ui_port=None)
    try:
        env = _second_env(second, AGENTLEDGER_TEMPORAL_PORT=str(port))
        seeded = subprocess.run([*CLI, "seed"], env=env, capture_output=True, text=True)
        assert seeded.returncode == 0, seeded.stderr  # the ledger alone: no Temporal
        for args in (
            ["run", "support", "Where is order ord_4823?", "--user", "usr_73"],
            ["approve", "run_x", "apr_1", "--as", "ops_lead_1"],
            ["reply", "run_x", "hello", "--as", "usr_73"],
            ["verify", "run_x"],
            ["check-replay"],
            ["worker"],
        ):
            _refused(env, first, *args)
        _refused({**env, "AGENTLEDGER_DEPLOYMENT": "d"}, first, "deploy", "show")
        # Without a port of its own given: the directory remembers the one it had (now the
        # first directory's), and is refused there too rather than borrowing it.
        remembered = _second_env(second)
        (second / "server.json").write_text(json.dumps({"port": port, "ui_port": None}))
        _refused(remembered, first, "verify", "run_x")
    finally:
        stop_dev_server(first)


def test_a_data_directory_whose_ports_are_taken_picks_free_ones_and_remembers_them(
    tmp_path: Path,
) -> None:
    first, second, port = tmp_path / "a", tmp_path / "b", free_port()
    ensure_dev_server(first, port=port, ui_port=None)
    with socket.socket() as busy_ui:
        busy_ui.bind(("127.0.0.1", 0))
        busy_ui.listen()
        ui_port = busy_ui.getsockname()[1]
        second.mkdir()  # it had these ports once; another checkout took them meanwhile
        (second / "server.json").write_text(json.dumps({"port": port, "ui_port": ui_port}))
        env = _second_env(second)
        try:
            demo = subprocess.run([*CLI, "demo"], env=env, capture_output=True, text=True,
                                  timeout=180)  # fmt: skip
            assert demo.returncode == 0, demo.stdout + demo.stderr
            chosen = json.loads((second / "server.json").read_text())
            assert chosen["port"] not in (port, ui_port) and chosen["ui_port"] not in (
                port,
                ui_port,
            )
            assert f"Temporal dev server started at 127.0.0.1:{chosen['port']}" in demo.stdout
            assert f"UI http://127.0.0.1:{chosen['ui_port']}" in demo.stdout
            assert "remembered in" in demo.stdout
            run_id = re.search(r"run (run_\w+) started", demo.stdout)
            assert run_id is not None, demo.stdout
            # A later command of the same directory goes to its own server, on its ports.
            verify = subprocess.run([*CLI, "verify", run_id.group(1)], env=env,
                                    capture_output=True, text=True, timeout=60)  # fmt: skip
            assert verify.returncode == 0, verify.stdout + verify.stderr
        finally:
            subprocess.run([*CLI, "stop"], env=env, capture_output=True, timeout=60)
            stop_dev_server(first)


def test_the_default_ports_taken_by_another_checkout_give_free_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentledger.app import own_server
    from agentledger.app.config import Settings

    first, second, port = tmp_path / "a", tmp_path / "b", free_port()
    ensure_dev_server(first, port=port, ui_port=None)
    monkeypatch.setattr(own_server, "DEFAULT_TEMPORAL_PORT", port)  # "7233", held by `first`
    monkeypatch.setattr(own_server, "DEFAULT_UI_PORT", free_port())  # never the real 8233
    try:
        server, pinned = own_server.start_own_server(Settings(data_dir=second))
        assert server.started and pinned.temporal_port not in (None, port)
        assert own_server.own_settings(Settings(data_dir=second)).address == server.address
        assert own_server.remembered(second.resolve()) == own_server.Ports(
            pinned.temporal_port or 0, pinned.ui_port
        )
    finally:
        stop_dev_server(second.resolve())
        stop_dev_server(first)
