//! How upstream names become the names hosts see.
//!
//! Namespaces come from configuration (the server's key, or an explicit `namespace`),
//! never from `serverInfo.name`, which is not unique (TOOL-02). The way back from an
//! exposed name to `(upstream, real name)` is a table lookup, never string splitting.

/// Turns `(namespace, upstream name)` into the name hosts see.
pub trait Namespacing: Send + Sync + 'static {
    /// The exposed name of `name` from the upstream in `namespace` (which may be empty:
    /// no prefix).
    fn expose(&self, namespace: &str, name: &str) -> String;

    /// The namespace a configuration key gives when no explicit one is set.
    fn namespace_for_key(&self, key: &str) -> String {
        sanitize_namespace(key)
    }
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`: names opencode and other
/// hosts accept (TOOL-03).
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A namespace: every character outside `[A-Za-z0-9_]` becomes `_`, so keys that differ
/// only in punctuation (`fff-nix`, `fff_nix`, `fff.nix`) are seen to clash.
pub fn sanitize_namespace(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a, 32 bits: a short, stable hash (the same on every machine and run).
fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// `<namespace><separator><name>`, sanitised, at most `max_len` characters; a longer name is
/// cut and ends in `_` plus 8 hex digits of a hash of the whole, so it stays unique.
#[derive(Debug, Clone)]
pub struct Prefixed {
    /// Between namespace and name (default `__`).
    pub separator: String,
    /// The longest exposed name (default 64).
    pub max_len: usize,
}

impl Default for Prefixed {
    fn default() -> Self {
        Prefixed {
            separator: "__".into(),
            max_len: 64,
        }
    }
}

impl Namespacing for Prefixed {
    fn expose(&self, namespace: &str, name: &str) -> String {
        let full = if namespace.is_empty() {
            sanitize(name)
        } else {
            format!(
                "{}{}{}",
                sanitize(namespace),
                self.separator,
                sanitize(name)
            )
        };
        if full.chars().count() <= self.max_len {
            return full;
        }
        let hash = format!("_{:08x}", fnv1a(&format!("{namespace}\u{0}{name}")));
        let keep = self.max_len.saturating_sub(hash.len());
        let mut cut: String = full.chars().take(keep).collect();
        cut.push_str(&hash);
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_prefixed_and_bounded() {
        let n = Prefixed::default();
        assert_eq!(n.expose("fs", "read_file"), "fs__read_file");
        assert_eq!(
            n.expose("fff-nix", "admin.tools list"),
            "fff-nix__admin_tools_list"
        );
        assert_eq!(n.expose("", "x.y"), "x_y");
        let long = "a".repeat(100);
        let e = n.expose("ns", &long);
        assert_eq!(e.chars().count(), 64);
        assert_ne!(
            e,
            n.expose("ns", &format!("{long}b")),
            "a cut name stays unique"
        );
        assert_eq!(e, n.expose("ns", &long), "and stable");
        assert_eq!(n.namespace_for_key("fff.nix"), "fff_nix");
    }
}
