//! The catalog alone, by tables of cases: what hosts are shown of given listings under
//! given filters, overrides and namespaces, where each exposed name routes, and what is
//! refused.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_types::protocol::Tool;
use mcp_types::raw::Exact;
use serde_json::json;

use super::{template_matches, Catalog, Listing, Member};
use crate::aggregator::id::{PerUpstream, UpstreamId};
use crate::naming::Prefixed;
use crate::overrides::ToolOverride;
use crate::policy::{GlobFilter, ToolFilter};

/// One upstream of a case: its key, namespace, filter, overrides and listed tools.
struct Up {
    key: &'static str,
    namespace: &'static str,
    deny: &'static [&'static str],
    rename: &'static [(&'static str, &'static str)],
    tools: &'static [&'static str],
}

fn tool(name: &str) -> Exact<Tool> {
    let t: Tool = serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}}))
        .expect("a tool");
    Exact::encode(t).expect("encoded")
}

/// The catalog of `ups`, each listing its tools, and the upstream ids in order.
fn catalog(ups: &[Up]) -> (Catalog, Vec<UpstreamId>) {
    let members: PerUpstream<Member> = ups
        .iter()
        .map(|u| Member {
            key: u.key.into(),
            namespace: u.namespace.into(),
            tools: Arc::new(GlobFilter {
                allow: None,
                deny: u.deny.iter().map(|d| d.to_string()).collect(),
            }) as Arc<dyn ToolFilter>,
            overrides: Arc::new(
                u.rename
                    .iter()
                    .map(|(real, shown)| (real.to_string(), ToolOverride::new().name(*shown)))
                    .collect::<BTreeMap<_, _>>(),
            ),
            trusted: false,
            withhold_hints: false,
        })
        .collect();
    let ids: Vec<UpstreamId> = members.ids().collect();
    let catalog = Catalog::new(members, Arc::new(Prefixed::default()), 0, None);
    for (i, u) in ids.iter().zip(ups) {
        let listing = Listing {
            tools: u.tools.iter().map(|t| tool(t)).collect(),
            ..Default::default()
        };
        catalog.set_listing(*i, listing);
    }
    (catalog, ids)
}

#[test]
fn hosts_are_shown_and_routed_what_filters_overrides_and_namespaces_say() {
    struct Case {
        name: &'static str,
        ups: &'static [Up],
        /// `(exposed name, upstream index, real name)` in catalog order.
        shown: &'static [(&'static str, usize, &'static str)],
        /// `(exposed name, key of the upstream whose filter denies it)`.
        denied: &'static [(&'static str, &'static str)],
    }
    let cases = [
        Case {
            name: "two upstreams, each under its namespace, in key order",
            ups: &[
                Up {
                    key: "a",
                    namespace: "a",
                    deny: &[],
                    rename: &[],
                    tools: &["read", "write"],
                },
                Up {
                    key: "b",
                    namespace: "b",
                    deny: &[],
                    rename: &[],
                    tools: &["read"],
                },
            ],
            shown: &[
                ("a__read", 0, "read"),
                ("a__write", 0, "write"),
                ("b__read", 1, "read"),
            ],
            denied: &[],
        },
        Case {
            name: "a denied tool is neither shown nor routed, and is named as denied",
            ups: &[Up {
                key: "fs",
                namespace: "fs",
                deny: &["delete"],
                rename: &[],
                tools: &["read", "delete"],
            }],
            shown: &[("fs__read", 0, "read")],
            denied: &[("fs__delete", "fs")],
        },
        Case {
            name: "an override's name is exposed and routes to the real name",
            ups: &[Up {
                key: "web",
                namespace: "web",
                deny: &[],
                rename: &[("fetch_url", "fetch")],
                tools: &["fetch_url"],
            }],
            shown: &[("web__fetch", 0, "fetch_url")],
            denied: &[],
        },
        Case {
            name: "an empty namespace exposes names as they are",
            ups: &[Up {
                key: "solo",
                namespace: "",
                deny: &[],
                rename: &[],
                tools: &["echo"],
            }],
            shown: &[("echo", 0, "echo")],
            denied: &[],
        },
    ];
    for case in cases {
        let (catalog, ids) = catalog(case.ups);
        let shown: Vec<(String, UpstreamId, String)> = catalog
            .tool_entries()
            .into_iter()
            .map(|(exposed, i, t)| (exposed, i, t.name.clone()))
            .collect();
        let want: Vec<(String, UpstreamId, String)> = case
            .shown
            .iter()
            .map(|(e, i, real)| (e.to_string(), ids[*i], real.to_string()))
            .collect();
        assert_eq!(shown, want, "{}: shown", case.name);
        for (exposed, i, real) in case.shown {
            let route = catalog
                .route(exposed)
                .unwrap_or_else(|| panic!("{}: {exposed} routes", case.name));
            assert_eq!(
                route.upstream, ids[*i],
                "{}: {exposed}'s upstream",
                case.name
            );
            assert_eq!(
                route.tool.name, *real,
                "{}: {exposed}'s real name",
                case.name
            );
        }
        for (exposed, key) in case.denied {
            assert!(
                catalog.route(exposed).is_none(),
                "{}: {exposed} is not routed",
                case.name
            );
            assert_eq!(
                catalog.denied_upstream(exposed).as_deref(),
                Some(*key),
                "{}",
                case.name
            );
        }
        assert!(catalog.route("nothing__here").is_none(), "{}", case.name);
        assert!(catalog.check_collisions().is_ok(), "{}", case.name);
    }
}

