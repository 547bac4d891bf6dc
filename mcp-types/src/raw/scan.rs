//! A reader of JSON text for the common case, without serde: it checks what it reads as
//! strictly as serde_json does and hands back spans of the text.
//!
//! serde_json reads a raw value by walking it byte by byte; a relay reads every message
//! that way once for the envelope and again for each level it splits. This reader finds
//! string ends with `memchr` and checks the bytes in between in bulk, so the payload a
//! relay never looks into costs a fraction of that.
//!
//! It is only ever a shortcut: whatever it does not take on (escaped names, nesting past
//! [`MAX_DEPTH`], anything it finds wrong) makes it give up (`None`), and the caller reads
//! the text with serde_json, whose verdict and error messages are the ones that count.
//! So it may refuse valid JSON, never accept invalid JSON.

use memchr::memchr2;

/// Deepest nesting followed here; deeper text is left to serde_json (whose limit is 128).
const MAX_DEPTH: u32 = 64;

/// `0x0101…01`: a byte's value times this is that byte in every lane of a word.
const ONES: u64 = u64::MAX / 255;

/// The high bit of every byte of a word: where the word tests below leave their flags.
pub(super) const HIGH_BITS: u64 = ONES << 7;

/// A cursor over JSON text.
pub(crate) struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    /// A cursor at the start of `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Scanner { text, at: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The cursor's byte offset.
    pub(crate) fn position(&self) -> usize {
        self.at
    }

    /// Moves the cursor back to byte `at`, where it was before.
    pub(crate) fn rewind(&mut self, at: usize) {
        self.at = at.min(self.at);
    }

    /// The text from byte `start` to the cursor.
    pub(crate) fn text_from(&self, start: usize) -> Option<&'a str> {
        self.text.get(start..self.at)
    }

    /// Skips JSON whitespace.
    pub(crate) fn ws(&mut self) {
        let b = self.bytes();
        while let Some(c) = b.get(self.at) {
            if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                break;
            }
            self.at += 1;
        }
    }

    /// The byte at the cursor.
    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    /// Takes `c` at the cursor (after whitespace).
    pub(crate) fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.peek()? == c).then(|| self.at += 1)
    }

    /// Whether only whitespace is left.
    pub(crate) fn at_end(&mut self) -> bool {
        self.ws();
        self.at == self.text.len()
    }

    /// A string at the cursor (after whitespace): its text between the quotes, and
    /// whether it holds escapes (then the text is not the string's value).
    pub(crate) fn string(&mut self) -> Option<(&'a str, bool)> {
        self.ws();
        if self.peek()? != b'"' {
            return None;
        }
        let b = self.bytes();
        let start = self.at + 1;
        // Most strings are short and plain (names, tags, versions): their closing quote
        // is found in the first words. Kept apart from the rest, this loop is small enough
        // to keep its constants in registers.
        let mut at = start;
        while at < start + 64 {
            let Some(word) = b.get(at..at + 8) else { break };
            let word = u64::from_le_bytes(word.try_into().ok()?);
            if let Some(i) = first_stop(word) {
                let stop = at + i;
                if b.get(stop) != Some(&b'"') {
                    break;
                }
                self.at = stop + 1;
                return Some((self.text.get(start..stop)?, false));
            }
            at += 8;
        }
        // The words before `at` hold no stop: the rest goes on from there.
        self.string_rest(start, at)
    }

    /// [`Scanner::string`] for what its first loop leaves: escapes, a long string, one
    /// near the end of the text, or a byte a string may not hold.
    #[cold]
    #[inline(never)]
    fn string_rest(&mut self, start: usize, mut at: usize) -> Option<(&'a str, bool)> {
        let b = self.bytes();
        let mut escaped = false;
        loop {
            let stop = stop_at(b, at)?;
            if b[stop] == b'"' {
                self.at = stop + 1;
                return Some((self.text.get(start..stop)?, escaped));
            }
            escaped = true;
            at = stop + 1 + escape_len(&b[stop + 1..])?;
        }
    }

    /// One value at the cursor (after whitespace), checked whole: its text.
    pub(crate) fn value(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.at;
        // Bit n: whether the container at depth n+1 is an object.
        let mut objects: u64 = 0;
        let mut depth: u32 = 0;
        loop {
            // A value is expected here.
            self.ws();
            match self.peek()? {
                open @ (b'{' | b'[') => {
                    self.at += 1;
                    let close = if open == b'{' { b'}' } else { b']' };
                    self.ws();
                    if self.peek()? != close {
                        if depth == MAX_DEPTH {
                            return None;
                        }
                        let is_object = open == b'{';
                        objects = (objects << 1) | u64::from(is_object);
                        depth += 1;
                        if is_object {
                            self.member_name()?;
                        }
                        continue;
                    }
                    self.at += 1;
                }
                b'"' => {
                    self.string()?;
                }
                b't' => self.literal("true")?,
                b'f' => self.literal("false")?,
                b'n' => self.literal("null")?,
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return None,
            }
            // After a value: close containers until another value is expected.
            loop {
                if depth == 0 {
                    return self.text.get(start..self.at);
                }
                self.ws();
                let in_object = objects & 1 == 1;
                match (self.peek()?, in_object) {
                    (b',', true) => {
                        self.at += 1;
                        self.member_name()?;
                        break;
                    }
                    (b',', false) => {
                        self.at += 1;
                        break;
                    }
                    (b'}', true) | (b']', false) => {
                        self.at += 1;
                        objects >>= 1;
                        depth -= 1;
                    }
                    _ => return None,
                }
            }
        }
    }

    /// The object at the cursor, which must end the text: `member` reads each
    /// member's value, given its name (names with escapes are not taken here).
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? != b'}' {
            loop {
                let (name, escaped) = self.member_name()?;
                if escaped {
                    return None;
                }
                member(self, name)?;
                self.ws();
                if self.peek()? != b',' {
                    break;
                }
                self.at += 1;
            }
        }
        self.eat(b'}')?;
        self.at_end().then_some(())
    }

    /// A member's name (as [`Scanner::string`] gives it) and its colon.
    fn member_name(&mut self) -> Option<(&'a str, bool)> {
        let name = self.string()?;
        self.eat(b':')?;
        Some(name)
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes().get(self.at..end)? == word.as_bytes()).then(|| self.at = end)
    }

    /// A number, by JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    pub(crate) fn number(&mut self) -> Option<()> {
        let b = self.bytes();
        let digits = |at: usize| b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
        let mut at = self.at;
        if b.get(at) == Some(&b'-') {
            at += 1;
        }
        match b.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => at += digits(at),
            _ => return None,
        }
        if b.get(at) == Some(&b'.') {
            let n = digits(at + 1);
            if n == 0 {
                return None;
            }
            at += 1 + n;
        }
        if matches!(b.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(b.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            let n = digits(at);
            if n == 0 {
                return None;
            }
            at += n;
        }
        self.at = at;
        Some(())
    }
}

