"""The test run always ends: a hang becomes a failure with every thread's stack on stderr, never a
CI time-out with nothing to read.

- **Per test.** pytest-timeout stops a test past its limit by raising in the main thread. What
  it cannot stop (a teardown still stuck after it fired, a main thread blocked in native code)
  meets ``faulthandler``'s watchdog, a C thread that needs nothing from the interpreter: past
  ``HUNG_AFTER`` seconds for one test (setup, call and teardown) it prints every thread's stack
  and ends the process with status 1.
- **After the session.** Once pytest has reported, a thread or a native runtime a test left
  behind (a worker never shut down, an executor thread still blocked) must not keep the process
  from exiting: ``LINGER`` seconds later the threads still alive are named with their stacks and
  the process ends with the session's own status; should even that not run (a hang in the
  interpreter's finalization), the C watchdog ends it with status 1 after ``LINGER_HARD``.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import threading
import traceback
from collections.abc import Iterator

import pytest
from pytest import StashKey

HUNG_AFTER = 900.0  # seconds per test: beyond pytest-timeout's 600, so only what it cannot stop
LINGER, LINGER_HARD = 30.0, 120.0  # seconds after pytest has reported


_STDERR, _STATUS = StashKey[int](), StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    """Where the watchdogs write: the terminal's stderr (fd 2 is a capture file during a test)."""
    config.stash[_STDERR] = os.dup(sys.stderr.fileno())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    faulthandler.dump_traceback_later(HUNG_AFTER, exit=True, file=item.config.stash[_STDERR])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    status = config.stash.get(_STATUS, 0)
    faulthandler.dump_traceback_later(LINGER_HARD, exit=True, file=config.stash[_STDERR])
    timer = threading.Timer(LINGER, _end, args=(status,))
    timer.daemon = True
    timer.start()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_STATUS] = exitstatus


def _end(status: int) -> None:
    """The process is still here ``LINGER`` seconds after the run: say what holds it, then go."""
    frames = sys._current_frames()
    print(f"\nthe test process did not exit {LINGER:.0f} s after the run; still alive:",
          file=sys.stderr)  # fmt: skip
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.ident not in frames:
            continue
        print(f"--- thread {thread.name} (daemon={thread.daemon})", file=sys.stderr)
        traceback.print_stack(frames[thread.ident], file=sys.stderr)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(status)
