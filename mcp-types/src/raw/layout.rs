//! Where the members of a request's params lie, noted while the request was read.
//!
//! The envelope reader checks every byte of a request, params included. The session then
//! splits the params into members and `_meta` into its own: two more walks over text that
//! was just read. A [`ParamsLayout`] is what the first walk saw, kept: the byte ranges of
//! the params' members and of `_meta`'s, so the later readers only look them up.
//!
//! A layout describes one text. It is bound to a value ([`ParamsLayout::bind`]) only
//! when that value is the very text it was made for: the same address, length and
//! checksum. Params replaced or edited after the read (their text is anyone's to change)
//! are read again, never through a stale layout.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::scan::Scanner;
use super::{prewritten_ref, RawObject};

/// Most members laid out per object; an object with more is read again instead.
const MAX_MEMBERS: usize = 8;

/// One member: the byte ranges of its name (between the quotes) and its value.
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    name: (u32, u32),
    value: (u32, u32),
}

/// The members of one object, in order.
#[derive(Debug, Clone, Default)]
struct Spans {
    len: usize,
    at: [Span; MAX_MEMBERS],
}

impl Spans {
    fn push(&mut self, span: Span) -> Option<()> {
        *self.at.get_mut(self.len)? = span;
        self.len += 1;
        Some(())
    }

    fn iter(&self) -> impl Iterator<Item = &Span> {
        self.at.iter().take(self.len)
    }
}

/// What the read saw of `_meta`.
#[derive(Debug, Clone, Default)]
enum Meta {
    /// No `_meta` member.
    #[default]
    Absent,
    /// One whose value is not an object.
    NotObject,
    /// An object, whose members are these.
    Object(Spans),
    /// More than one `_meta`: read the params again, whose reader decides which counts.
    Unknown,
}

/// The layout of a request's params object, as its reader found it.
#[derive(Debug, Clone)]
pub struct ParamsLayout {
    /// The address of the text it describes: compared, never followed.
    addr: usize,
    len: usize,
    sum: u64,
    members: Spans,
    meta: Meta,
}

/// A layout bound to the text it describes.
#[derive(Clone, Copy)]
pub struct BoundLayout<'a, 'l> {
    raw: &'a RawValue,
    layout: &'l ParamsLayout,
}

impl ParamsLayout {
    /// The layout bound to `raw`, if `raw` is the text it was made for.
    pub fn bind<'a, 'l>(&'l self, raw: &'a RawValue) -> Option<BoundLayout<'a, 'l>> {
        let text = raw.get();
        let same = text.as_ptr() as usize == self.addr
            && text.len() == self.len
            && checksum(text.as_bytes()) == self.sum;
        same.then_some(BoundLayout { raw, layout: self })
    }

    /// Notes that the text now lies at `text` (the reader's copy of what it laid out).
    pub(crate) fn place(&mut self, text: &str) {
        self.addr = text.as_ptr() as usize;
        self.len = text.len();
        self.sum = checksum(text.as_bytes());
    }
}

impl<'a> BoundLayout<'a, '_> {
    fn member(&self, span: &Span) -> Option<(&'a str, &'a RawValue)> {
        let text = self.raw.get();
        let name = text.get(span.name.0 as usize..span.name.1 as usize)?;
        let value = text.get(span.value.0 as usize..span.value.1 as usize)?;
        Some((name, prewritten_ref(value)?))
    }

    /// The params' members, as [`RawObject::from_raw`] gives them (without reading the
    /// text again).
    pub fn object(&self) -> Option<RawObject<'a>> {
        let mut members = Vec::with_capacity(self.layout.members.len + 2);
        for span in self.layout.members.iter() {
            let (name, value) = self.member(span)?;
            members.push((Cow::Borrowed(name), Cow::Borrowed(value)));
        }
        Some(RawObject {
            members,
            source: Some(self.raw),
        })
    }

    /// Calls `member` with each member of `_meta`, in order, as
    /// [`for_each_member`](super::for_each_member) does; `false` when the layout does not
    /// know them (then read `_meta` itself). An absent `_meta`, or one that is not an
    /// object, has no members.
    pub fn for_each_meta_member(&self, mut member: impl FnMut(&'a str, &'a RawValue)) -> bool {
        match &self.layout.meta {
            Meta::Absent | Meta::NotObject => true,
            Meta::Unknown => false,
            // Checked whole before the first is given, so that none is given twice when
            // `_meta` is read after all; twice over the spans, not a list made per request.
            Meta::Object(spans) => {
                if !spans.iter().all(|s| self.member(s).is_some()) {
                    return false;
                }
                for (name, value) in spans.iter().filter_map(|s| self.member(s)) {
                    member(name, value);
                }
                true
            }
        }
    }
}

/// Reads the params object at the cursor as [`Scanner::value`] would, and lays it out:
/// its text, and its layout (offsets into that text; [`ParamsLayout::place`] it where the
/// text is kept). `None` where the plain reader should read it instead: not an object,
/// or one this does not lay out (escaped names, too many members) or that is not JSON.
pub(crate) fn read<'a>(s: &mut Scanner<'a>) -> Option<(&'a str, ParamsLayout)> {
    s.ws();
    let start = s.position();
    let mut members = Spans::default();
    let mut meta = Meta::Absent;
    object(s, start, &mut members, |s, name| {
        if name != "_meta" {
            return s.value().map(|_| ());
        }
        s.ws();
        meta = match (&meta, s.peek()?) {
            (Meta::Absent, b'{') => {
                let mut spans = Spans::default();
                match object(s, start, &mut spans, |s, _| s.value().map(|_| ())) {
                    Some(()) => Meta::Object(spans),
                    // Read once more, now only for its end; the plain reader's verdict
                    // on the whole comes if this fails too.
                    None => return None,
                }
            }
            (Meta::Absent, _) => {
                s.value()?;
                Meta::NotObject
            }
            _ => {
                s.value()?;
                Meta::Unknown
            }
        };
        Some(())
    })?;
    let text = s.text_from(start)?;
    let layout = ParamsLayout {
        addr: 0,
        len: 0,
        sum: 0,
        members,
        meta,
    };
    Some((text, layout))
}

