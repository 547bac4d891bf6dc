//! Words of a tool's fields and of a query, made comparable: split on anything that is not
//! a letter or digit and at `camelCase` humps (so `snake_case`, `kebab-case`, namespaces
//! `github__create_issue` and `createIssue` all come apart), lowercased, short English
//! function words dropped, and light suffix stemming (plurals, `-ing`, `-ed`, a final
//! `e`) so that `issues`, `issue`, `scheduled` and `scheduling` meet their kin. Documents
//! and queries go through the same function.

/// Calls `each` with every term of `text`, in order (a term may repeat).
pub(crate) fn for_each_term(text: &str, mut each: impl FnMut(&str)) {
    let mut word = String::new();
    let mut emit = |piece: &str| {
        word.clear();
        if piece.is_ascii() {
            word.push_str(piece);
            word.make_ascii_lowercase();
        } else {
            word.extend(piece.chars().flat_map(char::to_lowercase));
        }
        if is_stop_word(&word) {
            return;
        }
        stem(&mut word);
        if !word.is_empty() {
            each(&word);
        }
    };
    if !text.is_ascii() {
        for run in text.split(|c: char| !c.is_alphanumeric()) {
            if !run.is_empty() {
                humps(run).for_each(&mut emit);
            }
        }
        return;
    }
    // The same, on bytes: most tool text is ASCII, and this is the index build's hot loop.
    let b = text.as_bytes();
    let mut start = None;
    for i in 0..=b.len() {
        match (b.get(i), start) {
            (Some(c), None) if c.is_ascii_alphanumeric() => start = Some(i),
            (Some(c), Some(s)) if c.is_ascii_alphanumeric() => {
                let p = b[i - 1];
                let hump = c.is_ascii_uppercase()
                    && (p.is_ascii_lowercase()
                        || (p.is_ascii_uppercase()
                            && b.get(i + 1).is_some_and(u8::is_ascii_lowercase)));
                if hump {
                    emit(&text[s..i]);
                    start = Some(i);
                }
            }
            (_, Some(s)) => {
                emit(&text[s..i]);
                start = None;
            }
            (_, None) => {}
        }
    }
}

/// The terms of `text`, in order.
#[cfg(test)]
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_term(text, |t| out.push(t.to_owned()));
    out
}

/// `run` (letters and digits only) cut at its `camelCase` humps: before an upper-case
/// letter that follows a lower-case one (`createIssue`), and before the last capital of an
/// acronym followed by a lower-case letter (`HTTPServer` → `HTTP`, `Server`).
fn humps(run: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    let mut chars = run.char_indices().peekable();
    let mut prev: Option<char> = None;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        while let Some((i, c)) = chars.next() {
            let cut = match prev {
                Some(p) if c.is_uppercase() => {
                    p.is_lowercase()
                        || (p.is_uppercase()
                            && chars.peek().is_some_and(|&(_, n)| n.is_lowercase()))
                }
                _ => false,
            };
            prev = Some(c);
            if cut && i > start {
                let piece = &run[start..i];
                start = i;
                return Some(piece);
            }
        }
        done = true;
        Some(&run[start..])
    })
}

/// Function words that say nothing about what a tool does, as a request phrases it
/// ("what will the weather be like in …"). At most 8 bytes each (see [`packed`]).
#[rustfmt::skip]
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been",
    "being", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has",
    "have", "he", "her", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "just", "let", "like", "me", "my", "no", "not", "of", "on", "or", "our", "please",
    "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "to", "us", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
    "your",
];

/// A word of at most 8 bytes as one integer (zero-padded: words have no NUL), so that looking a stop word up
/// is a binary search over integers rather than string comparisons: it is done for every
/// word of every tool.
fn packed(word: &str) -> Option<u64> {
    let b = word.as_bytes();
    (b.len() <= 8).then(|| {
        let mut bytes = [0u8; 8];
        bytes[..b.len()].copy_from_slice(b);
        u64::from_be_bytes(bytes)
    })
}

