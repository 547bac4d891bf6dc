//! The hash chain: every line ends `,"seq":N,"prev":"<hex>","hash":"<hex>"}`, where `hash`
//! is the SHA-256 of the line's own bytes up to `,"hash":` followed by `}`, and `prev` is the
//! previous line's `hash`.
//!
//! The hash is over the exact bytes written, so checking a line needs no re-serialization:
//! JSON has many spellings of one value, and a verifier that re-serialized would have to
//! reproduce the writer's exactly.

use ring::digest::{Context, SHA256};

/// The `prev` of the first record of a new chain: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Length of a hex SHA-256.
const HEX_LEN: usize = 64;
/// `,"hash":"` + 64 hex digits + `"}`: the fixed tail every sealed line ends with.
const HASH_TAIL: &[u8] = b",\"hash\":\"";
const HASH_SUFFIX_LEN: usize = HASH_TAIL.len() + HEX_LEN + 2;
/// `,"prev":"` + 64 hex digits + `"`.
const PREV_HEAD: &[u8] = b",\"prev\":\"";
const PREV_LEN: usize = PREV_HEAD.len() + HEX_LEN + 1;
const SEQ_HEAD: &[u8] = b",\"seq\":";

/// Where one sink's chain stands: the `seq` the next line gets and the `hash` it will name
/// as `prev`. `Copy`, so the writer can keep the old state and put it back when a sink
/// fails to take a line (a line that was never written must not be chained on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chain {
    next_seq: u64,
    head: [u8; HEX_LEN],
}

impl Default for Chain {
    fn default() -> Self {
        Chain::new()
    }
}

impl Chain {
    /// A new chain: the first line gets `seq` 0 and `prev` [`GENESIS`].
    pub fn new() -> Chain {
        Chain {
            next_seq: 0,
            head: [b'0'; HEX_LEN],
        }
    }

    /// Continues a chain whose last line had `seq` and `hash`; `None` when `hash` is not
    /// 64 lowercase hex digits.
    pub fn resume(seq: u64, hash: &str) -> Option<Chain> {
        let bytes = hash.as_bytes();
        if bytes.len() != HEX_LEN || !bytes.iter().all(|b| is_hex(*b)) {
            return None;
        }
        let mut head = [0; HEX_LEN];
        head.copy_from_slice(bytes);
        Some(Chain {
            next_seq: seq.saturating_add(1),
            head,
        })
    }

    /// The `seq` the next sealed line gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The `hash` of the last sealed line ([`GENESIS`] for a new chain).
    pub fn head(&self) -> &str {
        std::str::from_utf8(&self.head).unwrap_or(GENESIS)
    }

    /// The length of the line [`seal`](Chain::seal) would make of a body of `body_len` bytes.
    pub fn sealed_len(&self, body_len: usize) -> usize {
        body_len + SEQ_HEAD.len() + digits(self.next_seq) + PREV_LEN + HASH_SUFFIX_LEN
    }

    /// Seals `body` (a JSON object's opening brace and at least one member, without the
    /// closing brace) into a chained line, no newline, and advances the chain.
    pub fn seal(&mut self, body: &[u8]) -> Vec<u8> {
        let mut line = Vec::with_capacity(self.sealed_len(body.len()));
        self.seal_into(body, &mut line);
        line
    }

    /// [`seal`](Chain::seal) into `line` (emptied first), so that a writer can keep one
    /// buffer for every line.
    pub(crate) fn seal_into(&mut self, body: &[u8], line: &mut Vec<u8>) {
        line.clear();
        line.extend_from_slice(body);
        line.extend_from_slice(SEQ_HEAD);
        super::record::push_u128(line, u128::from(self.next_seq));
        line.extend_from_slice(PREV_HEAD);
        line.extend_from_slice(&self.head);
        line.push(b'"');
        let hash = line_hash(line);
        line.extend_from_slice(HASH_TAIL);
        line.extend_from_slice(&hash);
        line.extend_from_slice(b"\"}");
        self.head = hash;
        self.next_seq = self.next_seq.saturating_add(1);
    }
}

/// The chain members of one line, read from its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link<'a> {
    pub(crate) seq: u64,
    pub(crate) prev: &'a [u8],
    pub(crate) hash: &'a [u8],
}

impl Link<'_> {
    pub(crate) fn hash_str(&self) -> &str {
        std::str::from_utf8(self.hash).unwrap_or("")
    }
}

/// Reads a line's `seq`, `prev` and `hash` from its tail without checking the hash: for
/// naming the `seq` of a line that failed, and for looking ahead.
pub(crate) fn parse_link(line: &[u8]) -> Result<Link<'_>, &'static str> {
    let (prefix, hash) = split_hash(line)?;
    let prev_start = prefix
        .len()
        .checked_sub(PREV_LEN)
        .ok_or("no \"prev\" member before \"hash\"")?;
    let (before_prev, prev_part) = prefix.split_at(prev_start);
    if !prev_part.starts_with(PREV_HEAD) || prev_part.last() != Some(&b'"') {
        return Err("no \"prev\" member before \"hash\"");
    }
    let prev = &prev_part[PREV_HEAD.len()..PREV_LEN - 1];
    if !prev.iter().all(|b| is_hex(*b)) {
        return Err("\"prev\" is not 64 lowercase hex digits");
    }
    let digits_len = before_prev
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let (before_seq, seq_digits) = before_prev.split_at(before_prev.len() - digits_len);
    if digits_len == 0
        || !before_seq.ends_with(SEQ_HEAD)
        || (digits_len > 1 && seq_digits[0] == b'0')
    {
        return Err("no \"seq\" member before \"prev\"");
    }
    let seq = seq_digits.iter().try_fold(0u64, |n, d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    });
    let seq = seq.ok_or("\"seq\" is out of range")?;
    Ok(Link { seq, prev, hash })
}

