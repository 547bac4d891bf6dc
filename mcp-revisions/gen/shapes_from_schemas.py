#!/usr/bin/env python3
"""Writes mcp-revisions/src/spec_data.rs: what each MCP revision carries, as data.

Reads the official schema.json of the five revisions (MCP_SPEC_DIR, else ../shared/spec
beside the repo) and records, for every object type reachable from a method's params or
result, which members exist in which revision and what shape each member has. The output
is committed; rerun this when a revision is added, and `cargo test -p mcp-revisions`
(spec_data_matches_schemas) checks the committed table against the schemas.

Usage: python3 mcp-revisions/gen/shapes_from_schemas.py > mcp-revisions/src/spec_data.rs && cargo fmt
"""
import json
import os
import re
import sys

REVS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
here = os.path.dirname(os.path.abspath(__file__))
spec = os.environ.get("MCP_SPEC_DIR") or os.path.join(here, "..", "..", "..", "shared", "spec")
DEFS = {}
for r in REVS:
    doc = json.load(open(os.path.join(spec, r, "schema.json")))
    DEFS[r] = doc.get("definitions") or doc.get("$defs")

CONTENT_TAGS = {
    "TextContent": "text", "ImageContent": "image", "AudioContent": "audio",
    "EmbeddedResource": "resource", "ResourceLink": "resource_link",
    "ToolUseContent": "tool_use", "ToolResultContent": "tool_result",
}
# anyOf unions of objects that are one object on the wire, under one name.
MERGED = {
    frozenset(["TextResourceContents", "BlobResourceContents"]): "ResourceContents",
    frozenset(["PromptReference", "ResourceReference"]): "CompleteReference",
    frozenset(["PromptReference", "ResourceTemplateReference"]): "CompleteReference",
    frozenset(["ElicitRequestURLParams", "ElicitRequestFormParams"]): "ElicitRequestParams",
}
META_DEFS = {"MetaObject", "RequestMetaObject", "ResultMetaObject", "NotificationMetaObject",
             "SubscriptionsListenResultMetaObject"}
SAMPLING_PARENTS = {"SamplingMessage", "CreateMessageResult", "result sampling/createMessage"}


def ref_name(s):
    return s["$ref"].split("/")[-1] if "$ref" in s else None


def resolve(r, s):
    """Follows a def-level $ref chain (EmptyResult -> Result)."""
    while "$ref" in s and len(s) <= 2:
        s = DEFS[r][ref_name(s)]
    return s


def props_of(r, s):
    """Properties of an object schema, allOf parts merged."""
    s = resolve(r, s)
    out = dict(s.get("properties", {}))
    for part in s.get("allOf", []):
        out.update(props_of(r, part if "$ref" not in part else DEFS[r][ref_name(part)]))
    if "anyOf" in s and all("$ref" in a for a in s["anyOf"]):
        for a in s["anyOf"]:
            out.update(props_of(r, DEFS[r][ref_name(a)]))
    return out


# objects[name][rev] = {field: shape}
objects = {}
content_kinds = {"BLOCK": {}, "SAMPLING": {}}  # tag -> set(revs)


def content_members(r, s):
    """Content def names an anyOf/ref/array-items schema admits, and whether an array is allowed."""
    names, array = [], False
    if "$ref" in s:
        n = ref_name(s)
        if n in ("ContentBlock", "SamplingMessageContentBlock"):
            return content_members(r, DEFS[r][n])
        if n in CONTENT_TAGS:
            return [n], False
        return None, False
    for a in s.get("anyOf", []):
        if a.get("type") == "array":
            array = True
            sub, _ = content_members(r, a["items"])
            names += sub or []
            continue
        sub, _ = content_members(r, a)
        if sub is None:
            return None, False
        names += sub
    return (names or None), array


