"""A model endpoint that is down is named within seconds, not after a generic time-out."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentledger.activities.models import ProviderConfig
from agentledger.app import runs as client_ops
from agentledger.app.devserver import DevServer
from agentledger.app.errors import RunStuck
from agentledger.app.registry import get_pack
from agentledger.domain.workorder import ModelOverride
from bench.providers.runs import configured_harness
from tests.workflows.test_refund_run import REQUEST

pytestmark = pytest.mark.temporal


async def test_waiting_on_a_run_whose_model_is_unreachable_names_the_failure(
    temporal_server: DevServer, tmp_path: Path
) -> None:
    down = {"down": ProviderConfig(base_url="http://127.0.0.1:9/v1", models=("m",))}
    async with configured_harness(
        temporal_server, f"sqlite:///{tmp_path / 'l.db'}", tmp_path, down
    ) as harness:
        order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
        order = order.model_copy(update={"model_override": ModelOverride(provider="down")})
        handle = await client_ops.start_run(
            harness.client, harness.settings.task_queue, order, issuer=harness.issuer
        )
        # Named while the run retries, long before wait_for's own 120 s TimeoutError.
        with pytest.raises(RunStuck, match="model_step has failed") as stuck:
            await client_ops.wait_for(harness.client, handle.id, pending_approval=True)
        assert "127.0.0.1:9" in str(stuck.value) or "onnect" in str(stuck.value)
        await handle.terminate("test over")
