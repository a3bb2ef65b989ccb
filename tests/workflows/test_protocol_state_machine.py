"""The run protocol explored by a state machine (``bench.protocol_machine``) against the real
server and a real worker process: few, short examples here, within CI's budget;
``HYPOTHESIS_PROFILE=protocol-long`` (or ``python -m bench.faults``) explores more."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.protocol_machine import explore

pytestmark = pytest.mark.temporal
LONG = os.environ.get("HYPOTHESIS_PROFILE") == "protocol-long"


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_no_interleaving_breaks_the_protocol(database_url: str, tmp_path: Path) -> None:
    explored = await explore(
        tmp_path, database_url, examples=25 if LONG else 3, steps=20 if LONG else 6
    )
    print(explored.line())
    assert explored.examples >= 3 and explored.runs, explored
