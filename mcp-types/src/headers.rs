//! The HTTP headers Streamable HTTP mirrors from the JSON-RPC body, and their value
//! encoding (plain visible ASCII, else `=?base64?…?=` of the UTF-8 bytes).

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Session-Id` (legacy sessions).
pub const SESSION_ID: &str = "mcp-session-id";
/// `Mcp-Method` (2026-07-28).
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name` (2026-07-28): `params.name` or `params.uri`.
pub const NAME: &str = "mcp-name";
/// `Mcp-Param-{Name}` prefix (2026-07-28, from `x-mcp-header`).
pub const PARAM_PREFIX: &str = "mcp-param-";
/// `Last-Event-ID` (legacy resumption).
pub const LAST_EVENT_ID: &str = "last-event-id";

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn b64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = B64.iter().position(|b| *b == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

fn is_sentinel(v: &str) -> bool {
    v.starts_with("=?base64?") && v.ends_with("?=") && v.len() >= 11
}

/// Encodes a value for a header: as it is when it is plain visible ASCII (spaces inside,
/// not at the ends) and does not look like the sentinel, else `=?base64?…?=`.
pub fn encode_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
        && !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t'])
        && !is_sentinel(value);
    if plain || value.is_empty() {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", b64_encode(value.as_bytes()))
    }
}

/// Decodes a header value written by [`encode_value`]. `None` for a malformed sentinel.
pub fn decode_value(value: &str) -> Option<String> {
    if is_sentinel(value) {
        let inner = &value["=?base64?".len()..value.len() - 2];
        String::from_utf8(b64_decode(inner)?).ok()
    } else {
        Some(value.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        for v in [
            "us-west1",
            "Hello, 世界",
            " padded ",
            "line1\nline2",
            "=?base64?literal?=",
            "a",
            "ab",
            "abc",
        ] {
            assert_eq!(decode_value(&encode_value(v)).as_deref(), Some(v));
        }
        assert_eq!(decode_value("=?base64?!!!?="), None);
    }
}
