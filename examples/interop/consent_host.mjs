// A host built on the official TypeScript SDK client v2 (`@modelcontextprotocol/client`),
// for the tests of upstreams that act as each user by the user's own consent: it calls
// `desk__whoami` through the gateway as the user whose bearer token it holds, and when the
// gateway asks the user to open a URL it says so on stdout and waits for the test (the
// user's browser) to say it was opened, then carries on the way its protocol version does:
//
// - 2025-11-25 with URL mode: the call fails with -32042 (UrlElicitationRequiredError);
//   it waits for `notifications/elicitation/complete` and calls again.
// - 2026-07-28 with URL mode: the call answers `input_required` with an
//   `elicitation/create` in URL mode; the SDK's handler opens it and accepts, and the SDK
//   retries the call itself.
// - without URL mode: the call answers an error result naming the link; it opens it and
//   calls again.
//
// Then it makes N more calls at once and prints what they said.
//
// usage: node consent_host.mjs URL VERSION url|none N   (bearer token in MCP_BEARER_TOKEN)
//   VERSION: 2025-06-18 | 2025-11-25 | 2026-07-28
//
// One JSON object a line on stdout:
//   {"negotiated": V}                        connected at protocol version V
//   {"open": URL, "elicitationId": ID?}      the user should open URL; then waits for a
//                                            line {"opened": true} on stdin
//   {"notified": ID}                         `notifications/elicitation/complete` came
//   {"done": true, "first": T, "texts": [...], "errors": 0, "failures": [...]}
//   {"error": "..."}                         anything went wrong (exit status 1)
import { createInterface } from "node:readline";
import { Client, StreamableHTTPClientTransport, UrlElicitationRequiredError } from "@modelcontextprotocol/client";

const [url, version, urlArg, nArg] = process.argv.slice(2);
const urlMode = urlArg === "url";
const n = Number(nArg ?? "50");
const token = process.env.MCP_BEARER_TOKEN;
const TOOL = "desk__whoami";
const WAIT_MS = 120_000;

const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const fail = (e) => {
  say({ error: e instanceof Error ? `${e.name}: ${e.message} ${JSON.stringify(e.data ?? null)}` : String(e) });
  process.exit(1);
};
const within = (promise, what, ms = WAIT_MS) =>
  Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms).unref()),
  ]);

// stdin: one JSON object a line, taken in order.
const lines = [];
const waiting = [];
createInterface({ input: process.stdin }).on("line", (line) => {
  const w = waiting.shift();
  if (w) w(line);
  else lines.push(line);
});
const nextLine = () => (lines.length ? Promise.resolve(lines.shift()) : new Promise((r) => waiting.push(r)));

// The user opens `link` (the test's browser) and says so.
const open = async (link, elicitationId) => {
  say(elicitationId === undefined ? { open: link } : { open: link, elicitationId });
  const line = await within(nextLine(), "the user to open the URL");
  if (!JSON.parse(line).opened) throw new Error(`not opened: ${line}`);
};

// Completion notices by elicitation id, each awaited at most once.
const completed = new Map();
const completion = (id) => {
  if (!completed.has(id)) {
    let resolve;
    const p = new Promise((r) => (resolve = r));
    completed.set(id, { p, resolve });
  }
  return completed.get(id);
};

const capabilities = urlMode ? { elicitation: { url: {} } } : {};
const options = { capabilities };
if (version === "2026-07-28") options.versionNegotiation = { mode: { pin: "2026-07-28" } };
else options.supportedProtocolVersions = [version];
const client = new Client({ name: "ts-consent-host", version: "1.0.0" }, options);
client.onerror = (e) => process.stderr.write(`client error: ${e}\n`);
if (urlMode) {
  let elicited = 0;
  client.setRequestHandler("elicitation/create", async (request) => {
    const p = request.params;
    if (p.mode !== "url") throw new Error(`not URL mode: ${JSON.stringify(p)}`);
    elicited += 1;
    if (elicited > 1) throw new Error(`asked again: ${JSON.stringify(p)}`);
    await open(p.url, p.elicitationId);
    return { action: "accept" };
  });
  client.setNotificationHandler("notifications/elicitation/complete", (n) => {
    const id = n.params.elicitationId;
    say({ notified: id });
    completion(id).resolve();
  });
}

const text = (r) =>
  (r.content ?? [])
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join(" ");
const whoami = () => client.callTool({ name: TOOL, arguments: {} });

try {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await within(client.connect(transport), "connecting");
  say({ negotiated: client.getNegotiatedProtocolVersion() });

  // The first call: consent is asked for, in this host's form.
  let first;
  if (version === "2026-07-28" && urlMode) {
    const r = await within(whoami(), "the first call (with its input rounds)");
    if (r.isError) throw new Error(`first call: ${JSON.stringify(r)}`);
    first = text(r);
  } else if (urlMode) {
    let err;
    try {
      const r = await within(whoami(), "the first call");
      throw new Error(`no -32042 but: ${JSON.stringify(r)}`);
    } catch (e) {
      err = e;
    }
    if (!(err instanceof UrlElicitationRequiredError)) throw err;
    const el = err.elicitations[0];
    if (el?.mode !== "url" || !el.elicitationId) throw new Error(`elicitation: ${JSON.stringify(err.data)}`);
    const done = completion(el.elicitationId);
    await open(el.url, el.elicitationId);
    await within(done.p, "notifications/elicitation/complete");
    const r = await within(whoami(), "the call after consent");
    if (r.isError) throw new Error(`after consent: ${JSON.stringify(r)}`);
    first = text(r);
  } else {
    const told = await within(whoami(), "the first call");
    const said = text(told);
    if (!told.isError) throw new Error(`not an error result: ${JSON.stringify(told)}`);
    const link = said.split(/\s+/).find((w) => w.includes("/connect/start?t="));
    if (!link) throw new Error(`no link in: ${said}`);
    if (!said.includes("call again")) throw new Error(`not told to call again: ${said}`);
    await open(link);
    const r = await within(whoami(), "the call after consent");
    if (r.isError) throw new Error(`after consent: ${JSON.stringify(r)}`);
    first = text(r);
  }

  // N calls at once.
  const failures = [];
  const settled = await within(
    Promise.allSettled(Array.from({ length: n }, () => whoami())),
    "the calls",
  );
  const texts = [];
  for (const s of settled) {
    if (s.status === "rejected") failures.push(String(s.reason));
    else if (s.value.isError) failures.push(`isError: ${JSON.stringify(s.value)}`);
    else texts.push(text(s.value));
  }
  await client.close();
  say({ done: true, first, texts, errors: failures.length, failures });
  process.exit(0);
} catch (e) {
  fail(e);
}
