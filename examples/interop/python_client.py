"""Drives an MCP server over stdio with the official Python SDK client (`mcp`), for
interop tests. Prints one JSON object with what it saw; the Rust test asserts on it.

usage: python_client.py MODE COMMAND [ARGS...]   (MODE: legacy | auto | 2026-07-28)
       python_client.py MODE URL                  (Streamable HTTP)
"""

import asyncio
import json
import sys

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada"})


def texts(result):
    return [b.text for b in result.content if getattr(b, "type", None) == "text"]


async def main() -> None:
    mode, command, *args = sys.argv[1:]
    server = command if command.startswith("http") else StdioServerParameters(command=command, args=args)
    seen = {}
    progress = []

    async def on_progress(progress_value, total, message):
        progress.append(progress_value)

    async with Client(server, mode=mode, elicitation_callback=elicit) as client:
        seen["protocolVersion"] = client.protocol_version
        tools = await client.list_tools()
        seen["tools"] = [t.name for t in tools.tools]
        seen["titles"] = [t.title for t in tools.tools]
        echo = await client.call_tool("echo", {"text": "hi from python"})
        seen["echo"] = texts(echo)
        weather = await client.call_tool("weather", {"city": "Oslo"})
        seen["weather"] = {"structured": weather.structured_content, "isError": weather.is_error}
        fail = await client.call_tool("fail", {})
        seen["fail"] = {"isError": fail.is_error, "text": texts(fail)}
        count = await client.call_tool("count", {"to": 3}, progress_callback=on_progress)
        seen["count"] = texts(count)
        seen["progress"] = progress
        greet = await client.call_tool("greet", {})
        seen["greet"] = texts(greet)
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main())
