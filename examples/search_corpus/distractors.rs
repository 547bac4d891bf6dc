//! The generated distractors: tools of the hand-written tools' services and their
//! neighbours, sharing their words.

use serde_json::{json, Map, Value};

use super::hand_written;

/// A service the distractors are drawn from: its namespace, how its descriptions name it,
/// what holds its things and the parameter naming that, its things (`snake_case`), the
/// verbs it has besides [`COMMON_VERBS`], and the adjectives its things take.
struct Service {
    namespace: &'static str,
    product: &'static str,
    container: &'static str,
    container_param: &'static str,
    nouns: &'static [&'static str],
    verbs: &'static [&'static str],
    adjectives: &'static [&'static str],
}

/// The distractors' services: the hand-written tools' domains and their neighbours.
#[rustfmt::skip]
const SERVICES: &[Service] = &[
    Service { namespace: "github", product: "GitHub", container: "repository", container_param: "repo",
        nouns: &["issue", "issue_comment", "pull_request", "branch", "commit", "release", "label", "milestone", "workflow_run", "review", "gist", "deploy_key"],
        verbs: &["close", "reopen", "assign", "merge", "approve", "lock", "tag", "watch", "star"],
        adjectives: &["open", "closed", "draft", "stale", "recent", "pinned", "private", "public"] },
    Service { namespace: "gitlab", product: "GitLab", container: "project", container_param: "project_id",
        nouns: &["merge_request", "issue", "pipeline", "branch", "tag", "snippet", "job"],
        verbs: &["close", "reopen", "assign", "merge", "approve", "retry", "cancel"],
        adjectives: &["open", "closed", "failed", "running", "draft", "stale"] },
    Service { namespace: "jira", product: "Jira", container: "project", container_param: "project_key",
        nouns: &["ticket", "issue", "sprint", "epic", "board", "comment", "worklog", "bug_report"],
        verbs: &["assign", "transition", "close", "reopen", "link", "watch", "move"],
        adjectives: &["open", "closed", "blocked", "high_priority", "unassigned", "recent"] },
    Service { namespace: "linear", product: "Linear", container: "team", container_param: "team_id",
        nouns: &["issue", "project", "cycle", "comment", "label"],
        verbs: &["assign", "close", "archive", "move", "estimate"],
        adjectives: &["open", "completed", "backlog", "urgent", "recent"] },
    Service { namespace: "slack", product: "Slack", container: "workspace", container_param: "channel",
        nouns: &["message", "channel", "thread", "reaction", "reminder", "file", "bookmark", "user_group", "status"],
        verbs: &["send", "post", "pin", "unpin", "archive", "share", "schedule", "join", "leave"],
        adjectives: &["unread", "pinned", "archived", "private", "shared", "scheduled", "recent"] },
    Service { namespace: "teams", product: "Microsoft Teams", container: "team", container_param: "team_id",
        nouns: &["message", "channel", "chat", "meeting", "member"],
        verbs: &["send", "post", "schedule", "join", "archive", "invite"],
        adjectives: &["unread", "private", "recent", "scheduled"] },
    Service { namespace: "discord", product: "Discord", container: "server", container_param: "guild_id",
        nouns: &["message", "channel", "thread", "role", "member", "announcement"],
        verbs: &["send", "post", "pin", "ban", "mute", "assign"],
        adjectives: &["pinned", "recent", "private", "archived"] },
    Service { namespace: "postgres", product: "PostgreSQL", container: "database", container_param: "database",
        nouns: &["table", "query", "index", "schema", "row", "view", "connection", "slow_query", "user"],
        verbs: &["run", "explain", "vacuum", "analyze", "insert", "drop", "describe", "kill", "grant"],
        adjectives: &["slow", "active", "idle", "unused", "recent"] },
    Service { namespace: "mysql", product: "MySQL", container: "database", container_param: "database",
        nouns: &["table", "query", "row", "user", "backup"],
        verbs: &["run", "explain", "insert", "drop", "describe", "restore", "grant"],
        adjectives: &["slow", "active", "recent"] },
    Service { namespace: "snowflake", product: "Snowflake", container: "warehouse", container_param: "warehouse",
        nouns: &["query", "table", "stage", "report", "query_history"],
        verbs: &["run", "cancel", "describe", "load", "unload", "clone"],
        adjectives: &["running", "failed", "recent", "scheduled"] },
    Service { namespace: "calendar", product: "Google Calendar", container: "calendar", container_param: "calendar_id",
        nouns: &["event", "calendar", "attendee", "reminder", "free_slot", "meeting_room", "recurring_event"],
        verbs: &["schedule", "cancel", "move", "invite", "accept", "decline", "book"],
        adjectives: &["upcoming", "recurring", "tentative", "cancelled", "shared", "all_day"] },
    Service { namespace: "outlook", product: "Outlook", container: "mailbox", container_param: "mailbox",
        nouns: &["email", "folder", "event", "contact", "draft", "meeting", "rule"],
        verbs: &["send", "forward", "move", "flag", "archive", "schedule", "accept", "decline"],
        adjectives: &["unread", "flagged", "draft", "sent", "recent", "important"] },
    Service { namespace: "gmail", product: "Gmail", container: "mailbox", container_param: "user_id",
        nouns: &["email", "label", "draft", "thread", "attachment", "filter", "signature"],
        verbs: &["send", "forward", "archive", "star", "trash"],
        adjectives: &["unread", "starred", "important", "sent", "draft", "spam"] },
    Service { namespace: "weather", product: "the weather service", container: "region", container_param: "location",
        nouns: &["forecast", "alert", "observation", "station", "radar_image", "air_quality", "hourly_forecast", "historical_weather"],
        verbs: &["fetch", "compare", "subscribe"],
        adjectives: &["current", "hourly", "daily", "severe", "local", "marine"] },
    Service { namespace: "maps", product: "the maps service", container: "region", container_param: "region",
        nouns: &["place", "route", "geocode", "distance", "traffic_report", "travel_time", "place_review"],
        verbs: &["compute", "fetch", "optimize", "save"],
        adjectives: &["nearby", "fastest", "shortest", "saved", "recent"] },
    Service { namespace: "files", product: "the local file system", container: "directory", container_param: "path",
        nouns: &["file", "directory", "archive", "file_metadata", "symlink", "permission", "text_file"],
        verbs: &["read", "write", "move", "copy", "rename", "compress", "extract", "watch", "tail"],
        adjectives: &["hidden", "large", "temporary", "recent", "duplicate", "empty"] },
    Service { namespace: "drive", product: "Google Drive", container: "shared drive", container_param: "drive_id",
        nouns: &["file", "folder", "permission", "comment", "revision", "spreadsheet", "document"],
        verbs: &["share", "upload", "download", "move", "copy", "rename", "star", "trash"],
        adjectives: &["shared", "starred", "recent", "trashed", "owned"] },
    Service { namespace: "dropbox", product: "Dropbox", container: "account", container_param: "path",
        nouns: &["file", "folder", "shared_link", "file_request"],
        verbs: &["upload", "download", "share", "move", "copy", "restore"],
        adjectives: &["shared", "deleted", "recent", "large"] },
    Service { namespace: "stripe", product: "Stripe", container: "account", container_param: "customer",
        nouns: &["payment", "charge", "customer", "invoice", "refund", "subscription", "payout", "dispute", "payment_link"],
        verbs: &["capture", "cancel", "void", "finalize", "pause", "resume", "send"],
        adjectives: &["failed", "pending", "succeeded", "overdue", "recent", "disputed"] },
    Service { namespace: "paypal", product: "PayPal", container: "account", container_param: "merchant_id",
        nouns: &["payment", "order", "refund", "payout", "transaction"],
        verbs: &["capture", "cancel", "authorize", "void"],
        adjectives: &["pending", "completed", "failed", "recent"] },
    Service { namespace: "shopify", product: "Shopify", container: "store", container_param: "store",
        nouns: &["order", "product", "customer", "inventory_level", "fulfillment", "discount_code", "return_request"],
        verbs: &["fulfill", "cancel", "archive", "adjust", "tag"],
        adjectives: &["unfulfilled", "paid", "archived", "draft", "abandoned", "recent"] },
    Service { namespace: "translate", product: "the translation service", container: "project", container_param: "project_id",
        nouns: &["language", "glossary", "document", "detected_language", "translation_memory"],
        verbs: &["detect", "translate"],
        adjectives: &["supported", "custom", "recent"] },
    Service { namespace: "kubernetes", product: "Kubernetes", container: "cluster", container_param: "namespace",
        nouns: &["deployment", "pod", "service", "node", "namespace", "replica_set", "config_map", "cron_job", "ingress"],
        verbs: &["describe", "restart", "rollback", "drain", "cordon", "apply", "patch", "scale"],
        adjectives: &["failing", "pending", "running", "unhealthy", "recent"] },
    Service { namespace: "docker", product: "Docker", container: "host", container_param: "host",
        nouns: &["container", "image", "volume", "network", "compose_service"],
        verbs: &["start", "stop", "restart", "pull", "push", "prune", "inspect", "build"],
        adjectives: &["running", "stopped", "dangling", "unused"] },
    Service { namespace: "aws", product: "AWS", container: "account", container_param: "region",
        nouns: &["s3_object", "bucket", "lambda_function", "instance", "log_group", "alarm"],
        verbs: &["start", "stop", "invoke", "upload", "download", "describe", "tag"],
        adjectives: &["running", "stopped", "public", "unused", "recent"] },
    Service { namespace: "notion", product: "Notion", container: "workspace", container_param: "workspace_id",
        nouns: &["page", "database", "block", "comment", "user", "template"],
        verbs: &["archive", "duplicate", "move", "query", "publish"],
        adjectives: &["archived", "shared", "recent", "public", "draft"] },
    Service { namespace: "confluence", product: "Confluence", container: "space", container_param: "space_key",
        nouns: &["page", "space", "comment", "attachment", "blog_post"],
        verbs: &["publish", "archive", "move", "copy", "watch", "label"],
        adjectives: &["draft", "archived", "recent", "personal"] },
    Service { namespace: "spotify", product: "Spotify", container: "library", container_param: "market",
        nouns: &["track", "playlist", "album", "artist", "queue", "device", "podcast_episode"],
        verbs: &["play", "pause", "skip", "save", "follow", "shuffle"],
        adjectives: &["saved", "recent", "top", "recommended", "followed"] },
    Service { namespace: "youtube", product: "YouTube", container: "channel", container_param: "channel_id",
        nouns: &["video", "playlist", "comment", "caption", "live_stream"],
        verbs: &["upload", "publish", "like", "moderate"],
        adjectives: &["private", "unlisted", "recent", "popular", "scheduled"] },
    Service { namespace: "currency", product: "the exchange-rate service", container: "market", container_param: "base_currency",
        nouns: &["exchange_rate", "currency", "rate_history", "crypto_price"],
        verbs: &["fetch", "compare", "convert"],
        adjectives: &["latest", "historical", "daily", "supported"] },
    Service { namespace: "twilio", product: "Twilio", container: "account", container_param: "account_sid",
        nouns: &["message", "call", "phone_number", "recording", "conversation"],
        verbs: &["send", "buy", "release", "redact", "transcribe"],
        adjectives: &["inbound", "outbound", "failed", "recent", "missed"] },
    Service { namespace: "web", product: "the web", container: "site", container_param: "url",
        nouns: &["page", "link", "sitemap", "screenshot", "search_result", "feed"],
        verbs: &["fetch", "crawl", "scrape", "extract", "capture", "check"],
        adjectives: &["broken", "cached", "recent", "external"] },
    Service { namespace: "browser", product: "the browser", container: "tab", container_param: "tab_id",
        nouns: &["page", "tab", "cookie", "form", "download", "console_log"],
        verbs: &["open", "close", "navigate", "fill", "capture", "clear"],
        adjectives: &["active", "open", "recent", "saved"] },
    Service { namespace: "pagerduty", product: "PagerDuty", container: "account", container_param: "service_id",
        nouns: &["incident", "alert", "schedule", "escalation_policy", "service", "on_call_shift"],
        verbs: &["acknowledge", "resolve", "escalate", "snooze", "reassign", "trigger"],
        adjectives: &["triggered", "acknowledged", "resolved", "open", "urgent", "recent"] },
    Service { namespace: "sentry", product: "Sentry", container: "organization", container_param: "project",
        nouns: &["issue", "event", "release", "alert_rule", "crash_report"],
        verbs: &["resolve", "ignore", "assign", "merge", "mute"],
        adjectives: &["unresolved", "new", "regressed", "recent", "frequent"] },
    Service { namespace: "datadog", product: "Datadog", container: "organization", container_param: "org",
        nouns: &["monitor", "metric", "dashboard", "log", "incident", "alert"],
        verbs: &["mute", "unmute", "resolve", "query", "tail", "snapshot"],
        adjectives: &["triggered", "muted", "noisy", "recent", "custom"] },
    Service { namespace: "shell", product: "the host", container: "session", container_param: "session_id",
        nouns: &["process", "command_history", "environment_variable", "background_job", "script"],
        verbs: &["kill", "start", "stop", "read", "set", "tail"],
        adjectives: &["running", "recent", "failed", "long_running"] },
    Service { namespace: "hubspot", product: "HubSpot", container: "portal", container_param: "portal_id",
        nouns: &["contact", "deal", "company", "ticket", "note", "email_campaign"],
        verbs: &["assign", "merge", "associate", "enroll", "log"],
        adjectives: &["open", "closed", "recent", "unassigned", "won", "lost"] },
    Service { namespace: "salesforce", product: "Salesforce", container: "org", container_param: "org_id",
        nouns: &["account", "opportunity", "lead", "case", "report", "task"],
        verbs: &["assign", "convert", "close", "escalate", "run"],
        adjectives: &["open", "closed", "hot", "recent", "unassigned"] },
    Service { namespace: "zoom", product: "Zoom", container: "account", container_param: "user_id",
        nouns: &["meeting", "recording", "participant", "webinar", "meeting_summary"],
        verbs: &["schedule", "start", "end", "record", "transcribe"],
        adjectives: &["upcoming", "recurring", "past", "cloud", "recent"] },
    Service { namespace: "analytics", product: "the analytics service", container: "property", container_param: "property_id",
        nouns: &["report", "dashboard", "metric", "funnel", "user_segment"],
        verbs: &["run", "schedule", "share", "compare"],
        adjectives: &["weekly", "monthly", "daily", "custom", "real_time"] },
    Service { namespace: "ci", product: "the CI service", container: "pipeline", container_param: "pipeline_id",
        nouns: &["build", "test_run", "test_suite", "artifact", "deployment"],
        verbs: &["run", "retry", "cancel", "approve", "trigger", "download"],
        adjectives: &["failed", "flaky", "running", "recent", "scheduled"] },
];

