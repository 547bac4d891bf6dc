//! `docs/configuration.md`, the configuration reference, is generated from the JSON Schema
//! the gateway prints with `--print-config-schema` (`mcp_proxy::config::schema()`, which is
//! what `mcp-gateway --print-config-schema` pretty-prints), so that it cannot drift from
//! what the reader takes: a key added, renamed or re-described in `mcp-proxy/src/config/`
//! (the schema's descriptions are those files' doc comments) fails this test until the
//! file is regenerated with
//!
//! ```sh
//! UPDATE_DOCS=1 cargo test -p mcp-proxy --test config_docs
//! ```
//!
//! which writes the file instead of comparing it. The output is deterministic: objects in
//! the order they are reached from the top, keys sorted (required ones first), no dates.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

const REGENERATE: &str = "UPDATE_DOCS=1 cargo test -p mcp-proxy --test config_docs";

fn doc_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/configuration.md"
    ))
}

#[test]
fn the_configuration_reference_is_the_one_the_schema_gives() {
    let expected = render(&mcp_proxy::config::schema());
    let path = doc_path();
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| !v.is_empty()) {
        std::fs::create_dir_all(path.parent().expect("docs/")).expect("docs/ made");
        std::fs::write(&path, &expected).expect("docs/configuration.md written");
        eprintln!("wrote {}", path.display());
        return;
    }
    let current = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => panic!(
            "cannot read {}: {e}; generate it with `{REGENERATE}`",
            path.display()
        ),
    };
    if current != expected {
        let (line, now, want) = first_difference(&current, &expected);
        panic!(
            "docs/configuration.md is not what the configuration's JSON Schema gives \
             (first difference at line {line}:\n  file:      {now:?}\n  generated: {want:?}).\n\
             Regenerate it with `{REGENERATE}` and commit the result."
        );
    }
}

/// The reference is rendered from `mcp_proxy::config::schema()`; this is the schema the
/// program prints (the binary exists where feature `cli` is on, as in `cargo test`, which
/// builds `mcp-examples` and with it that feature).
#[cfg(feature = "cli")]
#[test]
fn the_program_prints_the_schema_the_reference_is_rendered_from() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-gateway"))
        .arg("--print-config-schema")
        .output()
        .expect("mcp-gateway runs");
    assert!(out.status.success(), "{out:?}");
    let printed: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(printed, mcp_proxy::config::schema());
    assert_eq!(render(&printed), render(&mcp_proxy::config::schema()));
}

#[test]
fn every_key_of_the_schema_is_documented_and_every_link_lands() {
    let schema = mcp_proxy::config::schema();
    let text = render(&schema);
    let sections = sections(&schema);
    // Every object the schema describes has a section, and every key of it a row.
    for section in &sections {
        let heading = format!("\n## {}\n", heading(&section.path));
        let start = text
            .find(&heading)
            .unwrap_or_else(|| panic!("no section for `{}`", section.path));
        let body = &text[start + heading.len()..];
        let body = &body[..body.find("\n## ").unwrap_or(body.len())];
        for key in section.schema["properties"]
            .as_object()
            .expect("keys")
            .keys()
        {
            assert!(
                body.contains(&format!("\n| `{key}`")),
                "`{}.{key}` has no row:\n{body}",
                section.path
            );
        }
    }
    assert!(
        sections.iter().any(|s| s.path == "mcpServers.*")
            && sections.iter().any(|s| s.path == "gateway.http"),
        "the servers and the gateway's objects are reached: {:?}",
        sections.iter().map(|s| &s.path).collect::<Vec<_>>()
    );
    // Every in-page link names a heading of the page.
    let anchors: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(slug)
        .collect();
    for link in text.split("](#").skip(1) {
        let anchor = &link[..link.find(')').expect("a closed link")];
        assert!(anchors.contains(anchor), "no heading for #{anchor}");
    }
}

