"""docs/tutorial.md cannot rot: its Python blocks are executed in order as one module, the pack
they declare runs on the real server (question, reply, approval, exactly one extension), and
every ``agentledger`` command line it shows parses with the CLI's own parser."""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from sqlalchemy import select

from agentledger.app import runs as client_ops
from agentledger.app.registry import register_pack, unregister_pack
from agentledger.cli.main import _parser
from agentledger.domain import events as ev
from agentledger.domain.claims import CONFIRMED_HEADING
from agentledger.domain.state import WorkingState
from tests._temporal import Harness

TUTORIAL = Path(__file__).parents[2] / "docs" / "tutorial.md"
MODULE = "giftcards_tutorial"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", TUTORIAL.read_text(), re.S | re.M)


@pytest.fixture
def tutorial(tmp_path: Path) -> Iterator[ModuleType]:
    """The tutorial's Python, as one module, registered as pack ``giftcards``."""
    source = tmp_path / f"{MODULE}.py"
    source.write_text("\n\n".join(blocks("python")))
    spec = importlib.util.spec_from_file_location(MODULE, source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE] = module
    spec.loader.exec_module(module)
    register_pack("giftcards", f"{MODULE}:PACK")
    yield module
    unregister_pack("giftcards")
    del sys.modules[MODULE]


def test_the_tutorials_pack_tests_pass_with_the_sdks_testing_helpers(
    tutorial: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Section 6's test module, importing the pack as ``giftcards``: every test in it passes
    (and there are tests in it)."""
    (source,) = blocks(r"python tests/test_giftcards\.py")
    monkeypatch.setitem(sys.modules, "giftcards", tutorial)
    namespace: dict[str, object] = {}
    exec(compile(source, "tests/test_giftcards.py", "exec"), namespace)
    tests = [test for name, test in namespace.items() if name.startswith("test_")]
    assert len(tests) == 2
    for test in tests:
        assert callable(test)
        test()


def test_the_tutorial_has_code_to_run() -> None:
    assert len(blocks("python")) >= 4
    assert "[project.entry-points." in blocks("toml")[0]


async def extended_gc_1001(tutorial: ModuleType, harness: Harness) -> tuple[str, WorkingState]:
    """The tutorial's flow: a question, the customer's reply, an approved extension of gc_1001;
    the run's id and its state once it answers."""
    pack, customer, clerk = tutorial.PACK, tutorial.CUSTOMER, tutorial.CLERK
    order = pack.make_work_order("My gift card stopped working", customer)
    handle = await client_ops.start_run(
        harness.client, harness.settings.task_queue, order, issuer=harness.issuer
    )
    asked = await client_ops.wait_for(harness.client, handle.id, pending_approval=True)
    assert asked.awaiting is not None and asked.conversation[-1].text == tutorial.QUESTION

    await client_ops.reply(
        harness.client, handle.id, customer.user_id, "It is gc_1001", issuer=harness.issuer
    )
    pending = await client_ops.wait_for(harness.client, handle.id, pending_approval=True)
    ((approval_id, approval),) = pending.pending_approvals.items()
    assert approval.proposal.arguments == {"card_id": "gc_1001", "months": 6}
    await client_ops.decide(
        harness.client, handle.id, approval_id, clerk.user_id, issuer=harness.issuer, approve=True
    )

    done = await client_ops.wait_for(harness.client, handle.id, pending_approval=False)
    return handle.id, done


@pytest.mark.temporal
async def test_the_tutorial_pack_runs(tutorial: ModuleType, harness: Harness) -> None:
    run_id, done = await extended_gc_1001(tutorial, harness)
    handle = harness.client.get_workflow_handle(run_id)
    said = done.conversation[-1].text.splitlines()
    assert said[:3] == ["Card gc_1001 is extended.", "", CONFIRMED_HEADING]
    assert said[3].startswith("- extended card gc_1001 by 6 months | ")
    with harness.runtime.ledger.engine.connect() as db:
        extensions = db.execute(select(tutorial.EXTENSIONS)).all()
        status = db.execute(
            select(tutorial.CARDS.c.status).where(tutorial.CARDS.c.card_id == "gc_1001")
        ).scalar_one()
    assert len(extensions) == 1 and status == "active"
    await handle.terminate("tutorial checked")
    kinds = [e.kind for e in harness.runtime.ledger.read(handle.id)]
    assert kinds.count("user_replied") == 1 and kinds.count("approval_granted") == 1
    assert ev.ToolReceiptRecorded.model_fields["kind"].default in kinds


@pytest.mark.temporal
async def test_a_follow_up_about_another_card_never_reuses_the_first_cards_receipt(
    tutorial: ModuleType, harness: Harness
) -> None:
    run_id, _ = await extended_gc_1001(tutorial, harness)
    customer = tutorial.CUSTOMER
    await client_ops.reply(
        harness.client, run_id, customer.user_id, "and what about gc_1002?", issuer=harness.issuer
    )
    after = await client_ops.wait_for(harness.client, run_id, pending_approval=False)
    assert after.conversation[-1].text == "Card gc_1002 is active."
    read = [a.resource_id for a in after.completed_actions if a.tool == "get_card"]
    assert read == ["gc_1001", "gc_1002"]
    await harness.client.get_workflow_handle(run_id).terminate("follow-up checked")


def test_every_command_line_in_the_tutorial_parses() -> None:
    lines = [
        line
        for block in blocks("console")
        for line in block.splitlines()
        if "agentledger " in line and not line.startswith("pip ")
    ]
    assert len(lines) >= 10
    parser = _parser()
    for line in lines:
        words = shlex.split(line)
        at = words.index("agentledger")
        try:
            parser.parse_args(words[at + 1 :])
        except SystemExit:
            pytest.fail(f"the tutorial shows a command the CLI does not take: {line}")