/// Verbs every service has, besides its own.
const COMMON_VERBS: &[&str] = &[
    "list", "get", "search", "count", "export", "create", "update", "delete",
];

/// Verbs whose object is plural (`list_open_issues`).
const LIST_VERBS: &[&str] = &["list", "search", "count", "export", "compare", "prune"];

/// Second sentences of distractor descriptions: `{n}` a thing, `{ns}` things, `{c}` the
/// container, `{p}` the product.
#[rustfmt::skip]
const SECOND_SENTENCES: &[&str] = &[
    "Returns at most `limit` {ns} per call; pass `cursor` to get the next page.",
    "Use it to find a {n}'s id before changing it.",
    "Only {ns} the signed-in user has access to are included.",
    "Everyone in the {c} sees the change.",
    "The result has each {n}'s author, status and time of last update.",
    "Needs admin access to the {c}.",
    "Handy for weekly reports and team dashboards.",
    "Times are in UTC unless `timezone` is given.",
    "Runs in the background and notifies the team when it has finished.",
    "Deleted {ns} can be restored for 30 days.",
    "{p} limits this to 60 calls a minute.",
    "Fails if the {n} was changed by someone else in the meantime.",
    "The {n} keeps its history; nothing is lost.",
    "Set `dry_run` to see what would happen without changing anything.",
];

