"""The child of ``bench.worker_imports``: ``agentledger <command>`` up to its workers' start.

    python -m bench._worker_imports_child OUT.json worker|dev

A finder first on ``sys.meta_path`` notes which module first asked for each import. The command
then runs as ``python -m agentledger.cli <command>`` would, all the way to the workers it built
starting to poll: there ``Worker.run`` is one that writes ``sys.modules``, those importers and
VmRSS to ``OUT.json`` and returns, and the command ends as it does when its workers stop.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, ModuleType

IMPORTERS: dict[str, str] = {}


class _WhoImports(importlib.abc.MetaPathFinder):
    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name not in IMPORTERS:
            IMPORTERS[name] = _caller(sys._getframe(1))
        return None  # the real finders find it


def _caller(frame: FrameType | None) -> str:
    """The first frame outside the import machinery: the module whose import statement ran."""
    while frame is not None and frame.f_code.co_filename.startswith(("<frozen", "<")):
        frame = frame.f_back
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("importlib"):
        frame = frame.f_back
    return str(frame.f_globals.get("__name__", "?")) if frame is not None else "?"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def main(out: Path, command: str) -> None:
    sys.meta_path.insert(0, _WhoImports())
    from temporalio.worker import Worker

    async def polling(worker: Worker) -> None:
        report = {"modules": sorted(sys.modules), "importers": IMPORTERS, "rss_mb": _rss_mb()}
        out.write_text(json.dumps(report))

    Worker.run = polling  # type: ignore[method-assign]
    sys.argv = ["agentledger", command]
    runpy.run_module("agentledger.cli", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
