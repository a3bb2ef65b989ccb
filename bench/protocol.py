"""Check the approval and idempotency protocol model with spin, over every interleaving.

    python -m bench.protocol [--broken]

The model is ``agentledger/domain/approval_protocol.pml`` (two runs refunding one order, an
approver and a forger, expiry, worker crashes before and after commit). ``--broken`` checks the
variant without the refund's row lock, where spin must find the cross-run double refund. Needs
Debian's ``spin`` and a C compiler; prints spin's figures and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "agentledger" / "domain" / "approval_protocol.pml"


@dataclass(frozen=True)
class SpinResult:
    states: int
    errors: int
    depth: int
    seconds: float
    report: str


def check(*defines: str, model: Path = MODEL) -> SpinResult:
    """Generate the verifier, compile it and search the whole state space for the ``ltl``."""
    spin, cc = shutil.which("spin"), shutil.which("cc") or shutil.which("gcc")
    if spin is None or cc is None:
        raise FileNotFoundError("spin and a C compiler are needed (apt-get install spin gcc)")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="agentledger-spin-") as work:
        shutil.copy(model, Path(work) / model.name)
        flags = [f"-D{name}" for name in defines]
        _run([spin, *flags, "-a", model.name], work)
        _run([cc, "-O2", "-w", "-o", "pan", "pan.c"], work)
        report = _run(["./pan", "-a", "-m200000"], work, check=False)
    return SpinResult(
        states=_figure(r"(\d+) states, stored", report),
        errors=_figure(r"errors: (\d+)", report),
        depth=_figure(r"depth reached (\d+)", report),
        seconds=round(time.perf_counter() - started, 2),
        report=report,
    )


def _run(argv: list[str], cwd: str, *, check: bool = True) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr or done.stdout}")
    return done.stdout


def _figure(pattern: str, report: str) -> int:
    found = re.search(pattern, report)
    if found is None:
        raise RuntimeError(f"spin's report has no {pattern!r}:\n{report}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broken", action="store_true", help="the refund without its row lock")
    args = parser.parse_args()
    result = check("NO_ROW_LOCK") if args.broken else check()
    print(f"model: {MODEL.name}{' (NO_ROW_LOCK)' if args.broken else ''}")
    print(f"states stored: {result.states:,}  depth: {result.depth}  errors: {result.errors}")
    print(f"wall: {result.seconds:.2f} s")
    figures = {k: v for k, v in asdict(result).items() if k != "report"}
    print(json.dumps({"spin_states": figures["states"], "spin_errors": figures["errors"],
                      "depth": figures["depth"], "seconds": figures["seconds"],
                      "broken_variant": args.broken}))  # fmt: skip


if __name__ == "__main__":
    main()