def shape_of(r, parent, prop, s):
    if prop == "_meta":
        return "Shape::Meta"
    if s.get("type") == "array" and "items" in s:
        inner = shape_of(r, parent, prop, s["items"])
        m = re.match(r"Shape::(Object|Content)\((&\w+), Container::One\)", inner)
        return f"Shape::{m.group(1)}({m.group(2)}, Container::Array)" if m else "Shape::Opaque"
    names, array = content_members(r, s)
    if names:
        ctx = "SAMPLING" if parent in SAMPLING_PARENTS else "BLOCK"
        for n in names:
            content_kinds[ctx].setdefault(CONTENT_TAGS[n], set()).add(r)
            visit(r, n, DEFS[r][n])
        if ctx == "SAMPLING":
            return "Shape::SamplingContent(&SAMPLING_CONTENT)"
        return "Shape::Content(&BLOCK_CONTENT, Container::One)"
    if isinstance(s.get("additionalProperties"), dict) and "$ref" in s["additionalProperties"]:
        n = ref_name(s["additionalProperties"])
        if n == "InputRequest":
            return "Shape::InputRequests"
        return "Shape::Opaque"
    if "$ref" in s:
        n = ref_name(s)
        if n in META_DEFS:
            return "Shape::Meta"
        if n in ("InputRequests",):
            return "Shape::InputRequests"
        d = DEFS[r][n]
        if "anyOf" in d and all("$ref" in a for a in d["anyOf"]):
            members = frozenset(ref_name(a) for a in d["anyOf"])
            if members in MERGED:
                return object_ref(r, MERGED[members], d)
        if props_of(r, d):
            return object_ref(r, n, d)
        return "Shape::Opaque"
    if "anyOf" in s and all("$ref" in a for a in s["anyOf"]):
        members = frozenset(ref_name(a) for a in s["anyOf"])
        if members in MERGED:
            return object_ref(r, MERGED[members], s)
        return "Shape::Opaque"
    if prop == "annotations" and "audience" in s.get("properties", {}):
        # 2024-11-05 inlines what later revisions call Annotations.
        return object_ref(r, "Annotations", s)
    if s.get("type") == "object" and s.get("properties") and prop not in ("inputSchema", "outputSchema", "requestedSchema", "arguments"):
        return object_ref(r, f"{parent}_{prop}", s)
    return "Shape::Opaque"


def object_ref(r, name, s):
    visit(r, name, s)
    return f"Shape::Object(&{const(name)}, Container::One)"


def visit(r, name, s):
    objects.setdefault(name, {})
    if r in objects[name]:
        return
    objects[name][r] = {}
    for p, ps in props_of(r, s).items():
        objects[name][r][p] = None
    for p, ps in props_of(r, s).items():
        objects[name][r][p] = shape_of(r, name, p, ps)


def const(name):
    name = name.replace("/", "_").replace(" ", "_")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


methods = {}  # method -> dict(kind, dir, revs, params, result)
for r in REVS:
    d = DEFS[r]
    unions = {"ClientRequest": ("Request", "ClientToServer"), "ServerRequest": ("Request", "ServerToClient"),
              "ClientNotification": ("Notification", "ClientToServer"),
              "ServerNotification": ("Notification", "ServerToClient")}
    for union, (kind, direction) in unions.items():
        if union not in d:
            continue
        for a in d[union].get("anyOf", []):
            n = ref_name(a)
            if not n:
                continue
            defn = d[n]
            mprops = props_of(r, defn)
            m = mprops.get("method", {}).get("const")
            if not m:
                continue
            entry = methods.setdefault(m, {"kind": kind, "dirs": set(), "revs": set(), "params": f"params {m}",
                                           "result": None})
            entry["dirs"].add(direction)
            entry["revs"].add(r)
            visit(r, entry["params"], mprops.get("params", {"type": "object", "properties": {}}))
            # Every revision's base Request/Notification/Result allows `_meta`, inline params or not.
            objects[entry["params"]][r]["_meta"] = "Shape::Meta"
            if kind == "Request":
                rn = n[:-len("Request")] + "Result"
                rdef = d.get(rn) or d.get("EmptyResult") or d["Result"]
                entry["result"] = f"result {m}"
                visit(r, entry["result"], rdef)
                objects[entry["result"]][r]["_meta"] = "Shape::Meta"
