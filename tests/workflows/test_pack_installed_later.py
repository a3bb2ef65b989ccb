"""A pack installed while a worker runs: the worker serves the packs installed when it started
(their tables, models and tools were set up then), so a run of the new one fails at once, in a
line that says to restart the worker, instead of "unknown pack"."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.app import registry
from agentledger.app.registry import PackInstalledAfterStart, UnknownPack, get_pack
from agentledger.domain.events import RunFailed
from agentledger.workflows import AgentRunWorkflow, RunInput
from tests._temporal import Harness
from tests.e2e.test_pack_registry import GOOD, write_dist, write_module

RESTART = "installed after this process started"


@pytest.fixture
def later(tmp_path: Path) -> Iterator[Path]:
    """A site directory on the path, empty when the registry read the installed packs; the
    test installs into it afterwards, as ``pip install`` beside a running worker would."""
    sys.path.insert(0, str(tmp_path))
    registry.rediscover()
    assert "acme_late" not in registry.pack_names()
    yield tmp_path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("acme_late_pkg", None)
    registry.rediscover()


def install(site: Path) -> None:
    write_module(site, "acme_late_pkg", GOOD.format(name="acme_late"))
    write_dist(site, "acme-late", "0.1.0", {"acme_late": "acme_late_pkg:PACK"})


def test_a_pack_installed_after_the_registry_was_read_is_named_with_what_to_do(
    later: Path,
) -> None:
    install(later)
    with pytest.raises(PackInstalledAfterStart) as raised:
        get_pack("acme_late")
    assert isinstance(raised.value, UnknownPack)  # activities fail the run non-retryably
    message = str(raised.value)
    assert RESTART in message and "restart" in message and "acme-late 0.1.0" in message
    with pytest.raises(UnknownPack) as unknown:
        get_pack("never_installed")
    assert not isinstance(unknown.value, PackInstalledAfterStart)


@pytest.mark.temporal
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_running_worker_fails_a_run_of_a_pack_installed_since_saying_to_restart_it(
    harness: Harness, later: Path
) -> None:
    install(later)
    order = get_pack("support").make_work_order("hello", harness.principal("usr_73"))
    late_order = order.model_copy(update={"pack": "acme_late"})
    # Started by a process that sees the new pack (the CLI, started after the install); this
    # process's registry is the worker's, read before it.
    await harness.client.start_workflow(
        AgentRunWorkflow.run,
        RunInput(
            run_id="run_late",
            work_order=late_order,
            requester_assertion=harness.issuer.start_assertion(late_order, run_id="run_late"),
        ),
        id="run_late",
        task_queue=harness.settings.task_queue,
    )
    await asyncio.wait_for(harness.client.get_workflow_handle("run_late").result(), 60)
    events = harness.runtime.ledger.read("run_late")
    failed = next(e for e in events if isinstance(e, RunFailed))
    assert failed.reason_code == "preparation_failed"
    assert RESTART in failed.message and "restart" in failed.message