#[test]
fn a_changed_schema_gives_a_different_reference() {
    let schema = mcp_proxy::config::schema();
    let text = render(&schema);
    assert_eq!(text, render(&schema), "the same schema, the same text");
    let mut changed = schema.clone();
    let servers = changed["properties"]["mcpServers"]
        .as_object_mut()
        .expect("mcpServers");
    servers.insert(
        "description".into(),
        Value::from("Where the tools come from."),
    );
    assert_ne!(text, render(&changed), "a description is in the reference");
    assert!(render(&changed).contains("| Where the tools come from. |"));
    let mut changed = schema.clone();
    changed["properties"]
        .as_object_mut()
        .expect("the file's keys")
        .insert("extra".into(), serde_json::json!({"type": "boolean"}));
    assert!(
        render(&changed).contains("\n| `extra` | boolean |"),
        "a key is in it"
    );
}

/// The line number (from 1) and the two lines where `a` and `b` first differ.
fn first_difference(a: &str, b: &str) -> (usize, String, String) {
    let (mut x, mut y) = (a.lines(), b.lines());
    for n in 1.. {
        match (x.next(), y.next()) {
            (Some(p), Some(q)) if p == q => continue,
            (None, None) => break,
            (p, q) => {
                let show = |l: Option<&str>| l.unwrap_or("<end of file>").to_string();
                return (n, show(p), show(q));
            }
        }
    }
    // Equal line by line: the line endings or the final newline differ.
    (
        a.lines().count() + 1,
        "<line ending>".into(),
        "<line ending>".into(),
    )
}

/// One object of the configuration: where it sits in the file and its schema.
struct Section<'a> {
    /// `gateway.auth`, `mcpServers.*`, `gateway.views[]`; `""` for the file itself.
    path: String,
    schema: &'a Value,
    /// Its description where it is used (the parent's key), if any.
    lead: Option<&'a str>,
    /// The `$defs` name it was reached by, if any.
    def: Option<&'a str>,
    /// Other paths it is used at.
    also: Vec<String>,
}

/// `#/$defs/Name` → `Name`.
fn def_name(reference: &str) -> &str {
    reference
        .strip_prefix("#/$defs/")
        .unwrap_or_else(|| panic!("a reference outside $defs: {reference}"))
}

fn defs(root: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    root.get("$defs")
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// A schema with its `$ref` followed (the schema itself when it has none).
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> (&'a Value, Option<&'a str>) {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = def_name(r);
            let def = defs(root)
                .get(name)
                .unwrap_or_else(|| panic!("no $defs/{name}"));
            (def, Some(name))
        }
        None => (schema, None),
    }
}

fn is_object(schema: &Value) -> bool {
    schema.get("properties").is_some_and(Value::is_object)
}

/// Keys in the order the reference lists them: required ones first, each part sorted.
fn keys(schema: &Value) -> Vec<(&String, &Value, bool)> {
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut keys: Vec<(&String, &Value, bool)> = schema["properties"]
        .as_object()
        .map(|p| {
            p.iter()
                .map(|(k, v)| (k, v, required.contains(k.as_str())))
                .collect()
        })
        .unwrap_or_default();
    keys.sort_by(|a, b| (!a.2, a.0).cmp(&(!b.2, b.0)));
    keys
}

/// Every object of the file, depth first from the top, each once (at the first path that
/// reaches it; a shared definition lists the others).
fn sections(root: &Value) -> Vec<Section<'_>> {
    let mut out: Vec<Section<'_>> = Vec::new();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    out.push(Section {
        path: String::new(),
        schema: root,
        lead: None,
        def: None,
        also: Vec::new(),
    });
    visit(root, root, "", &mut out, &mut seen);
    out
}

fn visit<'a>(
    root: &'a Value,
    object: &'a Value,
    path: &str,
    out: &mut Vec<Section<'a>>,
    seen: &mut BTreeMap<&'a str, usize>,
) {
    for (key, property, _) in keys(object) {
        let at = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        let lead = property.get("description").and_then(Value::as_str);
        reach(root, property, at, lead, out, seen);
    }
}

