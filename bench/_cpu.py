"""Process CPU time per step, and a CPU hog: the measuring tools of ``bench.engine``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Sample:
    """Wall-clock and process CPU milliseconds per step of one run."""

    def __init__(self, steps: int) -> None:
        self._steps = steps
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def per_step(self) -> tuple[float, float]:
        return (
            (time.perf_counter() - self._wall) * 1000 / self._steps,
            (time.process_time() - self._cpu) * 1000 / self._steps,
        )


@contextmanager
def cpu_hog(enabled: bool) -> Iterator[None]:
    """One busy-looping process for the duration (a neighbour saturating a core), pinned to
    the last CPU this process may use, so that it holds one core whole and the same one
    throughout while the worker and the Temporal server share the others."""
    if not enabled:
        yield
        return
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        os.sched_setaffinity(hog.pid, {cpus[-1]})
    try:
        yield
    finally:
        hog.kill()
        hog.wait()
