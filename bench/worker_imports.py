"""What a worker process has imported once its Temporal workers are built, and what it must not.

``agentledger worker`` (or ``dev``) runs in a fresh process through the real command, up to the
point where its workers are constructed (workflows and activities registered) and would start
polling; there the process records ``sys.modules``, who first imported each module, and its
resident memory, and leaves. The database is migrated first, as a release does before its
workers start. A worker runs runs: it must not carry the HTTP face, evaluation, the MCP server
side, A2A, the semantic model, the provider SDKs, an HTTP client or Prometheus unless
configured, nor Alembic unless a schema is behind.

    python -m bench.worker_imports [--command worker|dev] [--temporal-address HOST:PORT]

Without an address it starts a private dev server. Prints the forbidden modules found (with the
chain of importers that brought each in), then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = (
    "agentledger.api",  # the HTTP face
    "agentledger.evaluation",  # `eval`
    "agentledger.cli.eval",
    "agentledger.cli.serve",
    "fastapi",
    "starlette",
    "jinja2",
    "uvicorn",
    "mcp.server",  # the MCP door is the API's; a worker is only ever an MCP client
    "a2a",
    "agentledger.activities.retrieval._semantic",  # the semantic model, unless configured
    "numpy",
    "onnxruntime",
    "tokenizers",
    "openai",  # provider SDKs, unless a provider is configured (activities.models._sdk)
    "anthropic",
    "prometheus_client",  # unless a metrics port is configured
    "httpx",  # an HTTP client: a webhook notice or a provider's SDK loads it when it is used
    "alembic",  # migrations are a release's (`agentledger migrate`); a schema at head is read
    # without it (activities.schema_versions)
)


def forbidden(report: Mapping[str, Any]) -> dict[str, str]:
    """Each forbidden module in an ``imports_of`` report that came in first (its importer was
    not forbidden too), with the chain that imported it: ``fastapi <- some_pack <- agentledger.
    app.registry <- ...``."""
    importers: dict[str, str] = report["importers"]
    return {
        module: " <- ".join(_chain(module, importers))
        for module in sorted(report["modules"])
        if _matches(module) and not _matches(importers.get(module, "?"))
    }


def _matches(module: str) -> bool:
    return any(module == f or module.startswith(f"{f}.") for f in FORBIDDEN)


def _chain(module: str, importers: dict[str, str]) -> list[str]:
    chain = [module]
    while (parent := importers.get(chain[-1])) and parent not in chain and len(chain) < 12:
        chain.append(parent)
    return chain


def imports_of(command: str, env: dict[str, str]) -> dict[str, Any]:
    """Run ``agentledger <command>`` to its workers' construction in a new process, after
    ``agentledger migrate`` as a release runs it; what it imported (``modules``), who imported
    each (``importers``) and ``rss_mb`` there."""
    migrate = [sys.executable, "-m", "agentledger.cli", "migrate"]
    done = subprocess.run(migrate, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    if done.returncode:
        raise RuntimeError(f"agentledger migrate failed:\n{done.stdout}{done.stderr}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "imports.json"
        child = [sys.executable, "-m", "bench._worker_imports_child", str(out), command]
        done = subprocess.run(child, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        if not out.exists():
            raise RuntimeError(f"agentledger {command} stopped early:\n{done.stdout}{done.stderr}")
        report: dict[str, Any] = json.loads(out.read_text())
    return report


def worker_env(data_dir: Path, temporal_address: str) -> dict[str, str]:
    """This process's environment without any AGENTLEDGER_ setting, on a private data dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    return env | {
        "AGENTLEDGER_DATA_DIR": str(data_dir),
        "AGENTLEDGER_TEMPORAL_ADDRESS": temporal_address,
    }


def _measure(command: str, address: str | None) -> dict[str, Any]:
    from agentledger.app.devserver import stop_dev_server
    from bench._stack import start_dev_server

    with tempfile.TemporaryDirectory(prefix="agentledger-bench-") as tmp:
        server_dir, data_dir = Path(tmp) / "temporal", Path(tmp) / "data"
        if address is None:
            address = start_dev_server(server_dir).address
        try:
            return imports_of(command, worker_env(data_dir, address))
        finally:
            if server_dir.exists():
                stop_dev_server(server_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--command", choices=("worker", "dev"), default="worker")
    parser.add_argument("--temporal-address")
    args = parser.parse_args()
    report = _measure(args.command, args.temporal_address)
    found = forbidden(report)
    for chain in found.values():
        print(f"forbidden: {chain}")
    tops = {m.split(".")[0] for m in report["modules"]}
    print(
        json.dumps(
            {
                "command": args.command,
                "modules": len(report["modules"]),
                "top_level_packages": len(tops),
                "rss_mb_at_start": report["rss_mb"],
                "forbidden": found,
            }
        )
    )


if __name__ == "__main__":
    main()