/// The objects a value at `path` holds: itself, its items, a map's values, alternatives.
fn reach<'a>(
    root: &'a Value,
    schema: &'a Value,
    path: String,
    lead: Option<&'a str>,
    out: &mut Vec<Section<'a>>,
    seen: &mut BTreeMap<&'a str, usize>,
) {
    let (target, def) = resolve(root, schema);
    if is_object(target) {
        if let Some(name) = def {
            if let Some(&i) = seen.get(name) {
                out[i].also.push(path);
                return;
            }
            seen.insert(name, out.len());
        }
        out.push(Section {
            path: path.clone(),
            schema: target,
            lead,
            def,
            also: Vec::new(),
        });
        visit(root, target, &path, out, seen);
        return;
    }
    if let Some(items) = target.get("items").filter(|i| i.is_object()) {
        reach(root, items, format!("{path}[]"), lead, out, seen);
    }
    if let Some(values) = target.get("additionalProperties").filter(|v| v.is_object()) {
        reach(root, values, format!("{path}.*"), lead, out, seen);
    }
    for alternatives in ["anyOf", "oneOf", "allOf"] {
        for alternative in target
            .get(alternatives)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            reach(root, alternative, path.clone(), lead, out, seen);
        }
    }
}

/// GitHub's anchor for a heading: lower case, spaces as `-`, other punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn heading(path: &str) -> String {
    if path.is_empty() {
        "The file".into()
    } else {
        format!("`{path}`")
    }
}

fn code(value: &Value) -> String {
    format!("`{value}`")
}

