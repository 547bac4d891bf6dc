"""A host built on the official Python SDK client (`mcp`), for gateway tests: connects to a
URL in the given mode, lists tools, makes the calls given as JSON, prints what it saw. It
answers elicitation (name "Ada") and sampling ("sampled by python") like a user and a
model would.

usage: host.py MODE URL '[["tool", {args}], ...]'   (MODE: legacy | 2026-07-28)
With MCP_BEARER_TOKEN set, every request carries `Authorization: Bearer <it>`.
"""

import asyncio
import json
import sys

import os

import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def sample(context, params):
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="sampled by python"),
        model="python-host-model",
    )


async def main() -> None:
    mode, url, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    server = url
    token = os.environ.get("MCP_BEARER_TOKEN")
    if token:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        server = streamable_http_client(url, http_client=http)
    async with Client(server, mode=mode, elicitation_callback=elicit, sampling_callback=sample) as client:
        tools = await client.list_tools()
        results = {}
        for name, args in calls:
            r = await client.call_tool(name, args)
            results[name] = r.model_dump(mode="json", by_alias=True, exclude_none=True)
        print(json.dumps({"protocolVersion": client.protocol_version,
                          "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools.tools],
                          "results": results}))


if __name__ == "__main__":
    asyncio.run(main())