fn is_stop_word(word: &str) -> bool {
    static PACKED: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();
    let stop = PACKED.get_or_init(|| {
        let mut p: Vec<u64> = STOP_WORDS.iter().filter_map(|w| packed(w)).collect();
        p.sort_unstable();
        p
    });
    packed(word).is_some_and(|w| stop.binary_search(&w).is_ok())
}

fn is_vowel(b: u8) -> bool {
    matches!(b, b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// Strips `suffix` from `word` if what remains has at least three letters and a vowel.
fn strip_verb_ending(word: &mut String, suffix: &str) -> bool {
    let Some(rest) = word.strip_suffix(suffix) else {
        return false;
    };
    if rest.len() < 3 || !rest.bytes().any(is_vowel) {
        return false;
    }
    word.truncate(rest.len());
    // `running` → `runn` → `run`; but `calling` stays `call`, `passed` `pass`.
    let b = word.as_bytes();
    let n = b.len();
    if n >= 4
        && b[n - 1] == b[n - 2]
        && !is_vowel(b[n - 1])
        && !matches!(b[n - 1], b'l' | b's' | b'z')
    {
        word.pop();
    }
    true
}

/// Light suffix stemming of a lowercase word, in place. Only plain ASCII words longer
/// than three letters are touched (numbers, codes and other scripts are left as they are).
/// Not a linguist's stemmer: it aims at making a word's forms meet, not at real roots
/// (`issue` and `issues` both become `issu`).
pub(crate) fn stem(word: &mut String) {
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return;
    }
    // Plurals (and third persons): `queries`, `addresses`, `branches`, `boxes`, `issues`.
    if word.len() > 4 && word.ends_with("ies") {
        word.truncate(word.len() - 3);
        word.push('y');
    } else if word.ends_with("sses")
        || word.ends_with("xes")
        || word.ends_with("ches")
        || word.ends_with("shes")
        || word.ends_with("zzes")
    {
        word.truncate(word.len() - 2);
    } else if word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        word.pop();
    }
    // Verb endings: `replied`, `scheduling`, `finished`.
    if word.len() > 4 && word.ends_with("ied") {
        word.truncate(word.len() - 3);
        word.push('y');
    } else if !strip_verb_ending(word, "ing") {
        strip_verb_ending(word, "ed");
    }
    // A final `e`, so that `schedule` meets `scheduling` and `page` `paged`.
    if word.len() >= 4 && word.ends_with('e') {
        word.pop();
    }
}

