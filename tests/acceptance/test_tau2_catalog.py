"""The τ² catalog hosts exactly the domains and splits it names; anything else is a typed error."""

from __future__ import annotations

import pytest

from agentledger.packs.tau2.catalog import (
    UnknownDomain,
    UnknownSplit,
    domain,
    new_environment,
    splits,
    tasks,
)
from agentledger.packs.tau2.tools import sandbox_domain


@pytest.mark.parametrize("name", ["telecom", "mock", "Retail", ""])
def test_a_domain_that_is_not_hosted_is_refused_not_read_as_airline(name: str) -> None:
    for read in (domain, new_environment, tasks):
        with pytest.raises(UnknownDomain, match="not hosted"):
            read(name)  # type: ignore[operator]
    with pytest.raises(UnknownDomain):
        sandbox_domain(f"tau2/{name}/1/nonce")


def test_a_split_the_task_set_does_not_define_is_refused() -> None:
    assert {"train", "test", "base"} <= set(splits("retail"))
    with pytest.raises(UnknownSplit, match="'dev'"):
        tasks("retail", "dev")


def test_the_splits_are_the_task_sets_own() -> None:
    train, test = set(tasks("airline", "train")), set(tasks("airline", "test"))
    assert train and test and not train & test
    assert train | test <= set(tasks("airline", "base"))
