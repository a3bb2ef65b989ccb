"""Whatever an MCP server answers a tool call with becomes a typed tool output: succeeded,
failed as the server's tool error, or failed as too large; always canonical JSON, never larger
than the connection allows, never an exception. Drawn by hypothesis: text parts of any unicode
(confusables, NUL, huge), images, nested structured content with big integers, error flags."""

from __future__ import annotations

import base64

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import types

from agentledger.activities.mcp import McpToolImplementation
from agentledger.activities.mcp._discover import tools_digest
from agentledger.domain.canonical import canonical_json
from agentledger.domain.mcp import McpServerSnapshot, McpToolInfo
from bench import _mcp_pack as mcp
from tests.mcp.test_tool_calls import builder

ECHO = McpToolInfo(
    name="echo",
    input_schema={"type": "object", "properties": {"message": {"type": "string"}}},
)
CONNECTION = mcp.connection().model_copy(
    update={"max_result_bytes": 4096, "allowed_tools": ("echo",)}
)
SNAPSHOT = McpServerSnapshot(
    contract_name=CONNECTION.name,
    protocol_version=CONNECTION.protocol_version,
    server_name=CONNECTION.server_name,
    server_version=CONNECTION.server_version,
    capabilities={"tools": {}},
    tools=(ECHO,),
    tools_digest=tools_digest([ECHO]),
)
ECHO_TOOL: McpToolImplementation = builder(CONNECTION, SNAPSHOT)("echo")

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=50),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
TEXT = st.text(max_size=200) | st.sampled_from(["Ｒｅｆｕｎｄ", "\u0000", "a\u202eb", "x" * 5000])
PARTS = st.lists(
    st.one_of(
        TEXT.map(lambda t: types.TextContent(type="text", text=t)),
        st.binary(max_size=64).map(
            lambda b: types.ImageContent(
                type="image", data=base64.b64encode(b).decode(), mimeType="image/png"
            )
        ),
    ),
    max_size=5,
)
RESULTS = st.builds(
    types.CallToolResult,
    content=PARTS,
    structuredContent=st.none() | st.dictionaries(st.text(max_size=10), JSON, max_size=4),
    isError=st.booleans(),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result=RESULTS)
def test_any_server_answer_is_a_typed_bounded_tool_output(result: types.CallToolResult) -> None:
    out = ECHO_TOOL._output(result, [])

    assert out.status in ("succeeded", "failed")
    encoded = canonical_json(out.output)  # digestible: what the receipt and ledger need
    if out.status == "failed":
        assert out.error_code in ("mcp_tool_error", "result_too_large"), out.error_code
    if out.error_code == "result_too_large":
        assert "over the limit" in (out.error_message or "")
    else:
        assert len(encoded) <= CONNECTION.max_result_bytes
        assert out.output["other_parts"] == [
            p.type for p in result.content if not isinstance(p, types.TextContent)
        ]
        assert (out.status == "failed") == bool(result.is_error)