/// Parameters any distractor may take besides its own.
#[rustfmt::skip]
const COMMON_PARAMETERS: &[(&str, &str)] = &[
    ("limit", "integer"), ("cursor", "string"), ("query", "string"), ("since", "string"),
    ("until", "string"), ("status", "string"), ("timezone", "string"), ("format", "string"),
    ("include_archived", "boolean"), ("sort", "string"), ("fields", "array"),
    ("dry_run", "boolean"), ("user_email", "string"), ("message", "string"),
    ("title", "string"), ("description", "string"),
];

/// splitmix64: a well-mixed 64-bit value from any state, so that the distractors are the
/// same on every run and machine without an RNG crate.
fn splitmix64(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Draws from one seed, each from fresh bits.
struct Draws(u64);

impl Draws {
    fn below(&mut self, n: usize) -> usize {
        self.0 = splitmix64(self.0);
        // `n` is a small table length: the modulo bias is nothing here.
        (self.0 % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// `pull_request` → `pull requests`.
fn plural(words: &str) -> String {
    if let Some(stem) = words.strip_suffix('y') {
        if !stem.ends_with(['a', 'e', 'o', 'u']) {
            return format!("{stem}ies");
        }
    }
    if words.ends_with(['s', 'x']) || words.ends_with("ch") || words.ends_with("sh") {
        return format!("{words}es");
    }
    format!("{words}s")
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `close` → `closes`, `copy` → `copies`, `push` → `pushes`: as a plural is made.
fn third_person(verb: &str) -> String {
    plural(verb)
}

/// One distractor from one seed: a name, maybe a title, a sentence or two and 1–4
/// parameters.
fn distractor(seed: u64) -> Value {
    let mut d = Draws(seed);
    let service = d.pick(SERVICES);
    let verb = if d.chance(50) {
        *d.pick(COMMON_VERBS)
    } else {
        *d.pick(service.verbs)
    };
    let lists = LIST_VERBS.contains(&verb);
    let noun = *d.pick(service.nouns);
    // No `archive_archived_…` nor `…_recurring_recurring_event`: an adjective that
    // repeats the verb or the thing is dropped.
    let adjective = d
        .chance(35)
        .then(|| *d.pick(service.adjectives))
        .filter(|a| !a.starts_with(&verb[..verb.len().min(4)]) && !noun.contains(*a));
    let noun_words = noun.replace('_', " ");
    let (name_noun, text_noun) = if lists {
        (plural(noun), plural(&noun_words))
    } else {
        (noun.to_owned(), noun_words.clone())
    };
    let name = match adjective {
        Some(a) => format!("{}__{verb}_{a}_{name_noun}", service.namespace),
        None => format!("{}__{verb}_{name_noun}", service.namespace),
    };
    let thing = match adjective {
        Some(a) => format!("{} {text_noun}", a.replace('_', " ")),
        None => text_noun.clone(),
    };
    let article = if lists {
        "the"
    } else if thing.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    let place = match d.below(4) {
        0 => format!("in {}", service.product),
        1 if service.product.starts_with("the ") => {
            format!("in a {} of {}", service.container, service.product)
        }
        1 => format!("of a {} {}", service.product, service.container),
        2 => format!("in the given {}", service.container),
        _ => format!("for the signed-in user in {}", service.product),
    };
    let mut description = format!(
        "{} {article} {thing} {place}.",
        capitalized(&third_person(verb))
    );
    if d.chance(60) {
        let second = d
            .pick(SECOND_SENTENCES)
            .replace("{ns}", &plural(&noun_words))
            .replace("{n}", &noun_words)
            .replace("{c}", service.container)
            .replace("{p}", service.product);
        description.push(' ');
        description.push_str(&capitalized(&second));
    }
    let mut props = Map::new();
    let own = format!("{}_id", noun.rsplit('_').next().unwrap_or(noun));
    props.insert(
        own.clone(),
        json!({"type": "string", "description": format!("The {noun_words}'s id.")}),
    );
    let mut required = vec![own];
    if d.chance(50) {
        props.insert(
            service.container_param.to_owned(),
            json!({"type": "string", "description": format!("The {}.", service.container)}),
        );
        required.push(service.container_param.to_owned());
    }
    for _ in 0..d.below(3) {
        let &(p, ty) = d.pick(COMMON_PARAMETERS);
        props.insert(p.to_owned(), json!({"type": ty}));
    }
    let mut t = json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": props, "required": required},
    });
    if d.chance(70) {
        if let Some(obj) = t.as_object_mut() {
            obj.insert(
                "title".into(),
                json!(capitalized(&format!("{verb} {thing}"))),
            );
        }
    }
    t
}

/// `n` distractor tools, the same on every call (`generated(n)` is a prefix of
/// `generated(n + 1)`): services, verbs, things and adjectives from the hand-written tools'
/// domains (`github__list_open_issues`, `jira__update_ticket`, `files__read_archive`…),
/// each with a sentence or two and 1–4 parameters. Names are unique and none is a
/// hand-written tool's.
pub fn generated(n: usize) -> Vec<Value> {
    let mut seen: std::collections::HashSet<String> = hand_written()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    let mut out = Vec::with_capacity(n);
    let mut seed = 0u64;
    while out.len() < n {
        let t = distractor(seed);
        seed += 1;
        if let Some(name) = t["name"].as_str() {
            if seen.insert(name.to_owned()) {
                out.push(t);
            }
        }
    }
    out
}
