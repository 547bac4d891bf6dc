//! What a line that is no frame seems to be, from a bounded look at its beginning: an
//! answer cut short still names its id (`{"jsonrpc":"2.0","id":7,"result":{…` is the
//! answer to request 7), which is enough to fail that request at once instead of leaving
//! it to its timeout. The look never decides anything but which waiting request the line
//! is tied to; a line that is not JSON is never read as one.

use std::fmt;

use crate::jsonrpc::{EnvelopeError, RequestId};

/// What a line that could not be read as a frame seems to be ([`super::Incoming::Invalid`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LineHint {
    /// The top-level `id` it names, when one is readable whole within the look.
    pub id: Option<RequestId>,
    /// What its top-level members make it look like.
    pub shape: LineShape,
    /// What is wrong with it.
    pub fault: Fault,
}

/// What a line looks like, from its top-level members up to the first one that tells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineShape {
    /// Nothing tells: an object whose look ended (cut short, unreadable, or long) before
    /// a `result`, `error` or `method` member.
    #[default]
    Unknown,
    /// A `result` or `error` member: an answer.
    Answer,
    /// A `method` member: a request or a notification.
    Call,
    /// A whole object with none of those members.
    Other,
    /// Not an object: plain text, an array, a scalar.
    NotObject,
}

/// What is wrong with a line that is no frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// It is not JSON.
    #[default]
    NotJson,
    /// It is JSON that ends inside a value.
    CutShort,
    /// It holds bytes that are not UTF-8.
    NotUtf8,
    /// It is JSON, but not a JSON-RPC message.
    NotJsonRpc,
    /// It is longer than the transport takes.
    TooLong,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fault::NotJson => "it is not JSON",
            Fault::CutShort => "it is cut short",
            Fault::NotUtf8 => "it is not valid UTF-8",
            Fault::NotJsonRpc => "it is not a JSON-RPC message",
            Fault::TooLong => "it is longer than the message limit",
        })
    }
}

impl Fault {
    /// What is wrong with `line`, which failed to parse with `e`. Invalid UTF-8 first: it
    /// is the cause whatever the parser stumbled on.
    pub(crate) fn of(e: &EnvelopeError, line: &[u8]) -> Fault {
        if std::str::from_utf8(line).is_err() {
            return Fault::NotUtf8;
        }
        match e {
            EnvelopeError::Parse(p) if p.is_eof() => Fault::CutShort,
            EnvelopeError::Parse(_) => Fault::NotJson,
            EnvelopeError::Invalid(_) => Fault::NotJsonRpc,
        }
    }
}

impl LineHint {
    /// How much of a line is looked at: an envelope writes its `id` in its first bytes.
    pub(crate) const LOOK: usize = 4096;

    /// Looks at the first [`LineHint::LOOK`] bytes of `line`, which has `fault`.
    pub(crate) fn read(line: &[u8], fault: Fault) -> LineHint {
        let mut hint = LineHint {
            id: None,
            shape: LineShape::Unknown,
            fault,
        };
        let mut look = Look {
            b: &line[..line.len().min(LineHint::LOOK)],
            at: 0,
        };
        look.space();
        if !look.eat(b'{') {
            hint.shape = LineShape::NotObject;
            return hint;
        }
        // Stops at the first thing it cannot follow, keeping what it saw.
        let _ = look.members(&mut hint);
        hint
    }
}

