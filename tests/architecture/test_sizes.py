"""The size limits ARCHITECTURE.md sets for product code hold (``python -m bench.structure``
prints the figures): no module over 300 lines, no function over 40. A change that grows past
either fails here, naming the module or function, instead of being found by hand later."""

from __future__ import annotations

from pathlib import Path

from bench.structure import survey

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 40


def test_no_product_module_is_over_300_lines_and_no_function_over_40() -> None:
    functions, sizes, _ = survey(ROOT)
    assert functions and sizes  # the survey found the product code
    assert [f"{where} ({n} lines)" for n, where in sizes if n > MAX_MODULE_LINES] == []
    assert [f"{where} ({n} lines)" for n, where in functions if n > MAX_FUNCTION_LINES] == []
