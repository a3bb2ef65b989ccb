"""Fixtures for provider tests: the local chat-completions server and the llama.cpp peer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.providers.chat_server import ChatServer
from bench.providers.llama_peer import LlamaPeer


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "real_model: runs a real small model (llama.cpp + SmolLM2); CI runs it"
    )


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.close()


@pytest.fixture(scope="session")
def llama_peer() -> Iterator[LlamaPeer]:
    with LlamaPeer() as peer:
        yield peer
