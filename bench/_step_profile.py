"""cProfile of ``bench.engine``'s agentledger loop, over every thread of the worker process.

    python -m bench._step_profile [--runs 3] [--top 30] [--out FILE] [--floor [--sync]]

``--floor`` profiles the bare floor workflow instead, to diff against (``pstats`` on both dumps);
with ``--sync``, the floor whose activities run in a thread pool, as agentledger's do.

Workflow tasks and activities run on executor threads, which ``cProfile`` alone does not see:
each thread started after the hook is set gets a profiler of its own and the stats are merged.
The timer is the thread's CPU time, so waits (the server, the disk) cost nothing and the figures
are CPU seconds, steadier than wall-clock on a shared machine. Each profiler reads its own
thread's clock by id, whichever thread asks: calls still open when the profile stops (an
executor thread parked in ``SimpleQueue.get``) close at that thread's CPU time, not the main
thread's, which charged them seconds they never used. Profiling inflates Python-heavy code
(pydantic's ``JsonValue`` serialisation calls back into Python per value and shows many times
its real cost), so read it for where the CPU goes, not for absolute times: ``bench.engine``'s
CPU per step is the figure. CPU spent in the Temporal core's own (Rust) threads does not appear.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import pstats
import sys
import threading
import time
from typing import Any

from bench import engine


class AllThreads:
    """One ``cProfile.Profile`` per thread, started by a ``threading.setprofile`` hook."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []

    def _hook(self, frame: Any, event: str, arg: Any) -> None:
        profile = _this_threads_profile()
        self.profiles.append(profile)
        profile.enable()  # replaces this hook in this thread

    def __enter__(self) -> AllThreads:
        threading.setprofile(self._hook)
        main = _this_threads_profile()
        self.profiles.append(main)
        main.enable()
        return self

    def __exit__(self, *exc: object) -> None:
        """Snapshot every profile while its thread (and so its clock) still exists."""
        threading.setprofile(None)  # type: ignore[arg-type]
        for profile in self.profiles:
            profile.create_stats()  # disables it (here) and closes its open calls

    def stats(self) -> pstats.Stats:
        stats = pstats.Stats(self.profiles[0], stream=sys.stdout)
        for profile in self.profiles[1:]:
            if profile.stats:  # type: ignore[attr-defined]
                stats.add(profile)
        return stats


def _this_threads_profile() -> cProfile.Profile:
    """A profiler timed by the calling thread's CPU clock, whoever reads it."""
    clock = time.pthread_getcpuclockid(threading.get_ident())
    return cProfile.Profile(functools.partial(time.clock_gettime, clock))


async def _run(runs: int, profiler: AllThreads, floor: bool, sync: bool = False) -> None:
    from agentledger.app.registry import register_pack

    register_pack("bench", "bench._noop_pack:PACK")
    engine.cached_bytecode()  # as bench.engine measures
    async with engine.embedded_stack() as stack:

        async def loop(n: int) -> object:
            return await (
                engine._floor(stack.client, n, sync) if floor else engine._agentledger(stack, n)
            )

        await loop(1)  # warm caches outside the profile
        with profiler:
            await loop(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--out", default=None, help="also dump the merged stats here")
    parser.add_argument("--floor", action="store_true", help="profile the floor workflow instead")
    parser.add_argument("--sync", action="store_true", help="the floor with sync activities")
    args = parser.parse_args()
    profiler = AllThreads()
    asyncio.run(_run(args.runs, profiler, args.floor, args.sync))
    stats = profiler.stats()
    if args.out:
        stats.dump_stats(args.out)
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
