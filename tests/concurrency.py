"""Start calls at the same moment from threads, for race tests (no timing is asserted)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def at_once(calls: list[Callable[[], T]]) -> list[T | BaseException]:
    """Run every call in its own thread, released together by a barrier; each result, or the
    exception it raised, in order."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[T | BaseException] = [RuntimeError("not run")] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            outcomes[i] = calls[i]()
        except BaseException as exc:  # returned, per call: the caller reports them
            outcomes[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes
