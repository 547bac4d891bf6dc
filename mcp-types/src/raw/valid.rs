//! Splitting text already known to be JSON (a [`RawValue`](serde_json::value::RawValue)'s,
//! which is valid by construction) into its top-level members, without checking it again.
//!
//! A relay reads the same bytes several times: the envelope reader checks the whole line,
//! then the params are split into members, then `_meta` is. Only the first read needs to
//! check anything; the others only need to know where each value ends, which is where its
//! brackets balance outside strings. That is all this reader looks for.
//!
//! It is only ever a shortcut, as [`scan`](super::scan) is: what it does not take on
//! (escaped member names, nesting past [`MAX_DEPTH`], text that turns out not to be an
//! object) gives `None`, and the caller reads the text with the checking reader. Given
//! text that is not JSON after all, it never panics and always ends; its spans are then
//! meaningless but always on character boundaries.

use std::borrow::Cow;
use std::fmt;

use memchr::memchr2;

use super::scan::{quote_or_backslash, HIGH_BITS};
use super::{prewritten_ref, RawObject};

/// Deepest nesting followed here, as in [`scan`](super::scan): deeper text goes to the
/// checking reader, whose verdict on depth is the one that counts.
const MAX_DEPTH: u32 = 64;

impl<'a> RawObject<'a> {
    /// The members of `text`, known to be JSON; `None` leaves it to [`RawObject::parse`].
    pub(super) fn split_valid(text: &'a str) -> Option<Self> {
        let mut members = Vec::with_capacity(4);
        let mut raw = true;
        self::members(text, |key, value| match prewritten_ref(value) {
            Some(v) => members.push((Cow::Borrowed(key), Cow::Borrowed(v))),
            None => raw = false,
        })?;
        raw.then_some(RawObject {
            members,
            source: None,
        })
    }
}

/// Calls `member` with each top-level member of the object `raw`, in order, each value
/// lent from its text: the same members [`RawObject::from_raw`] gives, without building
/// one. For what only looks a few members up once (a request's `_meta` envelope), this
/// saves the object's allocation. Members whose value could not be lent (none, for text
/// the checking reader accepts) are skipped.
pub fn for_each_member<'a>(
    raw: &'a serde_json::value::RawValue,
    mut member: impl FnMut(&str, &'a serde_json::value::RawValue),
) -> Result<(), super::Error> {
    let mut given = 0;
    let done = members(raw.get(), |key, value| {
        given += 1;
        if let Some(v) = prewritten_ref(value) {
            member(key, v);
        }
    });
    if done.is_some() {
        return Ok(());
    }
    // An escaped name, deep nesting, or no object at all: the checking reader decides,
    // and gives the members already given first, in the same order.
    let o = RawObject::parse(raw.get())?;
    for (key, value) in o.members.iter().skip(given) {
        if let Cow::Borrowed(v) = value {
            member(key, v);
        }
    }
    Ok(())
}

/// Calls `member` with each top-level member's name and value text of `text`, which must
/// be one JSON object whose member names have no escapes.
pub(crate) fn members<'a>(text: &'a str, mut member: impl FnMut(&'a str, &'a str)) -> Option<()> {
    let b = text.as_bytes();
    let mut at = ws(b, 0);
    if *b.get(at)? != b'{' {
        return None;
    }
    at = ws(b, at + 1);
    if *b.get(at)? != b'}' {
        loop {
            if *b.get(at)? != b'"' {
                return None;
            }
            let (end, escaped) = string_end(b, at + 1)?;
            if escaped {
                return None;
            }
            let name = text.get(at + 1..end)?;
            at = ws(b, end + 1);
            if *b.get(at)? != b':' {
                return None;
            }
            let start = ws(b, at + 1);
            at = value_end(b, start)?;
            member(name, text.get(start..at)?);
            at = ws(b, at);
            match *b.get(at)? {
                b',' => at = ws(b, at + 1),
                b'}' => break,
                _ => return None,
            }
        }
    }
    (ws(b, at + 1) == b.len()).then_some(())
}

/// Every string of `text`, which should be JSON, keys and values alike, in order (see
/// [`Strings`]). Each is found eight bytes at a time: a search for every string's text
/// in a payload (a translator's triggers) costs about one pass over it.
pub fn strings(text: &str) -> Strings<'_> {
    Strings {
        b: text.as_bytes(),
        at: 0,
    }
}

/// The strings of JSON text (see [`strings`]): each one's text between its quotes, and
/// whether that text holds escapes (then it is not the string's value). A string that
/// never ends (the text was not JSON after all) ends the iteration with `Err`.
pub struct Strings<'a> {
    b: &'a [u8],
    at: usize,
}

/// A string in text that should have been JSON never ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unterminated;

impl fmt::Display for Unterminated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON string never ends")
    }
}

impl std::error::Error for Unterminated {}

