"""Cold start of the command line, beside the interpreter's own start.

Each command runs as a new process N times; wall clock and CPU (user + system of the child) are
reported as medians, and as ratios to ``python -c pass`` measured in the same run.

    python -m bench.cli_start [--times 5]

Targets (issue 15): ``--help`` under 0.3 s, ``show --list`` under 1.5 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from agentledger.activities.ledger import Ledger


def _once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(argv: list[str], env: dict[str, str], times: int) -> dict[str, float]:
    runs = [_once(argv, env) for _ in range(times)]
    return {
        "wall_s": round(statistics.median(w for w, _ in runs), 3),
        "cpu_s": round(statistics.median(c for _, c in runs), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--times", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        Ledger.open(f"sqlite:///{data_dir}/ledger.db").engine.dispose()  # an empty ledger
        env = {**os.environ, "AGENTLEDGER_DATA_DIR": data_dir}
        cli = [sys.executable, "-m", "agentledger.cli"]
        rows = {
            "python -c pass": measure([sys.executable, "-c", "pass"], env, args.times),
            "agentledger --help": measure([*cli, "--help"], env, args.times),
            "agentledger show --list": measure([*cli, "show", "--list"], env, args.times),
        }
    base = rows["python -c pass"]
    print(f"{'command':<26} {'wall s':>7} {'cpu s':>7} {'×wall':>7} {'×cpu':>7}")
    for name, r in rows.items():
        print(
            f"{name:<26} {r['wall_s']:>7} {r['cpu_s']:>7} "
            f"{r['wall_s'] / base['wall_s']:>7.1f} {r['cpu_s'] / max(base['cpu_s'], 1e-3):>7.1f}"
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
