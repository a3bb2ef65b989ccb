"""MCP in the pure core: pins in the manifest, contracts derived from them, elicitation answers
checked against the server's schema, and writes whose outcome is unknowable."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentledger.domain.elicitation import (
    ElicitationRequest,
    content_problem,
    declined_elicitation,
    elicitation_approval_digest,
)
from agentledger.domain.errors import ManifestError
from agentledger.domain.manifest import resolve_manifest
from agentledger.domain.mcp import (
    McpConnectionContract,
    McpServerPin,
    McpServerSnapshot,
    McpToolInfo,
    StdioTransport,
    pin_contracts,
)
from agentledger.packs.support import PACK
from agentledger.packs.support.profile import SUPPORT_PROFILE

INPUTS = {
    "attempt_id": "att-1",
    "work_order_digest": "sha256:" + "ab" * 32,
    "memory_snapshot": "memory:empty",
    "policy_version": "returns-2026-08",
}
CONNECTION = McpConnectionContract(
    name="tickets",
    transport=StdioTransport(command="tickets-server"),
    protocol_version="2025-11-25",
    server_name="acme-tickets",
    server_version="1.4.0",
    allowed_tools=("lookup", "close"),
    steps=("choose_next_action",),
)
LOOKUP = McpToolInfo(
    name="lookup",
    input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    annotations={"readOnlyHint": True},
)
CLOSE = McpToolInfo(name="close", input_schema={"type": "object"})
SNAPSHOT = McpServerSnapshot(
    contract_name="tickets",
    protocol_version="2025-11-25",
    server_name="acme-tickets",
    server_version="1.4.0",
    capabilities={"tools": {}},
    tools=(CLOSE, LOOKUP),
    tools_digest="sha256:" + "cd" * 32,
)
PIN = McpServerPin(connection=CONNECTION, snapshot=SNAPSHOT)
ASK = ElicitationRequest(
    mode="form",
    message="Who should the ticket go to?",
    requested_schema={
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    },
)


def test_a_manifest_without_mcp_servers_keeps_its_hash() -> None:
    manifest = resolve_manifest(SUPPORT_PROFILE, **INPUTS, contracts=PACK.contracts)

    assert "mcp_servers" not in manifest.canonical()
    assert manifest.tool_contracts({}) == {}


def test_pinned_tools_are_granted_and_their_contracts_come_from_the_pin_alone() -> None:
    profile = SUPPORT_PROFILE.model_copy(update={"mcp_servers": (CONNECTION,)})
    manifest = resolve_manifest(profile, **INPUTS, contracts=PACK.contracts, mcp_pins=(PIN,))

    lookup, close = manifest.grant("tickets__lookup"), manifest.grant("tickets__close")
    assert lookup is not None and close is not None
    assert (lookup.scope, close.scope, close.risk) == ("read", "write", "consequential")
    contracts = manifest.terms
    assert contracts == {n: c.terms() for n, c in manifest.tool_contracts(PACK.contracts).items()}
    assert contracts["tickets__close"].on_partial_completion == "in_doubt"
    assert contracts["tickets__lookup"].schema_hash == lookup.schema_hash
    assert manifest.pins("tickets__close") and not manifest.pins("get_order")


def test_a_manifest_hash_moves_with_the_servers_identity_and_tool_list() -> None:
    profile = SUPPORT_PROFILE.model_copy(update={"mcp_servers": (CONNECTION,)})
    base = resolve_manifest(profile, **INPUTS, contracts=PACK.contracts, mcp_pins=(PIN,)).hash
    for change in ({"server_version": "1.4.1"}, {"tools_digest": "sha256:" + "ef" * 32}):
        moved = PIN.model_copy(update={"snapshot": SNAPSHOT.model_copy(update=change)})
        assert (
            resolve_manifest(profile, **INPUTS, contracts=PACK.contracts, mcp_pins=(moved,)).hash
            != base
        )


def test_every_server_in_the_profile_must_arrive_pinned() -> None:
    profile = SUPPORT_PROFILE.model_copy(update={"mcp_servers": (CONNECTION,)})

    with pytest.raises(ManifestError, match="do not match"):
        resolve_manifest(profile, **INPUTS, contracts=PACK.contracts)


def test_a_pin_must_list_every_allowed_tool() -> None:
    with pytest.raises(ValidationError, match="does not list allowed tools: close"):
        McpServerPin(
            connection=CONNECTION, snapshot=SNAPSHOT.model_copy(update={"tools": (LOOKUP,)})
        )


def test_arguments_are_checked_against_the_listed_schema() -> None:
    lookup = pin_contracts(PIN)["tickets__lookup"]

    assert lookup.input_model.model_validate({"id": "T-1"}).model_dump() == {"id": "T-1"}
    with pytest.raises(ValidationError, match="'id' is a required property"):
        lookup.input_model.model_validate({})


def test_a_declined_request_is_found_in_a_result_and_bound_into_its_approval() -> None:
    view = {
        "elicitations": [{**ASK.model_dump(mode="json"), "digest": ASK.digest, "action": "decline"}]
    }

    assert declined_elicitation(view) == ASK
    assert declined_elicitation({"elicitations": [{"action": "accept"}]}) is None
    one = elicitation_approval_digest("op_1", "sha256:a", "sha256:m", ASK)
    other = ASK.model_copy(update={"message": "Close all tickets?"})
    assert one != elicitation_approval_digest("op_1", "sha256:a", "sha256:m", other)
    assert one != elicitation_approval_digest("op_2", "sha256:a", "sha256:m", ASK)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"name": "Ada"}, None),
        (None, "needs content"),
        ({}, "'name' is a required property"),
        ({"name": 7}, "is not of type 'string'"),
    ],
)
def test_an_answer_must_fit_the_requested_schema(content: object, problem: str | None) -> None:
    found = content_problem(ASK, content)  # type: ignore[arg-type]

    assert found is None if problem is None else problem in (found or "")


def test_a_pin_round_trips_as_plain_data() -> None:
    assert McpServerPin.model_validate_json(PIN.model_dump_json()) == PIN