/// Where the string text from `at` stops: its closing quote or a backslash. A byte a
/// string may not hold raw (below 0x20) before that is `None`.
fn stop_at(b: &[u8], mut at: usize) -> Option<usize> {
    // Most strings are short (names, tags, versions): their first bytes are looked at
    // eight at a time (a call to `memchr2` costs more than such a string), the rest of a
    // long one is searched.
    let words_end = b.len().min(at + 64);
    while at + 8 <= words_end {
        let word = u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?);
        if let Some(i) = first_stop(word) {
            let i = at + i;
            return (b[i] >= 0x20).then_some(i);
        }
        at += 8;
    }
    if words_end == b.len() {
        let i = at
            + b[at..]
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        return (b[i] >= 0x20).then_some(i);
    }
    let stop = at + memchr2(b'"', b'\\', &b[at..])?;
    (!has_control(&b[at..stop])).then_some(stop)
}

/// The first byte of `word` (little-endian) that is a quote, a backslash or below 0x20.
/// Each test flags a byte exactly when it matches, or when it follows a match (a borrow
/// runs upward only), so the lowest flag is the first match.
fn first_stop(word: u64) -> Option<usize> {
    let flags = (below_space(word) | quote_or_backslash(word)) & HIGH_BITS;
    (flags != 0).then(|| flags.trailing_zeros() as usize / 8)
}

