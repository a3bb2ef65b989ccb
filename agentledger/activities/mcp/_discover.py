"""Discovery: connect, hold the server to its contract, list its tools and freeze them."""

from __future__ import annotations

from collections.abc import Iterable

import mcp_types as types
from mcp.client.session import ClientSession

from agentledger.activities.mcp._session import open_session, run_sync
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.mcp import McpConnectionContract, McpServerSnapshot, McpToolInfo


def tool_info(tool: types.Tool) -> McpToolInfo:
    hints = tool.annotations
    annotations = hints.model_dump(mode="json", by_alias=True, exclude_none=True) if hints else {}
    return McpToolInfo(
        name=tool.name,
        title=tool.title,
        description=tool.description or "",
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=annotations,
    )


def tools_digest(tools: Iterable[McpToolInfo]) -> str:
    """Over the whole list, sorted by name: any change to the server's surface shows, even to a
    tool no step is granted (the server is a supply-chain dependency, not a menu)."""
    ordered = sorted(tools, key=lambda tool: tool.name)
    return sha256_hex([tool.model_dump(mode="json") for tool in ordered])


async def list_all_tools(session: ClientSession) -> tuple[McpToolInfo, ...]:
    tools: list[McpToolInfo] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(tool_info(tool) for tool in page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tuple(sorted(tools, key=lambda tool: tool.name))


async def discover_async(contract: McpConnectionContract) -> McpServerSnapshot:
    async with open_session(contract) as (session, init):
        tools = await list_all_tools(session)
    return McpServerSnapshot(
        contract_name=contract.name,
        protocol_version=init.protocol_version,
        server_name=init.server_info.name,
        server_version=init.server_info.version,
        capabilities=init.capabilities.model_dump(mode="json", by_alias=True, exclude_none=True),
        tools=tools,
        tools_digest=tools_digest(tools),
    )


def discover(contract: McpConnectionContract) -> McpServerSnapshot:
    return run_sync(lambda: discover_async(contract))
