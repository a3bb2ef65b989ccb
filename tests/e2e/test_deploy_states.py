"""What `agentledger deploy show` says of each build, from the deployment's routing and the
server's summary of the build: a build that was never current is not "draining"."""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.deployment.v1 import (
    RoutingConfig,
    WorkerDeploymentInfo,
    WorkerDeploymentVersion,
)
from temporalio.api.enums.v1 import VersionDrainageStatus, WorkerDeploymentVersionStatus

from agentledger.cli.deploy import build_state

Summary = WorkerDeploymentInfo.WorkerDeploymentVersionSummary
ROUTING = RoutingConfig(
    current_deployment_version=WorkerDeploymentVersion(deployment_name="d", build_id="v1"),
    ramping_deployment_version=WorkerDeploymentVersion(deployment_name="d", build_id="v3"),
    ramping_version_percentage=10,
)
ONCE = Timestamp(seconds=1_700_000_000)


def summary(build: str, **fields: object) -> Summary:
    version = WorkerDeploymentVersion(deployment_name="d", build_id=build)
    return Summary(deployment_version=version, **fields)  # type: ignore[arg-type]


def test_the_current_and_the_ramping_build_say_so() -> None:
    assert build_state(summary("v1"), ROUTING) == "current"
    assert build_state(summary("v3"), ROUTING) == "ramping 10%"


def test_a_build_whose_workers_poll_but_that_was_never_current_is_not_draining() -> None:
    for fields in (
        {"status": WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE},
        {"status": WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CREATED},
        {},  # a server that reports no status: it never activated the build either
    ):
        state = build_state(summary("v2", **fields), ROUTING)
        assert "draining" not in state and state.startswith("never current"), fields


def test_a_build_that_was_current_drains_and_then_is_drained() -> None:
    draining = WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING
    drained = VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED
    assert build_state(summary("v0", status=draining, last_current_time=ONCE), ROUTING) == (
        "draining"
    )
    assert build_state(
        summary("v0", first_activation_time=ONCE, drainage_status=drained), ROUTING
    ) == ("drained: its workers can stop")
