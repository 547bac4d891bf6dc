#!/usr/bin/env python3
"""Writes the seeds of every target (fuzz/corpus/<target>/seed-*) from the wire fixtures
(mcp-types/tests/fixtures), the 2026-07-28 examples (../shared/spec, when present) and a
few inputs written here. Input layouts are documented in mcp-proxy/src/fuzzing.rs; the
method table below must stay in the order of `fuzzing::METHODS`.

Run from the repository root: python3 fuzz/make_corpus.py
"""
import hashlib, json, os, pathlib, sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = pathlib.Path(os.environ.get("FUZZ_CORPUS_OUT", ROOT / "fuzz" / "corpus"))
METHODS = """initialize notifications/initialized ping server/discover subscriptions/listen
notifications/subscriptions/acknowledged tools/list tools/call notifications/tools/list_changed
prompts/list prompts/get notifications/prompts/list_changed resources/list
resources/templates/list resources/read resources/subscribe resources/unsubscribe
notifications/resources/list_changed notifications/resources/updated completion/complete
logging/setLevel notifications/message sampling/createMessage elicitation/create
notifications/elicitation/complete roots/list notifications/roots/list_changed
notifications/progress notifications/cancelled tasks/get tasks/result tasks/list tasks/cancel
tasks/update notifications/tasks/status""".split()
assert len(METHODS) == 35
RESULTS = {
    "InitializeResult": "initialize", "EmptyResult": "ping", "DiscoverResult": "server/discover",
    "ListToolsResult": "tools/list", "CallToolResult": "tools/call",
    "InputRequiredResult": "tools/call", "ListPromptsResult": "prompts/list",
    "GetPromptResult": "prompts/get", "ListResourcesResult": "resources/list",
    "ListResourceTemplatesResult": "resources/templates/list",
    "ReadResourceResult": "resources/read", "CompleteResult": "completion/complete",
    "CreateMessageResult": "sampling/createMessage", "ElicitResult": "elicitation/create",
    "ListRootsResult": "roots/list", "SubscriptionsListenResult": "subscriptions/listen",
    "GetTaskResult": "tasks/get", "CancelTaskResult": "tasks/cancel",
    "ListTasksResult": "tasks/list", "GetTaskPayloadResult": "tasks/result",
    "CreateTaskResult": "tools/call",
}
REVS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


