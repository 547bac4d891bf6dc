//! Pages of merged lists, and the cursors that name them: `<fingerprint>.<offset>`, the
//! fingerprint 12 bytes of SHA-256 (base64url) over the list's kind, the digest of the
//! catalog's content, the list's length as the host sees it and the items on either side
//! of the offset. Nothing in it is one process's: a replica that lists the same items
//! (same upstreams, same definitions, same view) takes another's cursor, and one whose
//! list differs says the list changed rather than serve a page of another list. Tampering
//! gains nothing: the items are the host's own view's either way.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use mcp_server::ListKind;
use mcp_types::{codes, ErrorObject};
use ring::digest::{Context, SHA256};

use super::{Catalog, Listing};
use crate::aggregator::pages::ItemText;

/// A digest of what upstream `key` listed (every item's text, in order).
pub(super) fn listing_digest(key: &str, l: &Listing) -> [u8; 16] {
    let mut ctx = Context::new(&SHA256);
    framed(&mut ctx, key.as_bytes());
    let lists: [Vec<&str>; 4] = [
        l.tools.iter().map(|t| t.raw().get()).collect(),
        l.prompts.iter().map(|p| p.raw().get()).collect(),
        l.resources.iter().map(|r| r.raw().get()).collect(),
        l.templates.iter().map(|t| t.raw().get()).collect(),
    ];
    for list in lists {
        ctx.update(&(list.len() as u64).to_be_bytes());
        for text in list {
            framed(&mut ctx, text.as_bytes());
        }
    }
    let mut out = [0; 16];
    out.copy_from_slice(&ctx.finish().as_ref()[..16]);
    out
}

/// `bytes`, preceded by their length: no two sequences of parts hash alike.
fn framed(ctx: &mut Context, bytes: &[u8]) {
    ctx.update(&(bytes.len() as u64).to_be_bytes());
    ctx.update(bytes);
}

impl Catalog {
    /// The digest of every upstream's listing, made once per generation.
    fn content_digest(&self) -> [u8; 16] {
        let generation = self.generation();
        *self.content.get_or_make(generation, || {
            let digests = self.digests.read();
            let mut ctx = Context::new(&SHA256);
            for (_, d) in digests.iter_ids() {
                ctx.update(d);
            }
            let mut out = [0; 16];
            out.copy_from_slice(&ctx.finish().as_ref()[..16]);
            std::sync::Arc::new(out)
        })
    }

    /// One page of merged list `kind`, whose items (as this host sees them) are `items`,
    /// from `cursor` (`None`: the first page), and the cursor of the next.
    pub(in crate::aggregator) fn page<T: ItemText>(
        &self,
        kind: ListKind,
        items: Vec<T>,
        cursor: Option<&str>,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let content = self.content_digest();
        let start = match cursor {
            None => 0,
            Some(c) => start_of(kind, &content, &items, c)?,
        };
        let size = self.page_size;
        if size == 0 {
            return Ok((items.into_iter().skip(start).collect(), None));
        }
        let total = items.len();
        let end = start.saturating_add(size);
        let next = (end < total).then(|| {
            let fingerprint = fingerprint(kind, &content, &items, end);
            format!("{fingerprint}.{end}")
        });
        let page: Vec<T> = items.into_iter().skip(start).take(size).collect();
        Ok((page, next))
    }
}

/// Where `cursor` says the page starts, if it names a place in this very list.
fn start_of<T: ItemText>(
    kind: ListKind,
    content: &[u8; 16],
    items: &[T],
    cursor: &str,
) -> Result<usize, ErrorObject> {
    let Some((print, offset)) = cursor
        .split_once('.')
        .and_then(|(p, o)| Some((p, o.parse::<usize>().ok()?)))
    else {
        return Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            format!("Invalid cursor: {cursor:?}"),
        ));
    };
    if offset == 0 || offset >= items.len() || fingerprint(kind, content, items, offset) != print {
        return Err(ErrorObject::new(
            codes::INVALID_PARAMS,
            "Invalid cursor: the list changed since it was issued; list again",
        ));
    }
    Ok(offset)
}

/// The fingerprint of the place `offset` (0 < `offset` < `items.len()`) in list `kind`.
fn fingerprint<T: ItemText>(
    kind: ListKind,
    content: &[u8; 16],
    items: &[T],
    offset: usize,
) -> String {
    let mut ctx = Context::new(&SHA256);
    framed(&mut ctx, kind.items_key().as_bytes());
    ctx.update(content);
    ctx.update(&(items.len() as u64).to_be_bytes());
    ctx.update(&(offset as u64).to_be_bytes());
    for at in [offset - 1, offset] {
        let text = items.get(at).map_or("", |i| i.text().get());
        framed(&mut ctx, text.as_bytes());
    }
    URL_SAFE_NO_PAD.encode(&ctx.finish().as_ref()[..12])
}