/// [`parse_link`], and the line's `hash` checked against its bytes.
pub(crate) fn check_line(line: &[u8]) -> Result<Link<'_>, &'static str> {
    let link = parse_link(line)?;
    let (prefix, _) = split_hash(line)?;
    if line_hash(prefix) != link.hash {
        return Err("its hash does not match its bytes");
    }
    Ok(link)
}

/// The bytes a line's hash covers (everything before `,"hash":`) and the hash's hex.
fn split_hash(line: &[u8]) -> Result<(&[u8], &[u8]), &'static str> {
    let start = line
        .len()
        .checked_sub(HASH_SUFFIX_LEN)
        .ok_or("too short to be a record")?;
    let (prefix, tail) = line.split_at(start);
    if !tail.starts_with(HASH_TAIL) || !tail.ends_with(b"\"}") || !prefix.starts_with(b"{") {
        return Err("does not end with a \"hash\" member");
    }
    let hash = &tail[HASH_TAIL.len()..HASH_TAIL.len() + HEX_LEN];
    if !hash.iter().all(|b| is_hex(*b)) {
        return Err("\"hash\" is not 64 lowercase hex digits");
    }
    Ok((prefix, hash))
}

/// SHA-256 of `prefix` followed by `}`, as lowercase hex.
fn line_hash(prefix: &[u8]) -> [u8; HEX_LEN] {
    let mut context = Context::new(&SHA256);
    context.update(prefix);
    context.update(b"}");
    let mut out = [0; HEX_LEN];
    hex_into(context.finish().as_ref(), &mut out);
    out
}

/// Lowercase hex of `bytes` into `out` (twice as long; any excess is left as it was).
pub(crate) fn hex_into(bytes: &[u8], out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (pair, byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0xf)];
    }
}

/// Lowercase hex of `bytes`.
#[cfg(test)]
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = vec![0; bytes.len() * 2];
    hex_into(bytes, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

fn digits(mut n: u64) -> usize {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_chain_starts_at_zero_with_the_genesis_prev() {
        let mut chain = Chain::new();
        let line = chain.seal(br#"{"a":1"#);
        let text = String::from_utf8(line.clone()).unwrap();
        assert!(text.starts_with(&format!(r#"{{"a":1,"seq":0,"prev":"{GENESIS}","hash":""#)));
        let link = check_line(&line).unwrap();
        assert_eq!(link.seq, 0);
        assert_eq!(link.prev, GENESIS.as_bytes());
        assert_eq!(chain.head(), link.hash_str());
        assert_eq!(chain.next_seq(), 1);
        let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(value["hash"], chain.head());
    }

    #[test]
    fn the_hash_is_sha256_of_the_bytes_before_it_and_a_brace() {
        let mut chain = Chain::new();
        let line = chain.seal(br#"{"a":"b""#);
        let prefix = &line[..line.len() - HASH_SUFFIX_LEN];
        let mut covered = prefix.to_vec();
        covered.push(b'}');
        let expected = hex(ring::digest::digest(&SHA256, &covered).as_ref());
        assert_eq!(chain.head(), expected);
    }

    #[test]
    fn each_line_names_the_previous_hash_and_the_next_seq() {
        let mut chain = Chain::new();
        let first = chain.seal(br#"{"n":1"#);
        let second = chain.seal(br#"{"n":2"#);
        let (a, b) = (check_line(&first).unwrap(), check_line(&second).unwrap());
        assert_eq!(b.seq, a.seq + 1);
        assert_eq!(b.prev, a.hash);
        let mut copy = chain;
        assert_eq!(chain.sealed_len(6), copy.seal(br#"{"n":3"#).len());
    }

    #[test]
    fn a_resumed_chain_continues_from_the_last_line() {
        let mut chain = Chain::new();
        for _ in 0..5 {
            chain.seal(br#"{"x":0"#);
        }
        let mut resumed = Chain::resume(4, chain.head()).unwrap();
        assert_eq!(resumed, chain);
        let line = resumed.seal(br#"{"x":1"#);
        assert_eq!(check_line(&line).unwrap().seq, 5);
        assert!(Chain::resume(1, "ABC").is_none());
        assert!(Chain::resume(1, &"G".repeat(64)).is_none());
    }

    #[test]
    fn any_changed_byte_fails_the_check() {
        let mut chain = Chain::new();
        chain.seal(br#"{"warm":true"#);
        let line = chain.seal(br#"{"v":"value","n":12"#);
        for i in 0..line.len() {
            let mut changed = line.clone();
            changed[i] = if changed[i] == b'1' { b'2' } else { b'1' };
            assert!(check_line(&changed).is_err(), "byte {i} changed unnoticed");
        }
        assert!(check_line(&line[..line.len() - 1]).is_err());
        assert!(check_line(b"").is_err());
        assert!(check_line(b"not json at all").is_err());
    }

    #[test]
    fn a_seq_with_a_leading_zero_or_too_many_digits_is_refused() {
        let forged = format!(r#"{{"a":1,"seq":01,"prev":"{GENESIS}","hash":"{GENESIS}"}}"#);
        assert!(parse_link(forged.as_bytes()).is_err());
        let huge = format!(
            r#"{{"a":1,"seq":99999999999999999999999,"prev":"{GENESIS}","hash":"{GENESIS}"}}"#
        );
        assert!(parse_link(huge.as_bytes()).is_err());
    }
}
