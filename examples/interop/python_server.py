"""A small MCP server written with the official Python SDK (`mcp`), for interop tests.

Its tools return what a proxy must not lose: an `isError` result, `structuredContent`
with an output schema, icons on the tool definition, and `_meta` on a result. Serves both
eras (the SDK answers `initialize` and 2026-07-28 per-request `_meta`) on stdio, or with
`--http PORT` on Streamable HTTP at http://127.0.0.1:PORT/mcp.
"""

import sys

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp_types import Icon
from pydantic import BaseModel

app = MCPServer("py-interop")


class Weather(BaseModel):
    temperature: float
    conditions: str


@app.tool(
    description="Weather for a city, as structured content.",
    icons=[Icon(src="https://example.com/weather.png", mime_type="image/png", sizes=["48x48"])],
)
def weather(city: str) -> Weather:
    return Weather(temperature=21.5, conditions=f"Sunny in {city}")


@app.tool(description="Always fails as a tool error.")
def boom() -> str:
    raise ValueError("deliberate failure")


@app.tool(description="Returns a result carrying _meta.")
def traced() -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="traced")],
        _meta={"com.example/trace": {"id": 7}},
    )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run("stdio")