def compact(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()


def sel(method):
    return bytes([METHODS.index(method)]) if method in METHODS else bytes([35])


def sources():
    """(revision index, type name, parsed JSON) of every fixture and example."""
    out = []
    for rev_dir in sorted((ROOT / "mcp-types/tests/fixtures").iterdir()):
        for f in sorted(rev_dir.glob("*/*.json")):
            out.append((REVS.index(rev_dir.name), f.parent.name, json.loads(f.read_text())))
    spec = ROOT.parent / "shared/spec/2026-07-28/examples"
    if spec.is_dir():
        for f in sorted(spec.glob("*/*.json")):
            out.append((4, f.parent.name, json.loads(f.read_text())))
    return out


def write(target, items):
    """Replaces the target's `seed-*` files; the `found-*` ones (inputs the fuzzer found,
    kept by hand from a run) stay."""
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    for old in d.glob("seed-*"):
        old.unlink()
    seen = set()
    for data in items:
        h = hashlib.sha1(data).hexdigest()
        if h not in seen:
            seen.add(h)
            (d / f"seed-{h}").write_bytes(data)
    print(f"{target}: {len(seen)} seeds, {sum(len(x) for x in set(items))} bytes")


def one_per_type(items):
    """The first item of each (revision, type): a few dozen, every shape once."""
    seen, out = set(), []
    for r, t, v in items:
        if (r, t) not in seen:
            seen.add((r, t))
            out.append((r, t, v))
    return out


def main():
    src = sources()
    messages = one_per_type([(r, t, v) for r, t, v in src if isinstance(v, dict) and "jsonrpc" in v])
    results = one_per_type([(r, t.removesuffix("Response"), v) for r, t, v in src
                            if t.removesuffix("Response") in RESULTS])

    # frame: lines as they arrive, pretty and compact, a batch, and some broken ones.
    frame = [compact(v) for _, _, v in messages[:60]]
    frame += [json.dumps(v, indent=1).encode() for _, _, v in messages[:6]]
    frame.append(b"[" + b",".join(compact(v) for _, _, v in messages[:3]) + b"]")
    frame += [b"", b"[]", b"{", b"null", b'{"jsonrpc":"2.0"}', b'{"jsonrpc":"1.0","id":1,"method":"x"}',
              b'{"jsonrpc":"2.0","id":1e400,"method":"x"}', b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}',
              b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x","data":[1]}}',
              b'{"jsonrpc":"2.0","method":"a\\u0000b","params":[],"x":{"y":1}}',
              b'{"jsonrpc":"2.0","id":"\\ud800","method":"m"}', b"[" * 200 + b"]" * 200]
    write("frame", frame)

    # typed: method byte + params or result.
    # Decoding does not depend on the revision: each type once.
    typed = []
    once = {t: (r, t, v) for r, t, v in reversed(messages + results)}
    messages_once = [x for x in once.values() if "jsonrpc" in x[2] and x in messages]
    results_once = [x for x in once.values() if x in results]
    for _, t, v in messages_once:
        if "method" in v and "params" in v:
            typed.append(sel(v["method"]) + compact(v["params"]))
    for _, t, v in results_once:
        body = v.get("result", v) if "jsonrpc" in v else v
        typed.append(sel(RESULTS[t]) + compact(body))
    typed += [sel("tools/call") + b'{"resultType":"input_required","inputRequests":{}}',
              sel("tools/call") + b'{"resultType":"task","taskId":"t","status":"working"}',
              sel("tasks/cancel") + b'{"resultType":"complete"}', b"\x23{}", b"\xff[]"]
    write("typed", typed)

    # translate: pair byte (from + 5*to), kind byte, method byte, JSON.
    tr = []
    # Each one to a revision chosen by its position, so every pair comes up.
    for i, (r, t, v) in enumerate(messages):
        to = (r + 1 + i) % 5
        if "method" in v and "params" in v:
            kind = 0 if i % 2 else 3
            tr.append(bytes([r + 5 * to, kind]) + sel(v["method"]) + compact(v["params"] if kind == 0 else v))
    for i, (r, t, v) in enumerate(results):
        to = (r + 2 + i) % 5
        body = v.get("result", v) if "jsonrpc" in v else v
        tr.append(bytes([r + 5 * to, 1]) + sel(RESULTS[t]) + compact(body))
    write("translate", tr)

    # sse: chunk byte + stream.
    write("sse", [
        b"\x00: keep-alive\n\nid: 1-1\nretry: 500\ndata: {\"a\":1}\r\ndata: x\n\n",
        b"\x03event: endpoint\ndata: /message?s=1\n\nid: 7\ndata:\n\n",
        b"\x3fdata\ndata\n\ndata: a\rdata: b\r\n\r\n", b"\x01retry: 18446744073709551616\nid\n\n",
        b"\x05\xef\xbb\xbfdata: \xff\xfe\n\n:x\nevent\n\n", b"\x00" + b"data: " + b"x" * 300 + b"\n" * 3,
    ])

    # headers: mode byte + …
    schema = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "opts": {"type": "object", "properties": {"tenant": {"type": "integer", "x-mcp-header": "Tenant"}}},
        "flag": {"type": "boolean", "x-mcp-header": "F!#$%&'*+-.^_`|~"}}}
    args = {"region": "Hello, 世界", "opts": {"tenant": 9007199254740991}, "flag": True}
    hdr = [b"\x00" + s.encode() for s in
           ["us-west1", "Hello, 世界", " padded ", "line1\nline2", "=?base64?literal?=", "", "=?base64??=", "a\tb"]]
    hdr += [b"\x01" + compact(schema) + b"\xff" + compact(args),
            b"\x01" + compact({"anyOf": [schema]}),
            b"\x01" + compact({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
            b"\x01" + compact({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}) + b"\xff{\"a\":1.5}"]
    env = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}}
    for m, p in [("tools/call", {"name": "get_weather", "arguments": {}}), ("resources/read", {"uri": "file:///a b"}),
                 ("prompts/get", {"name": "Hello, 世界"}), ("tools/list", {}), ("tasks/get", {"taskId": "t-1"})]:
        body = compact(dict(p, _meta=env))
        name = p.get("name") or p.get("uri") or p.get("taskId")
        lines = f"mcp-protocol-version:2026-07-28\nmcp-method:{m}\n" + (f"mcp-name:{name}\n" if name else "")
        hdr.append(b"\x02" + sel(m) + body + b"\xff" + lines.encode())
    hdr.append(b"\x03" + sel("tools/call") + b'{"name":"a","name":"b","_meta":{}}\xffmcp-name:=?base64?YQ==?=\n')
    write("headers", hdr)

    readme = (ROOT / "README.md").read_text()
    start = readme.index('{\n  "mcpServers"')
    example = readme[start:readme.index("```", start)]
    write("config", [example.encode(), compact(json.loads(example)),
                     b'{"mcpServers":{}}', b'{"mcpServers":{"a":{"command":"x","url":"http://y"}}}',
                     b'{"mcpServers":{"a b.c":{"url":"ftp://x"}},"gateway":{"maxNameLength":15}}',
                     b'{"mcpServers":{"\xc3\xa9\xc3\xa9":{"command":"x","session":"shared","maxHostSessions":0}}}',
                     '{"mcpServers":{"ünï":{"command":"x","protocolVersion":"2099-01-01"}},"gateway":{"separator":"·","maxNameLength":16,"surface":"dispatcher"}}'.encode(),
                     b'{"mcpServers":{"a":{"command":"x","env":{"A":1},"hostSessionIdleSeconds":1}},"gateway":[]}'])


if __name__ == "__main__":
    sys.exit(main())
