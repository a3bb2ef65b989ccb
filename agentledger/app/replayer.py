"""The one replayer this project checks histories with: ``check-replay``, the replay tests and
every test that replays a live run's history."""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter
from temporalio.worker import Interceptor, Replayer

from agentledger.app.runtime import workflow_runner
from agentledger.workflows import AgentRunWorkflow


def replayer(
    workflows: Sequence[type] = (AgentRunWorkflow,),
    converter: DataConverter = pydantic_data_converter,
    interceptors: Sequence[Interceptor] = (),
    passthrough: Sequence[str] = (),
) -> Replayer:
    """A replayer running ``workflows`` in the workers' sandbox, decoding as ``converter`` does
    (a live run's client's: payload codec and all), with ``passthrough`` modules added to the
    sandbox's.

    Temporal's deadlock detector is off (``debug_mode``, which also lets ``breakpoint()`` through
    and activates on the caller's thread): a replay asks which commands the code issues, not how
    fast a host activates it, and on a loaded host a garbage collection inside one activation
    once passed the detector's fixed 2 s and failed a recorded history that replays cleanly. A
    worker keeps the detector: there a slow task is retried, here it would be a false verdict.
    """
    return Replayer(
        workflows=list(workflows),
        data_converter=converter,
        workflow_runner=workflow_runner(*passthrough),
        interceptors=list(interceptors),
        debug_mode=True,
    )
