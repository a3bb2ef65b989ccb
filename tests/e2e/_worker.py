"""A CLI worker process for end-to-end tests: seeded, polling, stopped afterwards."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from tests.e2e.test_cli import CLI, cli


@contextmanager
def cli_worker(env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """``agentledger seed``, then ``agentledger worker`` in the background until the block ends."""
    seeded = cli(env, "seed")
    assert seeded.returncode == 0, seeded.stderr
    process = subprocess.Popen(
        [*CLI, "worker"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert "worker polling" in first, first + process.stdout.read()
    retrieval = process.stdout.readline()
    assert retrieval.startswith("· policy retrieval: "), retrieval
    housekeeping = process.stdout.readline()
    assert housekeeping.startswith("· housekeeping schedule agentledger-housekeeping-"), (
        housekeeping
    )
    if "AGENTLEDGER_TRUSTED_KEYS" not in env:  # a worker that pins only its own key says so
        warned = process.stdout.readline()
        assert warned.startswith("warning: AGENTLEDGER_TRUSTED_KEYS is not set"), warned
    if "AGENTLEDGER_PAYLOAD_KEYS" not in env:  # and one sealing with its own key ring
        warned = process.stdout.readline()
        assert warned.startswith("warning: AGENTLEDGER_PAYLOAD_KEYS is not set"), warned
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        finally:
            process.kill()
