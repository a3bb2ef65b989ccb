"""A hosted suite whose benchmark is not installed names the extra to install, not the module
that happened to be missing first."""

from __future__ import annotations

import sys

import pytest

from agentledger.app.errors import EvalInputInvalid
from agentledger.evaluation import load_suite


@pytest.fixture
def without(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Forget the benchmarks' imported modules so that the next import finds them again."""
    for name in list(sys.modules):
        if name.split(".")[0] in ("tau2", "agentdojo", "loguru") or name.startswith(
            ("agentledger.packs.tau2", "agentledger.packs.agentdojo")
        ):
            monkeypatch.delitem(sys.modules, name)
    return monkeypatch


@pytest.mark.parametrize(
    ("suite", "missing", "extra"),
    [("tau2-retail", "loguru", "tau2"), ("agentdojo-banking", "agentdojo", "agentdojo")],
)
def test_a_suite_whose_benchmark_is_missing_names_its_extra(
    without: pytest.MonkeyPatch, suite: str, missing: str, extra: str
) -> None:
    without.setitem(sys.modules, missing, None)  # an import of it fails as if not installed
    with pytest.raises(EvalInputInvalid) as refused:
        load_suite(suite, limit=1)
    said = str(refused.value)
    assert f"pip install 'agentledger[{extra}]'" in said
    assert f"(missing: {missing})" in said and "No module named" not in said
