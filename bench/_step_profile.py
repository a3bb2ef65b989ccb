"""cProfile of ``bench.engine``'s agentledger loop, over every thread of the worker process.

    python -m bench._step_profile [--runs 3] [--top 30] [--out FILE]

Workflow tasks and activities run on executor threads, which ``cProfile`` alone does not see:
each thread started after the hook is set gets a profiler of its own and the stats are merged.
The timer is the thread's CPU time, so waits (the server, the disk) cost nothing and the figures
are CPU seconds, steadier than wall-clock on a shared machine. Profiling inflates Python-heavy
code, so read it for where the CPU goes, not for absolute times. CPU spent in the Temporal
core's own (Rust) threads does not appear.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
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
        profile = cProfile.Profile(time.thread_time)
        self.profiles.append(profile)
        profile.enable()  # replaces this hook in this thread

    def __enter__(self) -> AllThreads:
        threading.setprofile(self._hook)
        main = cProfile.Profile(time.thread_time)
        self.profiles.append(main)
        main.enable()
        return self

    def __exit__(self, *exc: object) -> None:
        threading.setprofile(None)  # type: ignore[arg-type]
        for profile in self.profiles:
            profile.disable()

    def stats(self) -> pstats.Stats:
        stats = pstats.Stats(self.profiles[0], stream=sys.stdout)
        for profile in self.profiles[1:]:
            profile.create_stats()
            if profile.stats:  # type: ignore[attr-defined]
                stats.add(profile)
        return stats


async def _run(runs: int, profiler: AllThreads) -> None:
    from agentledger.registry import register_pack

    register_pack("bench", "bench._noop_pack:PACK")
    async with engine.embedded_stack() as stack:
        await engine._agentledger(stack, 1)  # warm caches outside the profile
        with profiler:
            await engine._agentledger(stack, runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--out", default=None, help="also dump the merged stats here")
    args = parser.parse_args()
    profiler = AllThreads()
    asyncio.run(_run(args.runs, profiler))
    stats = profiler.stats()
    if args.out:
        stats.dump_stats(args.out)
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
