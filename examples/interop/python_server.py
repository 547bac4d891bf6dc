"""A small MCP server written with the official Python SDK (`mcp`), for interop tests.

Its tools return what a proxy must not lose: an `isError` result, `structuredContent`
with an output schema, and icons on the tool definition. Runs on stdio and serves both
eras (the SDK answers `initialize` and 2026-07-28 per-request `_meta`).
"""

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


if __name__ == "__main__":
    app.run("stdio")
