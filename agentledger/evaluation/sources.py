"""Where a suite's work orders come from and how their outcomes are read.

A ``SuiteSource`` holds a validated ``Suite`` and the pack-specific parts an eval needs around
it: the work order of a case, a fresh copy of the system of record before each run, and the
hash of its end state after. ``load_suite`` resolves a shipped suite by name (``support``,
``tau2-retail``, ``tau2-airline``, ``agentdojo-banking``, ``agentdojo-slack``) or a suite file
(JSON) for the support pack; anything it cannot run is refused before a run starts.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy.engine import Engine

from agentledger.activities.ledger import Ledger
from agentledger.activities.ports import Pack
from agentledger.app.errors import EvalInputInvalid, SuiteNotFound, in_words
from agentledger.app.registry import UnknownPack, get_pack
from agentledger.domain import events as ev
from agentledger.domain.evaluation import EvalCase, Suite
from agentledger.domain.evaluation.regression import checked_origin
from agentledger.domain.workorder import WorkOrder

__all__ = ["SHIPPED", "SuiteSource", "SupportSource", "load_suite", "one_line"]


def one_line(exc: Exception) -> str:
    """An error as one line: a pydantic error as each field's location and message."""
    if isinstance(exc, ValidationError):
        fields = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'document'}: {e['msg']}" for e in exc.errors()
        )
        return f"{exc.error_count()} invalid field(s): {fields}"
    return " ".join(in_words(exc).split())


class SuiteSource:
    """A suite and the pack-specific hooks around its runs (the support pack's by default)."""

    def __init__(self, suite: Suite) -> None:
        self.suite = suite

    def check_users(self, ledger: Ledger) -> None:
        """Refuse, before any run, a case whose requester is not in the seeded directory."""
        for case in self.suite.cases:
            if case.user and ledger.get_principal(case.user) is None:
                raise EvalInputInvalid(
                    f"suite {self.suite.name}: case {case.case_id} asks as {case.user!r}, who "
                    f"is not in pack {self.suite.pack}'s directory",
                    "unknown_user",
                )

    def work_order(self, case: EvalCase, pack: Pack, ledger: Ledger, nonce: str) -> WorkOrder:
        principal = ledger.get_principal(case.user)
        assert principal is not None, "check_users runs first"
        return pack.make_work_order(case.request, principal)

    def fresh_copy(self, engine: Engine, case: EvalCase) -> None:
        raise NotImplementedError

    def end_state(self, engine: Engine, order: WorkOrder) -> str:
        raise NotImplementedError

    def extra_problems(
        self, engine: Engine, order: WorkOrder, events: list[ev.RunEvent]
    ) -> list[str]:
        """Checks of the suite's own beyond the case's ``Expectation`` (a benchmark's judge)."""
        return []

    def approver(self, order: WorkOrder) -> str:
        return self.suite.approver


class SupportSource(SuiteSource):
    """The support pack: one shared system of record, copied fresh before every run."""

    def fresh_copy(self, engine: Engine, case: EvalCase) -> None:
        from agentledger.packs.support.evaluation import FIXTURES, fresh_copy

        fresh_copy(engine)
        if case.fixture is not None:
            FIXTURES[case.fixture](engine)

    def end_state(self, engine: Engine, order: WorkOrder) -> str:
        from agentledger.packs.support.evaluation import end_state_hash

        return end_state_hash(engine)


def _support_fixtures() -> frozenset[str]:
    from agentledger.packs.support.evaluation import FIXTURES

    return frozenset(FIXTURES)


SHIPPED = ("support", "tau2-retail", "tau2-airline", "agentdojo-banking", "agentdojo-slack")
_SOURCES_WITH_FILES = {"support": (SupportSource, _support_fixtures)}


def load_suite(spec: str, *, limit: int = 0) -> SuiteSource:
    """The suite ``spec`` names (shipped) or holds (a path to a JSON file), checked against its
    pack: every tool it names is one of the pack's, every fixture one the pack defines.
    ``limit`` keeps the first N cases (0: all)."""
    if spec == "support":
        from agentledger.packs.support.evaluation import SUITE_FILE

        source = _from_file(SUITE_FILE)
    elif spec in SHIPPED:
        from agentledger.evaluation.hosted import hosted_suite

        source = hosted_suite(spec, limit=limit)
    elif Path(spec).is_file():
        source = _from_file(Path(spec))
    else:
        raise SuiteNotFound(
            f"no eval suite {spec!r}: name a shipped one ({', '.join(SHIPPED)}) or a suite file"
        )
    if limit > 0:
        source.suite = source.suite.model_copy(update={"cases": source.suite.cases[:limit]})
    return source


def _from_file(path: Path) -> SuiteSource:
    try:
        suite = Suite.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:  # a ValidationError is a ValueError
        raise EvalInputInvalid(f"suite file {path}: {one_line(exc)}", "suite_unreadable") from None
    pack = checked_pack(suite)
    hooks = _SOURCES_WITH_FILES.get(pack.name)
    if hooks is None:
        raise EvalInputInvalid(
            f"suite {suite.name}: pack {pack.name} has no eval hooks (a fresh copy of its system "
            f"of record, its end state); suite files can name: {', '.join(_SOURCES_WITH_FILES)}",
            "pack_not_evaluable",
        )
    cls, fixtures = hooks
    for case in suite.cases:
        if case.fixture is not None and case.fixture not in fixtures():
            raise EvalInputInvalid(
                f"suite {suite.name}: case {case.case_id} names fixture {case.fixture!r}; pack "
                f"{pack.name} has {', '.join(sorted(fixtures()))}",
                "unknown_fixture",
            )
        problem = checked_origin(case.fork, pack.name) if case.fork is not None else None
        if problem is not None:
            raise EvalInputInvalid(
                f"suite {suite.name}: case {case.case_id} cannot fork its recorded run: {problem}",
                "fork_origin_invalid",
            )
    return cls(suite)


def checked_pack(suite: Suite) -> Pack:
    """The suite's pack, with every tool its expectations name (``EvalInputInvalid``)."""
    try:
        pack = get_pack(suite.pack)
    except UnknownPack as exc:
        raise EvalInputInvalid(f"suite {suite.name}: {exc}", "unknown_pack") from None
    ids = [c.case_id for c in suite.cases]
    if not ids or len(set(ids)) != len(ids):
        raise EvalInputInvalid(
            f"suite {suite.name}: case ids must be present and unique", "suite_unreadable"
        )
    for case in suite.cases:
        e = case.expect
        named = {p.tool for p in (*e.receipts, *e.no_receipts)} | {d.tool for d in e.denials}
        unknown = sorted(named - set(pack.contracts))
        if unknown:
            raise EvalInputInvalid(
                f"suite {suite.name}: case {case.case_id} names tools {unknown} that pack "
                f"{pack.name} does not have ({', '.join(sorted(pack.contracts))})",
                "unknown_tool",
            )
    return pack
