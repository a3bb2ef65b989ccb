"""Mounting the MCP door leaves the process's root logger alone: the ``mcp`` server would
otherwise install a rich handler there, and a workflow's log record in a process that also runs
a worker would import ``rich`` inside the workflow sandbox and fail the workflow task (seen in
``bench.reach`` before the guard)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agentledger.api.mcp_door import mcp_server


def test_the_mcp_door_installs_no_root_log_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # as in a process nobody configured logging for
    ctx: Any = object()  # tools are registered, never called here
    mcp_server(ctx, [], resource_url="http://127.0.0.1:8700/mcp", issuer_url="http://idp.test")
    assert root.handlers == []
