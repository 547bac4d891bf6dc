//! Member names as redaction matches them: normalised (`X-Api-Key`, `api_key` and `apiKey`
//! are one name), and found in a document's text without building the document, so that
//! arguments with nothing to redact are written as they came.

/// Whether some member name in the JSON `text` (at any depth) contains one of `members`
/// once normalised, as redaction's walk would find it, read without building the
/// document: string by string, a string followed by `:` being a name. Text it cannot
/// read to the end says yes, so that it is read in full.
pub(crate) fn any_key_matches<'m>(
    text: &str,
    members: impl Iterator<Item = &'m str> + Clone,
) -> bool {
    if members.clone().next().is_none() {
        return false;
    }
    // One buffer per thread for the names: this runs for every audited call.
    thread_local! {
        static NAME: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
    }
    NAME.with_borrow_mut(|name_buf| scan(text, members, name_buf))
}

fn scan<'m>(
    text: &str,
    members: impl Iterator<Item = &'m str> + Clone,
    name_buf: &mut String,
) -> bool {
    let b = text.as_bytes();
    let mut at = 0;
    while let Some(q) = memchr::memchr(b'"', &b[at..]) {
        let start = at + q + 1;
        let mut end = start;
        let mut escaped = false;
        loop {
            match memchr::memchr2(b'"', b'\\', &b[end..]) {
                Some(k) if b[end + k] == b'\\' => {
                    escaped = true;
                    end += k + 2;
                }
                Some(k) => {
                    end += k;
                    break;
                }
                None => return true,
            }
            if end >= b.len() {
                return true;
            }
        }
        at = end + 1;
        let after = b[at..].iter().position(|c| !c.is_ascii_whitespace());
        if after.is_some_and(|p| b[at + p] == b':') {
            let name: std::borrow::Cow<'_, str> = match escaped {
                false => text[start..end].into(),
                true => match serde_json::from_str::<String>(&text[start - 1..=end]) {
                    Ok(s) => s.into(),
                    Err(_) => return true,
                },
            };
            normalise_into(&name, name_buf);
            if members.clone().any(|m| name_buf.contains(m)) {
                return true;
            }
        }
    }
    false
}

/// Lowercase, without `_` and `-`: `X-Api-Key`, `api_key` and `apiKey` are one name.
pub(crate) fn normalise(name: &str) -> String {
    let mut out = String::new();
    normalise_into(name, &mut out);
    out
}

/// [`normalise`] into `out` (emptied first): one buffer for every name of a call.
fn normalise_into(name: &str, out: &mut String) {
    out.clear();
    if name.is_ascii() {
        out.extend(
            name.bytes()
                .filter(|b| *b != b'_' && *b != b'-')
                .map(|b| char::from(b.to_ascii_lowercase())),
        );
        return;
    }
    out.extend(
        name.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase),
    );
}
