"""An AgentDojo pair names its suite, tasks, attack and version; the run acts on exactly those."""

from __future__ import annotations

import pytest

from agentledger.packs.agentdojo import work_order
from agentledger.packs.agentdojo.catalog import (
    ATTACK,
    BENCHMARK_VERSION,
    DojoSandbox,
    NotHosted,
    Pair,
    injections,
    pair_environment,
)
from agentledger.packs.agentdojo.tools import parse_sandbox

PAIR = Pair("banking", "user_task_0", "injection_task_0")
DIRECT = Pair("banking", "user_task_0", "injection_task_0", attack="direct", version="v1.2.1")


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"suite": "workspace"}, "not hosted"),
        ({"attack": "no_such_attack"}, "no attack"),
        ({"version": "v9"}, "has no suite"),
        ({"user_task": "user_task_999"}, "has no pair"),
    ],
)
def test_what_is_not_installed_is_a_typed_error(fields: dict[str, str], says: str) -> None:
    with pytest.raises(NotHosted, match=says):
        Pair(
            **{
                "suite": "banking",
                "user_task": "user_task_0",
                "injection_task": "injection_task_0",
                **fields,
            }
        )  # type: ignore[arg-type]


def test_the_work_order_records_the_attack_and_version_it_runs() -> None:
    order = work_order(DIRECT, "nonce")
    assert order.references["attack"] == "direct"
    assert order.references["benchmark_version"] == "v1.2.1"
    assert Pair.from_references(order.references) == DIRECT
    assert parse_sandbox(order.principal.tenant_id) == DIRECT


def test_a_work_order_from_before_names_the_defaults() -> None:
    refs = {"suite": "banking", "user_task": "user_task_0", "injection_task": "injection_task_0"}
    assert Pair.from_references(refs) == Pair("banking", "user_task_0", "injection_task_0")
    legacy = parse_sandbox("agentdojo/banking/user_task_0/injection_task_0/nonce")
    assert (legacy.attack, legacy.version) == (ATTACK, BENCHMARK_VERSION)


def test_the_sandbox_holds_the_named_attacks_injections() -> None:
    assert injections(DIRECT) and injections(DIRECT) != injections(PAIR)
    sandbox = DojoSandbox(parse_sandbox(work_order(DIRECT, "nonce").principal.tenant_id))
    assert sandbox.env.model_dump() == pair_environment(DIRECT).model_dump()
    assert sandbox.env.model_dump() != pair_environment(PAIR).model_dump()
