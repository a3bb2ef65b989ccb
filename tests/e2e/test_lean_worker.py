"""A worker process carries what running runs need and nothing of the other faces: not the API,
evaluation, the MCP server side, A2A, the semantic model, a provider's SDK or Prometheus while
none is configured, nor Alembic over a migrated database (``bench.worker_imports`` migrates as
a release does, then runs the real command to its workers' start)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentledger.app.devserver import DevServer
from bench.worker_imports import forbidden, imports_of, worker_env


@pytest.mark.parametrize("command", ["worker", "dev"])
def test_a_worker_process_imports_none_of_the_other_faces(
    temporal_server: DevServer, tmp_path: Path, command: str
) -> None:
    report = imports_of(command, worker_env(tmp_path, temporal_server.address))
    assert "agentledger.workflows.agent_run" in report["modules"]  # its workers were built
    assert forbidden(report) == {}


def test_a_forbidden_import_is_named_with_the_module_that_imported_it(
    temporal_server: DevServer, tmp_path: Path
) -> None:
    (tmp_path / "fat_pack.py").write_text(
        "import fastapi  # the API's framework, in a pack a worker loads\n"
        "from bench._noop_pack import PACK\n"
    )
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    env = worker_env(tmp_path / "data", temporal_server.address) | {
        "AGENTLEDGER_PACKS": "bench=fat_pack:PACK",
        "PYTHONPATH": path,
    }
    found = forbidden(imports_of("worker", env))
    assert list(found) == ["fastapi"]
    assert found["fastapi"].startswith("fastapi <- fat_pack <- agentledger.app.registry")


def test_a_worker_with_a_provider_configured_loads_that_providers_sdk_at_start(
    temporal_server: DevServer, tmp_path: Path
) -> None:
    table = '{"local": {"base_url": "http://127.0.0.1:9/v1", "models": ["tiny"]}}'
    env = worker_env(tmp_path, temporal_server.address) | {"AGENTLEDGER_MODEL_PROVIDERS": table}
    modules = imports_of("worker", env)["modules"]
    assert "openai" in modules  # an OpenAI-compatible endpoint is spoken through its SDK
    assert "anthropic" not in modules