/// Words a request may use for what a tool's text says otherwise: groups of synonyms and
/// near-synonyms of the vocabulary tool catalogs share (actions on things, the things of
/// common services, their usual abbreviations). A query term in a group brings in the
/// group's other words, at a discount (see [`Bm25::synonym_weight`]). General word
/// knowledge only: no names of products, people or places, no instances of a class
/// (no genre of music, no city).
///
/// [`Bm25::synonym_weight`]: super::Bm25::synonym_weight
const SYNONYMS: &[&[&str]] = &[
    // Actions.
    &["create", "add", "new", "make", "open"],
    &["send", "post", "notify", "tell", "inform", "announce"],
    &["delete", "remove", "erase", "destroy", "trash"],
    &["update", "edit", "modify", "change", "amend"],
    &["get", "fetch", "retrieve", "grab", "obtain"],
    &["read", "view", "show", "display", "open"],
    &["download", "save", "export"],
    &["upload", "attach", "import"],
    &["search", "find", "lookup", "locate", "grep"],
    &["list", "enumerate", "browse"],
    &["run", "execute", "exec", "launch", "invoke"],
    &["start", "begin", "launch"],
    &["stop", "halt", "terminate", "kill", "abort"],
    &["cancel", "abort", "revoke"],
    &["restart", "reboot", "reload"],
    &["close", "resolve", "finish", "complete"],
    &["share", "grant", "access", "permission", "invite"],
    &["schedule", "book", "arrange", "plan"],
    &["approve", "accept", "authorize"],
    &["reject", "decline", "deny"],
    &["acknowledge", "ack"],
    &["silence", "mute", "snooze"],
    &["remind", "reminder"],
    &["summarize", "summary", "digest", "recap"],
    &["convert", "conversion", "exchange"],
    &["translate", "translation", "interpret"],
    &["play", "listen", "stream"],
    &["pause", "stop"],
    &["scale", "resize"],
    &["deploy", "deployment", "release", "rollout", "ship"],
    &["merge", "integrate", "land"],
    &["refund", "reimburse", "chargeback"],
    &["pay", "payment", "charge"],
    &["login", "signin", "authenticate", "auth"],
    &["sign", "register", "signup", "enroll"],
    // Things.
    &["bug", "issue", "ticket", "defect", "problem"],
    &["crash", "error", "exception", "failure", "panic"],
    &["incident", "alert", "outage", "alarm"],
    &["database", "db", "sql", "table"],
    &["query", "sql"],
    &["document", "doc", "file"],
    &["spreadsheet", "sheet", "workbook"],
    &["wiki", "page", "doc", "knowledge base"],
    &["note", "memo", "minutes"],
    &["meeting", "event", "appointment"],
    &["calendar", "agenda", "schedule"],
    &["channel", "room", "chat"],
    &["message", "chat", "dm"],
    &["team", "group", "squad"],
    &["repository", "repo", "codebase"],
    &["pr", "pull request", "merge request"],
    &["commit", "changeset"],
    &["content", "text", "body"],
    &[
        "url", "link", "website", "site", "web", "webpage", "http", "https",
    ],
    &["user", "account", "member", "person", "people"],
    &["customer", "client", "buyer"],
    &["money", "payment", "fund", "cash", "amount"],
    &["currency", "money", "exchange rate"],
    &["price", "pricing", "cost"],
    &["order", "purchase"],
    &["invoice", "bill", "billing"],
    &["email", "mail", "inbox"],
    &["sms", "text", "texting"],
    &["call", "phone", "dial", "ring"],
    &["shell", "terminal", "command", "console", "cli"],
    &["directions", "route", "navigate", "navigation", "itinerary"],
    &["weather", "forecast"],
    &["song", "track", "tune", "music"],
    &["picture", "photo", "image"],
    &["video", "clip", "movie"],
    &["folder", "directory", "dir"],
    &["task", "todo", "chore"],
    &["config", "configuration", "setting"],
    &["log", "logging", "trace"],
    &["server", "host", "machine"],
];

