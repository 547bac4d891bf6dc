// A host built on the official TypeScript SDK client (legacy era), for gateway tests:
// connects to a URL, lists tools, makes the calls given as JSON, prints what it saw.
// It answers elicitation (name "Ada") and sampling ("sampled by ts") like a user and a
// model would.
//
// usage: node host.mjs URL '[["tool", {args}], ...]'
// With MCP_BEARER_TOKEN set, every request carries `Authorization: Bearer <it>`.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, callsJson] = process.argv.slice(2);
const client = new Client(
  { name: "ts-host", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: "accept",
  content: { name: "Ada" },
}));
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: "assistant",
  content: { type: "text", text: "sampled by ts" },
  model: "ts-host-model",
}));
const token = process.env.MCP_BEARER_TOKEN;
const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit }));
const tools = await client.listTools();
const results = {};
for (const [name, args] of JSON.parse(callsJson)) {
  results[name] = await client.callTool({ name, arguments: args });
}
await client.close();
console.log(JSON.stringify({ tools: tools.tools, results }));