/// A cursor over the looked-at bytes; every step checks its bounds (`None`: the bytes end
/// or are not what JSON would have there).
struct Look<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Look<'a> {
    fn members(&mut self, hint: &mut LineHint) -> Option<()> {
        loop {
            self.space();
            if self.eat(b'}') {
                return self.ended(hint);
            }
            let key = self.string()?;
            self.space();
            self.eat(b':').then_some(())?;
            self.space();
            let start = self.at;
            match key {
                b"method" => {
                    hint.shape = LineShape::Call;
                    return Some(());
                }
                b"result" | b"error" => {
                    hint.shape = LineShape::Answer;
                    if hint.id.is_some() {
                        return Some(());
                    }
                    self.value()?;
                }
                b"id" => {
                    self.value()?;
                    // The value's exact text, read as an id is read; `null` or anything
                    // else is no id.
                    hint.id = serde_json::from_slice::<Option<RequestId>>(&self.b[start..self.at])
                        .ok()
                        .flatten();
                }
                _ => self.value()?,
            }
            self.space();
            if !self.eat(b',') {
                self.eat(b'}').then_some(())?;
                return self.ended(hint);
            }
        }
    }

    /// The object ended: one without an answer's or a call's members is something else.
    fn ended(&self, hint: &mut LineHint) -> Option<()> {
        if hint.shape == LineShape::Unknown {
            hint.shape = LineShape::Other;
        }
        Some(())
    }

    fn space(&mut self) {
        while self.b.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let here = self.b.get(self.at) == Some(&byte);
        if here {
            self.at += 1;
        }
        here
    }

    /// A string's raw bytes, escapes left as written.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"').then_some(())?;
        let start = self.at;
        loop {
            let rest = self.b.get(self.at..)?;
            let i = self.at + memchr::memchr2(b'"', b'\\', rest)?;
            if self.b[i] == b'\\' {
                self.at = i + 2;
                continue;
            }
            self.at = i + 1;
            return self.b.get(start..i);
        }
    }

    /// Skips one value: a string, an object or array (brackets counted outside
    /// strings), or a scalar, which must end within the look (a number cut off at the
    /// end could be longer).
    fn value(&mut self) -> Option<()> {
        match *self.b.get(self.at)? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => self.nested(),
            _ => {
                let start = self.at;
                while let Some(&c) = self.b.get(self.at) {
                    if matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace() {
                        break;
                    }
                    self.at += 1;
                }
                (self.at > start && self.at < self.b.len()).then_some(())
            }
        }
    }

    fn nested(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match *self.b.get(self.at)? {
                b'"' => {
                    self.string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        self.at += 1;
                        return Some(());
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(line: &[u8]) -> (Option<String>, LineShape) {
        let h = LineHint::read(line, Fault::NotJson);
        (h.id.map(|i| i.to_string()), h.shape)
    }

    fn id(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    #[test]
    fn an_answer_cut_short_still_names_its_id() {
        let cut = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hal"#;
        assert_eq!(look(cut), (id("7"), LineShape::Answer));
        let late = br#"{"jsonrpc":"2.0","result":{"a":[1,"}"]},"id":"x-1","#;
        assert_eq!(look(late), (id("\"x-1\""), LineShape::Answer));
        let bad = b"{\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{\"t\":\"\xff\xfe\"}}";
        assert_eq!(look(bad), (id("12"), LineShape::Answer));
    }

    #[test]
    fn an_id_not_read_whole_is_no_id() {
        // The number may go on past the cut; an id that is no id is none.
        assert_eq!(
            look(br#"{"jsonrpc":"2.0","id":12"#),
            (None, LineShape::Unknown)
        );
        assert_eq!(
            look(br#"{"id":null,"error":{}}"#),
            (None, LineShape::Answer)
        );
        assert_eq!(
            look(b"{\"id\":\"\xff\",\"result\":1"),
            (None, LineShape::Answer)
        );
        assert_eq!(look(br#"{"id":[1],"result":1}"#), (None, LineShape::Answer));
    }

    #[test]
    fn calls_other_objects_and_plain_text_are_told_apart() {
        let call = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"#;
        assert_eq!(look(call), (id("3"), LineShape::Call));
        assert_eq!(
            look(br#"{"also": "not json-rpc"}"#),
            (None, LineShape::Other)
        );
        assert_eq!(look(b"this is not json"), (None, LineShape::NotObject));
        assert_eq!(look(b"  [1, 2"), (None, LineShape::NotObject));
        assert_eq!(look(br#"{"jsonrpc":"2.0","#), (None, LineShape::Unknown));
        assert_eq!(look(b"{\"jsonrpc\" \"2.0\"}"), (None, LineShape::Unknown));
    }

    #[test]
    fn the_look_is_bounded() {
        let long = format!(r#"{{"result":"{}","id":5}}"#, "x".repeat(LineHint::LOOK));
        assert_eq!(look(long.as_bytes()), (None, LineShape::Answer));
    }

    #[test]
    fn faults_name_the_cause() {
        let fault = |line: &[u8]| {
            let e = crate::Frame::parse(line).expect_err("not a frame");
            Fault::of(&e, line).to_string()
        };
        assert_eq!(fault(br#"{"jsonrpc":"2.0","id":1,"res"#), "it is cut short");
        assert_eq!(fault(b"{\"a\":\"\xff\"}"), "it is not valid UTF-8");
        assert_eq!(fault(b"{nope}"), "it is not JSON");
        assert_eq!(fault(br#"{"id":1}"#), "it is not a JSON-RPC message");
    }
}