/// For a (stemmed) term, the (stemmed) terms of its synonyms, the term itself left out.
pub(crate) fn synonyms(term: &str) -> &'static [Box<str>] {
    static TABLE: std::sync::OnceLock<ahash::AHashMap<Box<str>, Vec<Box<str>>>> =
        std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut table: ahash::AHashMap<Box<str>, Vec<Box<str>>> = ahash::AHashMap::new();
        for group in SYNONYMS {
            let mut terms: Vec<Vec<String>> = Vec::new();
            for phrase in *group {
                let mut t = Vec::new();
                for_each_term(phrase, |w| t.push(w.to_owned()));
                terms.push(t);
            }
            for (i, own) in terms.iter().enumerate() {
                // A phrase ("pull request") brings its group, not its own words, in.
                let [own] = own.as_slice() else { continue };
                let entry = table.entry(own.as_str().into()).or_default();
                for (j, other) in terms.iter().enumerate() {
                    for w in other {
                        if j != i && w != own && !entry.iter().any(|e| **e == **w) {
                            entry.push(w.as_str().into());
                        }
                    }
                }
            }
        }
        table
    });
    table.get(term).map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_names_of_every_style() {
        assert_eq!(terms("github__create_issue"), ["github", "creat", "issu"]);
        assert_eq!(terms("createIssue"), ["creat", "issu"]);
        assert_eq!(terms("list-open-issues"), ["list", "open", "issu"]);
        assert_eq!(
            terms("HTTPServer parseURL"),
            ["http", "server", "pars", "url"]
        );
        assert_eq!(terms("ISO 4217 s3_object"), ["iso", "4217", "s3", "object"]);
    }

    #[test]
    fn the_stop_words_are_short_and_found() {
        assert!(STOP_WORDS.iter().all(|w| w.len() <= 8));
        assert!(STOP_WORDS.iter().all(|w| is_stop_word(w)));
        assert!(!is_stop_word("th") && !is_stop_word("thee") && !is_stop_word(""));
    }

    #[test]
    fn the_ascii_path_agrees_with_the_general_one() {
        for text in [
            "github__create_issue createIssue HTTPServer parseURL ABC aB Ab a",
            "What will the weather be like in Paris, tomorrow? x2Y 3pm s3_object",
            "--__a__--B-cD_EFg hIJKlm",
        ] {
            // A non-ASCII character at the end sends the text down the general path.
            let mut general = terms(&format!("{text} é"));
            assert_eq!(general.pop().as_deref(), Some("é"));
            assert_eq!(terms(text), general, "{text}");
        }
    }

    #[test]
    fn drops_stop_words_and_punctuation() {
        assert_eq!(
            terms("What will the weather be like in Paris, tomorrow?"),
            ["weather", "paris", "tomorrow"]
        );
        assert!(terms("the of and to").is_empty());
        assert!(terms("").is_empty());
        assert!(terms("  --__!! ").is_empty());
    }

    #[test]
    fn forms_of_a_word_meet() {
        let same = |a: &str, b: &str| assert_eq!(terms(a), terms(b), "{a} vs {b}");
        same("issue", "issues");
        same("query", "queries");
        same("schedule", "scheduling");
        same("schedule", "scheduled");
        same("page", "paged");
        same("paging", "pages");
        same("meeting", "meetings");
        same("branch", "branches");
        same("address", "addresses");
        same("run", "running");
        same("call", "calling");
        same("add", "adding");
        same("deploy", "deployed");
        same("finish", "finished");
        same("reply", "replied");
        same("create", "creating");
        same("file", "files");
        same("share", "shared");
        assert_eq!(
            terms("status access analysis"),
            ["status", "access", "analysis"]
        );
        assert_eq!(terms("string need"), ["string", "need"]);
    }

    #[test]
    fn other_scripts_and_numbers_pass_through() {
        assert_eq!(terms("Café Straße"), ["café", "straße"]);
        assert_eq!(terms("天気 予報"), ["天気", "予報"]);
        assert_eq!(terms("1234 3pm"), ["1234", "3pm"]);
        // Upper case that grows when lowered, and a lone combining mark: no panic.
        let _ = terms("İSTANBUL \u{301} ǅungla");
    }

    #[test]
    fn synonyms_are_stemmed_symmetric_and_leave_the_word_out() {
        let of = |w: &str| -> Vec<&str> { synonyms(w).iter().map(|s| &**s).collect() };
        // Stemmed, both ways.
        assert!(of("bug").contains(&"issu"));
        assert!(of("issu").contains(&"bug"));
        assert!(of("meet").contains(&"event"));
        assert!(!of("bug").contains(&"bug"));
        // A phrase brings its words in, but is not looked up word by word.
        assert!(of("pr").contains(&"pull") && of("pr").contains(&"request"));
        assert!(!of("pull").contains(&"pr"));
        // Unknown words and stop words have none.
        assert!(of("kangaroo").is_empty());
        assert!(of("the").is_empty());
        // Every word of the table is in a form a document's word can take.
        for group in SYNONYMS {
            for phrase in *group {
                let mut n = 0;
                for_each_term(phrase, |_| n += 1);
                assert!(n > 0, "{phrase:?} is all stop words");
            }
        }
    }
}
