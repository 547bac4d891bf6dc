// Drives an MCP server over stdio with the official TypeScript SDK client
// (@modelcontextprotocol/sdk), for interop tests. Prints one JSON object with what it saw.
//
// usage: node ts_client.mjs COMMAND [ARGS...]
//        node ts_client.mjs URL            (Streamable HTTP)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [command, ...args] = process.argv.slice(2);
const transport = command.startsWith("http")
  ? new StreamableHTTPClientTransport(new URL(command))
  : new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client(
  { name: "ts-interop", version: "1.0.0" },
  { capabilities: { elicitation: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: "accept",
  content: { name: "Ada" },
}));

const texts = (r) => r.content.filter((b) => b.type === "text").map((b) => b.text);
const seen = {};
await client.connect(transport);
const tools = await client.listTools();
seen.tools = tools.tools.map((t) => t.name);
seen.titles = tools.tools.map((t) => t.title ?? null);
seen.echo = texts(await client.callTool({ name: "echo", arguments: { text: "hi from ts" } }));
const weather = await client.callTool({ name: "weather", arguments: { city: "Oslo" } });
seen.weather = { structured: weather.structuredContent ?? null, isError: weather.isError ?? false };
const fail = await client.callTool({ name: "fail", arguments: {} });
seen.fail = { isError: fail.isError ?? false, text: texts(fail) };
const progress = [];
const count = await client.callTool({ name: "count", arguments: { to: 3 } }, undefined, {
  onprogress: (p) => progress.push(p.progress),
});
seen.count = texts(count);
seen.progress = progress;
seen.greet = texts(await client.callTool({ name: "greet", arguments: {} }));
seen.pixel = (await client.callTool({ name: "pixel", arguments: {} })).content.map((b) => b.type);
await client.close();
console.log(JSON.stringify(seen));
