"""Two workers appending to one sandbox's replay journal at once apply the calls one after the
other: the (sandbox, ordinal) key makes an append conditional, and the loser computes again on
the journal as it now stands. Each ``Journal`` stands for one worker process (its own cache and
locks); the benchmark environment is a one-account bank whose check is the invariant."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pydantic import JsonValue
from sqlalchemy.engine import Engine

from agentledger.activities.ledger import Ledger
from agentledger.packs.hosted.journal import CallResult, Journal
from tests.concurrency import at_once

TRIALS = 30


class Bank:
    def __init__(self) -> None:
        self.balance = 100

    def call(self, tool: str, arguments: dict[str, JsonValue]) -> CallResult:
        amount = arguments["amount"]
        assert tool == "withdraw" and isinstance(amount, int)
        if amount > self.balance:
            return CallResult(status="failed", output=None, error="insufficient funds")
        self.balance -= amount
        return CallResult(status="succeeded", output=self.balance)


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    with Ledger.open(database_url) as ledger:
        Journal.install(ledger.engine)
        yield ledger.engine


def _race(engine: Engine, sandbox: str) -> list[CallResult | BaseException]:
    workers = [Journal(lambda _s: Bank()), Journal(lambda _s: Bank())]
    return at_once(
        [
            lambda w=w: w.write(
                engine, sandbox, f"idem_{uuid.uuid4().hex}", "withdraw", {"amount": 100}
            )
            for w in workers
        ]
    )


def test_two_workers_withdrawing_everything_at_once_succeed_once(engine: Engine) -> None:
    problems = []
    for trial in range(TRIALS):
        sandbox = f"tau2/retail/race/{trial}"
        outcomes = _race(engine, sandbox)
        shown = sorted(o.status if isinstance(o, CallResult) else repr(o)[:60] for o in outcomes)
        balance = Journal(lambda _s: Bank()).rebuild(engine, sandbox)
        assert isinstance(balance, Bank)
        if shown != ["failed", "succeeded"] or balance.balance != 0:
            problems.append(f"trial {trial}: {shown}, balance {balance.balance}")
    assert problems == []