# 2026 server-to-client requests travel inside InputRequiredResult, not as JSON-RPC requests.
for n in ("CreateMessageRequest", "ElicitRequest", "ListRootsRequest"):
    d = DEFS["2026-07-28"]
    m = props_of("2026-07-28", d[n])["method"]["const"]
    visit("2026-07-28", f"params {m}", props_of("2026-07-28", d[n]).get("params", {"type": "object", "properties": {}}))
    objects[f"params {m}"]["2026-07-28"]["_meta"] = "Shape::Meta"
    visit("2026-07-28", f"result {m}", d[n[:-len("Request")] + "Result"])
    objects[f"result {m}"]["2026-07-28"]["_meta"] = "Shape::Meta"
visit("2026-07-28", "InputRequiredResult", DEFS["2026-07-28"]["InputRequiredResult"])
visit("2025-11-25", "CreateTaskResult", DEFS["2025-11-25"]["CreateTaskResult"])
for name in ("Tool", "Prompt", "Resource", "ResourceTemplate", "ClientCapabilities", "ServerCapabilities", "Implementation"):
    for r in REVS:
        visit(r, name, DEFS[r][name])


def revset(rs):
    return '"' + "".join("X" if r in rs else "." for r in REVS) + '"'


out = []
w = out.append
w("// @generated by mcp-revisions/gen/shapes_from_schemas.py from the official schema.json of")
w("// each revision. Edit the generator, not this file; `spec_data_matches_schemas` checks it.")
w("//! What each revision carries: object members per revision, content block types, methods.")
w("")
w("use crate::shapes::{Container, ContentKind, Direction, Field, MethodKind, MethodSpec, ObjectShape, RevisionSet, Shape};")
w("")
w("const fn revs(pattern: &str) -> RevisionSet {")
w("    RevisionSet::parse(pattern)")
w("}")
w("")
for ctx in ("BLOCK", "SAMPLING"):
    w(f"/// Content block types allowed where the schema says {'ContentBlock' if ctx == 'BLOCK' else 'SamplingMessageContentBlock'}.")
    w(f"pub static {ctx}_CONTENT: [ContentKind; {len(content_kinds[ctx])}] = [")
    for tag, rs in sorted(content_kinds[ctx].items()):
        defname = [k for k, v in CONTENT_TAGS.items() if v == tag][0]
        w(f'    ContentKind {{ tag: "{tag}", revisions: revs({revset(rs)}), shape: &{const(defname)} }},')
    w("];")
    w("")
w("/// Every method of every revision (2026-07-28 sampling, elicitation and roots only as input requests).")
w("pub static METHODS: &[MethodSpec] = &[")
for m, e in sorted(methods.items()):
    dirs = e["dirs"]
    direction = "Direction::Both" if len(dirs) > 1 else f"Direction::{next(iter(dirs))}"
    result = f"Some(&{const(e['result'])})" if e["result"] else "None"
    w(f'    MethodSpec {{ name: "{m}", kind: MethodKind::{e["kind"]}, direction: {direction}, '
      f'revisions: revs({revset(e["revs"])}), params: &{const(e["params"])}, result: {result} }},')
w("];")
w("")
w("/// Every object shape, for lookup by name.")
w(f"pub static OBJECTS: [&ObjectShape; {len(objects)}] = [")
for name in sorted(objects):
    w(f"    &{const(name)},")
w("];")
for name in sorted(objects):
    per = objects[name]
    fields = {}
    for r in REVS:
        for f, sh in per.get(r, {}).items():
            fields.setdefault(f, {"revs": set(), "shape": None})
            fields[f]["revs"].add(r)
            old = fields[f]["shape"]
            if old not in (None, "Shape::Opaque") and sh != "Shape::Opaque" and old != sh:
                sys.exit(f"{name}.{f}: shape {old} in one revision, {sh} in {r}")
            if sh != "Shape::Opaque" or old is None:
                fields[f]["shape"] = sh
    w("")
    w(f"/// `{name}`.")
    w(f"pub static {const(name)}: ObjectShape = ObjectShape {{")
    w(f'    name: "{name}",')
    w(f"    revisions: revs({revset(per.keys())}),")
    w("    fields: &[")
    for f in sorted(fields):
        w(f'        Field {{ name: "{f}", revisions: revs({revset(fields[f]["revs"])}), shape: {fields[f]["shape"]} }},')
    w("    ],")
    w("};")
print("\n".join(out))