#[test]
fn two_tools_exposed_under_one_name_are_a_collision() {
    let ups = [
        Up {
            key: "a",
            namespace: "",
            deny: &[],
            rename: &[],
            tools: &["echo"],
        },
        Up {
            key: "b",
            namespace: "",
            deny: &[],
            rename: &[],
            tools: &["echo"],
        },
    ];
    let (catalog, _) = catalog(&ups);
    let err = catalog.check_collisions().expect_err("a collision");
    let text = err.to_string();
    assert!(
        text.contains("echo") && text.contains("a/echo") && text.contains("b/echo"),
        "{text}"
    );
}

#[test]
fn a_new_listing_says_which_lists_changed_and_moves_the_generation() {
    let ups = [Up {
        key: "a",
        namespace: "a",
        deny: &[],
        rename: &[],
        tools: &["one"],
    }];
    let (catalog, ids) = catalog(&ups);
    let before = catalog.generation();
    let same = Listing {
        tools: vec![tool("one")],
        ..Default::default()
    };
    let changed = catalog.set_listing(ids[0], same);
    assert!(!changed.any(), "the same listing changes nothing");
    let more = Listing {
        tools: vec![tool("one"), tool("two")],
        ..Default::default()
    };
    let changed = catalog.set_listing(ids[0], more);
    assert!(changed.tools && !changed.prompts && !changed.resources);
    assert!(catalog.generation() > before);
    assert!(
        catalog.route("a__two").is_some(),
        "the route index follows the new listing"
    );
}

#[test]
fn templates_match_level_one_expressions() {
    assert!(template_matches(
        "test://template/{id}/data",
        "test://template/123/data"
    ));
    assert!(!template_matches(
        "test://template/{id}/data",
        "test://template//data"
    ));
    assert!(!template_matches(
        "test://template/{id}/data",
        "test://other/123/data"
    ));
    assert!(template_matches("file:///{path}", "file:///a"));
}

#[test]
fn the_shown_tools_are_made_once_per_change_under_their_exposed_names() {
    let ups = [Up {
        key: "web",
        namespace: "web",
        deny: &[],
        rename: &[("fetch_url", "fetch")],
        tools: &["fetch_url", "search"],
    }];
    let (catalog, ids) = catalog(&ups);
    let shown = catalog.shown_tools();
    let texts: Vec<serde_json::Value> = shown
        .iter()
        .map(|s| serde_json::from_str(s.text.get()).expect("json"))
        .collect();
    let names: Vec<&str> = texts.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        ["web__fetch", "web__search"],
        "the texts carry the exposed names"
    );
    let exposed: Vec<&str> = shown.iter().map(|s| s.exposed.as_str()).collect();
    assert_eq!(exposed, names);
    assert_eq!(
        texts[1]["inputSchema"],
        json!({"type": "object"}),
        "the rest as listed"
    );
    assert!(
        Arc::ptr_eq(&shown, &catalog.shown_tools()),
        "unchanged: the same"
    );
    let more = Listing {
        tools: vec![tool("fetch_url"), tool("search"), tool("read")],
        ..Default::default()
    };
    catalog.set_listing(ids[0], more);
    let after = catalog.shown_tools();
    assert!(!Arc::ptr_eq(&shown, &after), "a change makes them again");
    assert_eq!(after.len(), 3);
}