/// Reads the object at the cursor, noting each member's span (offsets from `origin`) in
/// `spans`; `value` reads each value, given its name.
fn object<'a>(
    s: &mut Scanner<'a>,
    origin: usize,
    spans: &mut Spans,
    mut value: impl FnMut(&mut Scanner<'a>, &'a str) -> Option<()>,
) -> Option<()> {
    let offset = |at: usize| u32::try_from(at - origin).ok();
    s.eat(b'{')?;
    s.ws();
    if s.peek()? == b'}' {
        return s.eat(b'}');
    }
    loop {
        s.ws();
        let name_start = s.position() + 1;
        let (name, escaped) = s.string()?;
        if escaped {
            return None;
        }
        let name_end = name_start + name.len();
        s.eat(b':')?;
        s.ws();
        let value_start = s.position();
        value(s, name)?;
        let value_end = s.position();
        spans.push(Span {
            name: (offset(name_start)?, offset(name_end)?),
            value: (offset(value_start)?, offset(value_end)?),
        })?;
        s.ws();
        match s.peek()? {
            b',' => {
                s.eat(b',')?;
            }
            b'}' => return s.eat(b'}'),
            _ => return None,
        }
    }
}

/// A checksum of `text`, eight bytes at a time: enough to tell a layout's text from
/// another that came to lie at the same address with the same length.
fn checksum(text: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut words = text.chunks_exact(8);
    let mut h = text.len() as u64;
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
        h = (h.rotate_left(23) ^ w).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    let rest = words.remainder();
    tail[..rest.len()].copy_from_slice(rest);
    (h.rotate_left(23) ^ u64::from_le_bytes(tail)).wrapping_mul(K)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of `text` (a params object), placed on a copy of it as the envelope
    /// reader places it.
    fn laid_out(text: &str) -> Option<(Box<RawValue>, ParamsLayout)> {
        let mut s = Scanner::new(text);
        let (span, mut layout) = read(&mut s)?;
        let raw = RawValue::from_string(span.to_owned()).ok()?;
        layout.place(raw.get());
        Some((raw, layout))
    }

    fn members(o: &RawObject<'_>) -> Vec<(String, String)> {
        o.iter()
            .map(|(k, v)| (k.to_string(), v.get().to_owned()))
            .collect()
    }

    #[test]
    fn a_layout_gives_the_members_a_reader_gives() {
        for text in [
            r#"{}"#,
            r#"{"name":"t","arguments":{"n":123456789012345678901234567890,"z":{"b":1,"a":2}}}"#,
            r#" { "_meta" : { "a" : [1, {"b":"}"}] , "c":null } , "name" : "x\"y" } "#,
            r#"{"_meta":"not an object","name":"t"}"#,
            r#"{"_meta":{},"_meta":{"x":1}}"#,
        ] {
            let (raw, layout) = laid_out(text).unwrap_or_else(|| panic!("laid out: {text}"));
            let bound = layout.bind(&raw).expect("bound to its own text");
            let by_layout = bound.object().expect("object");
            let by_reader = RawObject::from_raw(&raw).expect("reader");
            assert_eq!(members(&by_layout), members(&by_reader), "{text}");
            assert!(!by_layout.is_modified(), "written back as it came");
            let (mut seen, mut read) = (Vec::new(), Vec::new());
            let known =
                bound.for_each_meta_member(|k, v| seen.push((k.to_owned(), v.get().to_owned())));
            if known {
                if let Some(m) = by_reader.get("_meta").filter(|m| m.get().starts_with('{')) {
                    super::super::for_each_member(m, |k, v| {
                        read.push((k.to_owned(), v.get().to_owned()))
                    })
                    .expect("meta");
                }
                assert_eq!(seen, read, "{text}");
            } else {
                assert_eq!(text, r#"{"_meta":{},"_meta":{"x":1}}"#);
            }
        }
    }

    #[test]
    fn what_is_not_laid_out_is_left_to_the_reader() {
        for text in [
            r#"{"na\u006de":"t"}"#,
            r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}"#,
            r#"{"_meta":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}}"#,
            r#"[1]"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":01}"#,
        ] {
            assert!(laid_out(text).is_none(), "{text}");
        }
    }

    #[test]
    fn a_layout_binds_only_to_the_text_it_was_made_for() {
        let text = r#"{"name":"abc","arguments":{}}"#;
        let (raw, layout) = laid_out(text).expect("laid out");
        assert!(layout.bind(&raw).is_some());
        // A copy lies elsewhere.
        let copy = raw.clone();
        assert!(layout.bind(&copy).is_none());
        // The same buffer, edited in place to text of the same length.
        let mut s = String::from(Box::<str>::from(raw));
        let edited: String = s.replace("abc", "xyz");
        s.replace_range(.., &edited);
        let again = RawValue::from_string(s).expect("json");
        assert!(layout.bind(&again).is_none(), "edited text is read again");
    }
}
