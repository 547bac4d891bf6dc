// A host built on the official TypeScript SDK client (legacy era), for the tests of gateway
// replicas behind a load balancer: through URL it makes 300 calls, answers 30 elicitations,
// lists 3 pages of tools, and waits for 10 updates of a resource it subscribed to, then
// prints what it saw as JSON: counts, every error, and whether its session id ever changed.
//
// usage: node cluster_host.mjs URL
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url] = process.argv.slice(2);
const TICKING = "test://ticking-resource";
const client = new Client({ name: "ts-cluster-host", version: "1.0.0" }, { capabilities: { elicitation: {} } });
let elicited = 0;
client.setRequestHandler(ElicitRequestSchema, async () => {
  elicited += 1;
  return { action: "accept", content: { username: "Ada", email: "ada@example.com" } };
});
let updates = 0;
let updated = () => {};
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  if (n.params.uri === TICKING) {
    updates += 1;
    updated();
  }
});
const transport = new StreamableHTTPClientTransport(new URL(url));
const errors = [];
const attempt = async (what, f) => {
  try {
    const r = await f();
    if (r && r.isError) errors.push(`${what}: isError ${JSON.stringify(r.content)}`);
    return r;
  } catch (e) {
    errors.push(`${what}: ${e}`);
    return undefined;
  }
};
await client.connect(transport);
const session = transport.sessionId;
const sessions = new Set([session]);
let calls = 0;
for (let i = 0; i < 300; i++) {
  if (await attempt("call", () => client.callTool({ name: "test_simple_text", arguments: {} }))) calls += 1;
  sessions.add(transport.sessionId);
}
let answered = 0;
for (let i = 0; i < 30; i++) {
  const r = await attempt("elicitation", () =>
    client.callTool({ name: "test_elicitation", arguments: { message: `Your name? (${i})` } }),
  );
  if (r && JSON.stringify(r.content).includes("Ada")) answered += 1;
  sessions.add(transport.sessionId);
}
const pages = [];
let cursor;
for (let i = 0; i < 3; i++) {
  const r = await attempt("list", () => client.listTools(cursor ? { cursor } : {}));
  if (!r) break;
  pages.push(r.tools.map((t) => t.name));
  cursor = r.nextCursor;
  if (!cursor) break;
}
await attempt("subscribe", () => client.subscribeResource({ uri: TICKING }));
await new Promise((done) => {
  const timer = setTimeout(done, 10000);
  updated = () => {
    if (updates >= 10) {
      clearTimeout(timer);
      done();
    }
  };
  updated();
});
sessions.add(transport.sessionId);
await client.close();
console.log(JSON.stringify({ protocolVersion: transport.protocolVersion, calls, elicited, answered, pages, updates, errors, sessions: sessions.size }));