/// Text on one line, its runs of white space (the doc comments' line breaks) as one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text for a table cell: one line, `|` escaped.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// `a`, `a or b`, `a, b or c`.
fn either(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// What a value is: its type and the constraints the schema puts on it, objects linked to
/// their sections.
fn type_of(root: &Value, schema: &Value, links: &BTreeMap<*const Value, String>) -> String {
    let (target, _) = resolve(root, schema);
    if is_object(target) {
        let path = &links[&(target as *const Value)];
        return format!("object ([{}](#{}))", heading(path), slug(&heading(path)));
    }
    if let Some(values) = target.get("enum").and_then(Value::as_array) {
        return either(&values.iter().map(code).collect::<Vec<_>>());
    }
    if let Some(value) = target.get("const") {
        return code(value);
    }
    for alternatives in ["anyOf", "oneOf"] {
        if let Some(list) = target.get(alternatives).and_then(Value::as_array) {
            let list: Vec<String> = list.iter().map(|s| type_of(root, s, links)).collect();
            return either(&list);
        }
    }
    let types: Vec<&str> = match target.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let described: Vec<String> = types
        .iter()
        .map(|t| match *t {
            "array" => match target.get("items").filter(|i| i.is_object()) {
                Some(items) => format!("array of {}", type_of(root, items, links)),
                None => "array".into(),
            },
            "object" => match target.get("additionalProperties") {
                Some(v @ Value::Object(_)) => format!("map of {}", type_of(root, v, links)),
                _ => "object".into(),
            },
            "integer" | "number" => {
                let bound = |k: &str| target.get(k).map(Value::to_string);
                match (bound("minimum"), bound("maximum")) {
                    (Some(lo), Some(hi)) => format!("{t}, {lo} to {hi}"),
                    (Some(lo), None) => format!("{t} ≥ {lo}"),
                    (None, Some(hi)) => format!("{t} ≤ {hi}"),
                    (None, None) => t.to_string(),
                }
            }
            "string" => {
                let mut s = "string".to_string();
                if let Some(f) = target.get("format").and_then(Value::as_str) {
                    s.push_str(&format!(" ({f})"));
                }
                let len = |k: &str| target.get(k).map(Value::to_string);
                match (len("minLength"), len("maxLength")) {
                    (Some(lo), Some(hi)) => s.push_str(&format!(" of {lo} to {hi} characters")),
                    (Some(lo), None) => s.push_str(&format!(" of at least {lo} characters")),
                    (None, Some(hi)) => s.push_str(&format!(" of at most {hi} characters")),
                    (None, None) => {}
                }
                if let Some(p) = target.get("pattern").and_then(Value::as_str) {
                    s.push_str(&format!(" matching `{p}`"));
                }
                s
            }
            other => other.to_string(),
        })
        .collect();
    if described.is_empty() {
        "any".into()
    } else {
        either(&described)
    }
}

/// The reference, as Markdown.
fn render(root: &Value) -> String {
    let sections = sections(root);
    let links: BTreeMap<*const Value, String> = sections
        .iter()
        .map(|s| (s.schema as *const Value, s.path.clone()))
        .collect();
    let mut md = String::new();
    md.push_str(
        "# Configuration reference\n\
         \n\
         <!-- Generated by mcp-proxy/tests/config_docs.rs from the configuration's JSON Schema;\n\
         \x20    do not edit. Change the doc comments in mcp-proxy/src/config/, then run\n\
         \x20    UPDATE_DOCS=1 cargo test -p mcp-proxy --test config_docs -->\n\
         \n\
         Every key of the gateway's configuration file, generated from the JSON Schema that\n\
         `mcp-gateway --print-config-schema` prints (a `cargo test` fails when this page and the\n\
         schema differ). The file is the JSON Claude Desktop and Cursor use: `mcpServers`, one\n\
         entry per upstream server, and `gateway`, what applies to the gateway as a whole.\n\
         \n\
         The reader is strict: a key it does not know stops the gateway at start, naming the\n\
         file, the key and the nearest known key. `*` in a path stands for a key you choose (a\n\
         server's name, a tool's name) and `[]` for each element of a list. How the keys work\n\
         together, with examples: [the gateway](gateway.md), [security](security.md),\n\
         [operations](operations.md).\n",
    );
    md.push_str("\n## Contents\n\n");
    for s in &sections {
        let h = heading(&s.path);
        md.push_str(&format!("- [{h}](#{})\n", slug(&h)));
    }
    for s in &sections {
        md.push_str(&format!("\n## {}\n\n", heading(&s.path)));
        let mut about: Vec<String> = Vec::new();
        if let Some(title) = s.schema.get("title").and_then(Value::as_str) {
            about.push(format!("{title}."));
        }
        let lead = s.lead.map(one_line);
        if let Some(lead) = &lead {
            about.push(lead.clone());
        }
        if let Some(d) = s.schema.get("description").and_then(Value::as_str) {
            let d = one_line(d);
            if Some(&d) != lead.as_ref() && d != format!("`{}`.", s.path) {
                about.push(d);
            }
        }
        if !s.also.is_empty() {
            let also: Vec<String> = s.also.iter().map(|p| format!("`{p}`")).collect();
            about.push(format!("Also used at {}.", either(&also)));
        }
        if let Some(def) = s.def {
            about.push(format!("(Schema: `#/$defs/{def}`.)"));
        }
        if !about.is_empty() {
            md.push_str(&about.join(" "));
            md.push_str("\n\n");
        }
        md.push_str("| key | type | description |\n| --- | --- | --- |\n");
        for (key, property, required) in keys(s.schema) {
            let (target, _) = resolve(root, property);
            let mut description = property
                .get("description")
                .or_else(|| target.get("description"))
                .and_then(Value::as_str)
                .map(cell)
                .unwrap_or_default();
            if let Some(default) = property.get("default").or_else(|| target.get("default")) {
                if !description.is_empty() {
                    description.push(' ');
                }
                description.push_str(&cell(&format!("Default in the schema: {}.", code(default))));
            }
            let key = if required {
                format!("`{key}` (required)")
            } else {
                format!("`{key}`")
            };
            let ty = cell(&type_of(root, property, &links));
            md.push_str(&format!("| {key} | {ty} | {description} |\n"));
        }
        match s.schema.get("additionalProperties") {
            Some(Value::Bool(false)) | None => {}
            Some(Value::Bool(true)) => md.push_str("\nOther keys are accepted.\n"),
            Some(other) => md.push_str(&format!(
                "\nOther keys: {}.\n",
                cell(&type_of(root, other, &links))
            )),
        }
    }
    md
}