impl<'a> Iterator for Strings<'a> {
    type Item = Result<(&'a [u8], bool), Unterminated>;

    fn next(&mut self) -> Option<Self::Item> {
        // Outside strings, JSON holds no backslash: the first stop is an opening quote.
        let open = stop_at(self.b, self.at)?;
        let start = open + 1;
        let Some((end, escaped)) = string_end(self.b, start) else {
            self.at = self.b.len();
            return Some(Err(Unterminated));
        };
        self.at = end + 1;
        Some(Ok((&self.b[start..end], escaped)))
    }
}

/// The first byte at or after `at` that is not JSON whitespace.
fn ws(b: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(at) {
        at += 1;
    }
    at
}

/// Where the value starting at `at` ends (one past its last byte).
fn value_end(b: &[u8], at: usize) -> Option<usize> {
    match *b.get(at)? {
        b'"' => Some(string_end(b, at + 1)?.0 + 1),
        b'{' | b'[' => container_end(b, at),
        _ => {
            // A number or a literal: it runs to the next delimiter.
            let len = b[at..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t'))
                .unwrap_or(b.len() - at);
            (len > 0).then_some(at + len)
        }
    }
}

/// Where the object or array opening at `at` closes (one past its bracket).
fn container_end(b: &[u8], mut at: usize) -> Option<usize> {
    let mut depth = 0u32;
    while let Some(&c) = b.get(at) {
        match c {
            b'"' => {
                at = string_end(b, at + 1)?.0;
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return None;
                }
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// The closing quote of the string whose text starts at `at`, and whether the string
/// holds escapes.
fn string_end(b: &[u8], mut at: usize) -> Option<(usize, bool)> {
    let mut escaped = false;
    loop {
        let stop = stop_at(b, at)?;
        if b[stop] == b'"' {
            return Some((stop, escaped));
        }
        escaped = true;
        // The escaped character is never a quote that ends the string; the rest of a
        // `\uXXXX` is hex digits, which the search passes over.
        at = stop + 2;
    }
}

/// The first quote or backslash at or after `at`: the first bytes eight at a time (most
/// strings are short, and a call to `memchr2` costs more than such a string), the rest of
/// a long one searched, so a large payload is passed over at the speed of a search.
fn stop_at(b: &[u8], mut at: usize) -> Option<usize> {
    let words_end = b.len().min(at.saturating_add(64));
    while at + 8 <= words_end {
        let chunk = b.get(at..at + 8)?;
        let flags = quote_or_backslash(u64::from_le_bytes(chunk.try_into().ok()?)) & HIGH_BITS;
        if flags != 0 {
            return Some(at + flags.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    Some(at + memchr2(b'"', b'\\', b.get(at..)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Option<Vec<(&str, &str)>> {
        let mut out = Vec::new();
        members(text, |k, v| out.push((k, v)))?;
        Some(out)
    }

    /// What the checking reader splits `text` into.
    fn checked(text: &str) -> Option<Vec<(String, String)>> {
        let o = super::super::RawObject::parse(text).ok()?;
        Some(
            o.iter()
                .map(|(k, v)| (k.to_string(), v.get().to_owned()))
                .collect(),
        )
    }

    #[test]
    fn valid_objects_split_as_the_checking_reader_splits_them() {
        for text in [
            "{}",
            " { } ",
            r#"{"a":1}"#,
            r#"{"n":123456789012345678901234567890,"f":-1.5e+3,"t":true,"z":null}"#,
            r#"{"s":"q\"uo\\te\\","u":"\u00e9\uD83D\uDE00","long":"abcdefghijklmnopqrstuvwxyz0123456789\"}"}"#,
            r#"{"o":{"b":[1,{"c":"]}"}],"a":{}},"e":[],"k":"v"}"#,
            "{\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : { \"c\" : \"d\" } \n}\n",
            r#"{"dup":1,"dup":2}"#,
            "{\"é\":\"漢字\",\"x\":\"é漢字é漢字é漢字é漢字\"}",
        ] {
            let got = split(text).unwrap_or_else(|| panic!("taken: {text}"));
            let got: Vec<(String, String)> = got
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            assert_eq!(Some(got), checked(text), "{text}");
        }
    }

    #[test]
    fn each_member_is_given_once_in_order_even_when_the_checking_reader_takes_over() {
        let each = |text: &str| {
            let raw = super::super::prewritten(text.to_owned());
            let mut out = Vec::new();
            for_each_member(&raw, |k, v| out.push(format!("{k}={}", v.get())))
                .map(|()| out)
                .ok()
        };
        let want = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            each(r#"{"a":1,"b":{"c":[2]}}"#),
            want(&["a=1", r#"b={"c":[2]}"#])
        );
        // The second name is escaped: the splitter gives up after the first member.
        assert_eq!(
            each(r#"{"a":1,"\u0062":2,"c":3}"#),
            want(&["a=1", "b=2", "c=3"])
        );
        assert_eq!(each("{}"), want(&[]));
        assert_eq!(each("[1]"), None);
    }

    #[test]
    fn what_it_does_not_take_on_is_left_to_the_checking_reader() {
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(65), "]".repeat(65));
        for text in ["[1]", "1", r#"{"\u0061":1}"#, r#"{"a":1} x"#, deep.as_str()] {
            assert!(split(text).is_none(), "{text}");
        }
    }

    /// Random JSON objects, their members in every shape and spacing, split as the
    /// checking reader splits them; cut short anywhere, they never panic.
    #[test]
    fn random_objects_split_as_the_checking_reader_splits_them() {
        let mut next = super::super::xorshift(0x2545_f491_4f6c_dd1d);
        const ATOMS: &[&str] = &[
            "0",
            "-12.5e+3",
            "123456789012345678901234567890",
            "true",
            "null",
            r#""""#,
            r#""\"""#,
            r#""a \"quoted\" \\ string, longer than a word or two""#,
            "\"é漢字\"",
            "[]",
            "{}",
        ];
        const SPACE: &[&str] = &["", " ", "\n\t", "\r\n  "];
        fn value(next: &mut impl FnMut() -> u64, depth: u32, out: &mut String) {
            let pick = |next: &mut dyn FnMut() -> u64, n: usize| (next() % n as u64) as usize;
            match next() % if depth > 4 { 1 } else { 3 } {
                0 => out.push_str(ATOMS[pick(next, ATOMS.len())]),
                kind => {
                    let object = kind == 2;
                    out.push(if object { '{' } else { '[' });
                    for i in 0..next() % 4 {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(SPACE[pick(next, SPACE.len())]);
                        if object {
                            out.push_str(&format!("\"k{i}]}}\":"));
                        }
                        value(next, depth + 1, out);
                        out.push_str(SPACE[pick(next, SPACE.len())]);
                    }
                    out.push(if object { '}' } else { ']' });
                }
            }
        }
        for _ in 0..3000 {
            let mut text = String::from("{");
            for i in 0..next() % 5 {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(SPACE[(next() % 4) as usize]);
                text.push_str(&format!(
                    "\"m{}\"{}:",
                    next() % 3,
                    SPACE[(next() % 4) as usize]
                ));
                value(&mut next, 0, &mut text);
            }
            text.push_str(SPACE[(next() % 4) as usize]);
            text.push('}');
            let got = split(&text).map(|m| {
                m.into_iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect::<Vec<_>>()
            });
            assert_eq!(got, checked(&text), "{text}");
            let cut = (next() % text.len() as u64) as usize;
            if let Some(prefix) = text.get(..cut) {
                let _ = split(prefix);
            }
        }
    }

    #[test]
    fn every_string_is_found_with_its_escapes() {
        let text = r#"{"a":["x\"y",1,{"\u00e9":""}],"long string past a word":"\\"}"#;
        let got: Vec<(String, bool)> = strings(text)
            .map(|s| s.map(|(t, e)| (String::from_utf8_lossy(t).into_owned(), e)))
            .collect::<Result<_, _>>()
            .expect("JSON");
        let want = [
            ("a", false),
            ("x\\\"y", true),
            ("\\u00e9", true),
            ("", false),
            ("long string past a word", false),
            ("\\\\", true),
        ];
        let want: Vec<(String, bool)> = want.iter().map(|(t, e)| (t.to_string(), *e)).collect();
        assert_eq!(got, want);
        assert_eq!(strings(r#"["ok","cut"#).nth(1), Some(Err(Unterminated)));
        assert_eq!(strings(r#"["ok","cut\"#).count(), 2);
        assert_eq!(strings("[1, 2]").count(), 0);
    }

    /// Past its first words a string is searched, not stepped through: its escapes and
    /// its end are found wherever they fall, and so is every string after it.
    #[test]
    fn a_long_strings_escapes_and_end_are_found_wherever_they_fall() {
        for before in [60, 63, 64, 65, 71, 72, 200] {
            let long = format!("{}\\\"{}", "x".repeat(before), "y".repeat(before));
            let text = format!(r#"{{"k":"{long}","after":"{}","z":1}}"#, "w".repeat(before));
            let got: Vec<(String, bool)> = strings(&text)
                .map(|s| s.map(|(t, e)| (String::from_utf8_lossy(t).into_owned(), e)))
                .collect::<Result<_, _>>()
                .expect("JSON");
            let want = vec![
                ("k".to_string(), false),
                (long.clone(), true),
                ("after".to_string(), false),
                ("w".repeat(before), false),
                ("z".to_string(), false),
            ];
            assert_eq!(got, want, "{before} bytes before the escape");
            let cut = &text[..text.len() - 12];
            assert_eq!(strings(cut).last(), Some(Err(Unterminated)), "{cut}");
        }
    }

    #[test]
    fn text_that_is_not_json_ends_without_a_panic() {
        for text in [
            "",
            "{",
            "{\"",
            "{\"a",
            "{\"a\"",
            "{\"a\":",
            "{\"a\":\"",
            "{\"a\":\"\\",
            "{\"a\":[",
            "{\"a\":]",
            "{\"a\":}",
            "{\"a\":1,",
            "{\"a\":1,}",
            "{\"é",
            "{\"a\":\"é\\",
        ] {
            let _ = split(text);
        }
    }
}