/// The high bit of each byte of `word` that is a quote or a backslash, and possibly of
/// bytes above such a one (a borrow runs upward), so the lowest is the first match; only
/// the [`HIGH_BITS`] of the result mean anything (callers mask once for all their tests).
pub(super) fn quote_or_backslash(word: u64) -> u64 {
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x;
    has_zero(word ^ (ONES * u64::from(b'"'))) | has_zero(word ^ (ONES * u64::from(b'\\')))
}

/// Whether `b` holds a byte a JSON string may not hold raw (below 0x20), eight bytes at
/// a time. A word's test flags only bytes at or above a real match (a borrow runs
/// upward), so any flag means a match.
fn has_control(b: &[u8]) -> bool {
    let mut words = b.chunks_exact(8);
    let mut flags = 0;
    for w in &mut words {
        flags |= below_space(u64::from_le_bytes(w.try_into().unwrap_or_default()));
    }
    flags & HIGH_BITS != 0 || words.remainder().iter().any(|&c| c < 0x20)
}

/// The high bit of each byte of `word` below 0x20, and of bytes above such a one.
fn below_space(word: u64) -> u64 {
    word.wrapping_sub(ONES * 0x20) & !word
}

/// The length of the escape after a backslash at the start of `b`, if it is one JSON has.
fn escape_len(b: &[u8]) -> Option<usize> {
    match b.first()? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(1),
        b'u' => b.get(1..5)?.iter().all(u8::is_ascii_hexdigit).then_some(5),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole text as one value, as a caller checks it.
    fn whole(text: &str) -> Option<&str> {
        let mut s = Scanner::new(text);
        let v = s.value()?;
        s.at_end().then_some(v)
    }

    #[test]
    fn valid_json_is_taken_whole_and_spans_are_exact() {
        for text in [
            "0",
            "-0",
            "-12.50e+3",
            "1E9",
            "123456789012345678901234567890",
            "true",
            "null",
            r#""""#,
            r#""a\"b\\c\/\b\f\n\r\t\u00e9\uD83D\uDE00""#,
            "\"é漢字\"",
            "[]",
            "{}",
            r#"{"a":[1,{"b":null},[]],"c":{"d":"e"},"":0}"#,
            " [ 1 , 2 ] ",
            "\t{\r\n\"k\" : [ ] }\n",
        ] {
            assert_eq!(whole(text), Some(text.trim()), "{text:?}");
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok());
        }
    }

    #[test]
    fn invalid_json_is_refused() {
        for text in [
            "",
            " ",
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "1e+",
            "+1",
            "tru",
            "nul",
            "True",
            "NaN",
            "\"a",
            "\"\\x\"",
            "\"\\u12g4\"",
            "\"\\u12\"",
            "\"a\u{1}b\"",
            "\"a\nb\"",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\":1,}",
            "{,}",
            "{1:2}",
            "{\"a\" 1}",
            "[1}",
            "{\"a\":1]",
            "[",
            "{",
            "]",
            "}",
            "[1]]",
            "{}{}",
            "1 2",
            "\"a\"x",
        ] {
            assert_eq!(whole(text), None, "{text:?}");
            assert!(
                serde_json::from_str::<serde::de::IgnoredAny>(text).is_err(),
                "{text:?} is JSON after all"
            );
        }
    }

    #[test]
    fn a_string_stops_where_it_stops_at_any_length() {
        for n in 0..100 {
            for at in 0..n {
                let mut chars = vec!['a'; n];
                chars[at] = 'é';
                let plain: String = chars.iter().collect();
                let quoted = format!("\"{plain}\"");
                assert_eq!(whole(&quoted), Some(&*quoted), "{n} {at}");
                for bad in ['\u{1}', '\u{1f}', '\n', '"'] {
                    chars[at] = bad;
                    let text = format!("\"{}\"", chars.iter().collect::<String>());
                    assert_eq!(whole(&text), None, "{bad:?} in {n} at {at}");
                }
                // `\a` is no escape; last, the backslash pairs with the one written after it.
                chars[at] = '\\';
                let text = format!("\"{}\\n\"", chars.iter().collect::<String>());
                assert_eq!(whole(&text).is_some(), at + 1 == n, "{n} {at}");
                assert_eq!(serde_json::from_str::<String>(&text).is_ok(), at + 1 == n);
            }
        }
    }

    #[test]
    fn nesting_past_the_limit_is_left_to_serde() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(whole(&deep(MAX_DEPTH as usize + 1)).is_some());
        assert_eq!(whole(&deep(MAX_DEPTH as usize + 2)), None);
        assert!(
            serde_json::from_str::<serde::de::IgnoredAny>(&deep(MAX_DEPTH as usize + 2)).is_ok()
        );
    }

    /// A small deterministic generator of JSON-ish text: valid documents, then the same
    /// with one byte changed, dropped or doubled. The scanner must never take what
    /// serde_json refuses, and must take the plain valid ones.
    #[test]
    fn never_accepts_what_serde_json_refuses() {
        let mut next = super::super::xorshift(0x9e37_79b9_7f4a_7c15);
        const ATOMS: &[&str] = &[
            "0",
            "-1",
            "2.5",
            "1e3",
            "-0.0E-7",
            "true",
            "false",
            "null",
            r#""""#,
            r#""x""#,
            r#""\n\u0041""#,
            "\"é\"",
            "[]",
            "{}",
            // Past the bytes looked at one by one: the rest is searched.
            r#""a string longer than sixteen bytes, with \"escapes\" late""#,
        ];
        const NOISE: &[u8] = b" \t\n{}[],:\"\\0123456789.-+eEtrufalsn\x01x";
        fn doc(next: &mut impl FnMut() -> u64, depth: u32, out: &mut String) {
            match next() % if depth > 4 { 1 } else { 4 } {
                0 => out.push_str(ATOMS[(next() % ATOMS.len() as u64) as usize]),
                1 => {
                    out.push('[');
                    for i in 0..next() % 4 {
                        if i > 0 {
                            out.push(',');
                        }
                        doc(next, depth + 1, out);
                    }
                    out.push(']');
                }
                _ => {
                    out.push('{');
                    for i in 0..next() % 4 {
                        if i > 0 {
                            out.push_str(" , ");
                        }
                        out.push_str(&format!("\"k{i}\" :"));
                        doc(next, depth + 1, out);
                    }
                    out.push('}');
                }
            }
        }
        let mut taken = 0;
        for _ in 0..20_000 {
            let mut text = String::new();
            doc(&mut next, 0, &mut text);
            assert_eq!(whole(&text), Some(&*text), "{text:?}");
            let mut bytes = text.into_bytes();
            let at = (next() % bytes.len() as u64) as usize;
            let noise = NOISE[(next() % NOISE.len() as u64) as usize];
            match next() % 3 {
                0 => bytes[at] = noise,
                1 => {
                    bytes.remove(at);
                }
                _ => bytes.insert(at, noise),
            }
            let Ok(mutated) = String::from_utf8(bytes) else {
                continue;
            };
            let serde_ok = serde_json::from_str::<serde::de::IgnoredAny>(&mutated).is_ok();
            if whole(&mutated).is_some() {
                taken += 1;
                assert!(serde_ok, "taken, but not JSON: {mutated:?}");
            }
        }
        assert!(taken > 1_000, "mutations kept valid: {taken}");
    }
}
