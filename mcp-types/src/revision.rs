//! Protocol revisions as values.
//!
//! MCP names each revision by the date it was published. [`Revision`] is the
//! closed set this crate knows; a version string from a peer that is not one of
//! them parses to [`UnknownRevision`], which keeps the string so the caller can
//! log it or answer with the supported list.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One of the five published MCP revisions, ordered oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    /// `2024-11-05`: the first revision (HTTP+SSE transport, no annotations on tools).
    V2024_11_05,
    /// `2025-03-26`: tool annotations, audio content, Streamable HTTP, batches.
    V2025_03_26,
    /// `2025-06-18`: structured tool output, elicitation, `title`, `resource_link`; batches removed.
    V2025_06_18,
    /// `2025-11-25`: icons, tasks, URL elicitation, tools in sampling.
    V2025_11_25,
    /// `2026-07-28`: the sessionless redesign (no `initialize`, `server/discover`, per-request `_meta`).
    V2026_07_28,
}

/// Which handshake a revision uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// `initialize` handshake, a session, and requests in both directions (2024-11-05 … 2025-11-25).
    Legacy,
    /// No handshake; version and capabilities travel in every request's `_meta` (2026-07-28).
    Modern,
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 5] = [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];

    /// The newest revision this crate implements.
    pub const LATEST: Revision = Revision::V2026_07_28;

    /// The newest revision of the legacy (initialize-handshake) era.
    pub const LATEST_LEGACY: Revision = Revision::V2025_11_25;

    /// The exact version string used on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// The handshake era of this revision.
    pub const fn era(self) -> Era {
        match self {
            Revision::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// Position in [`Revision::ALL`]; handy as an index into per-revision tables.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Parses an exact version string; anything else is an [`UnknownRevision`].
    pub fn parse(s: &str) -> Result<Revision, UnknownRevision> {
        Revision::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRevision(s.to_owned()))
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Revision {
    type Err = UnknownRevision;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Revision::parse(s)
    }
}

/// A version string that names none of the known revisions. The string is kept as received.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
#[error("unknown MCP protocol version {0:?}")]
pub struct UnknownRevision(pub String);

impl Serialize for Revision {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Revision {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        Revision::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_known_string_and_keeps_unknown_ones() {
        for r in Revision::ALL {
            assert_eq!(Revision::parse(r.as_str()), Ok(r));
        }
        let err = Revision::parse("2025-13-01").unwrap_err();
        assert_eq!(err.0, "2025-13-01");
        assert!(Revision::parse("").is_err());
    }

    #[test]
    fn ordered_oldest_first_with_eras() {
        assert!(Revision::V2024_11_05 < Revision::V2026_07_28);
        assert!(Revision::ALL.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(Revision::V2025_11_25.era(), Era::Legacy);
        assert_eq!(Revision::V2026_07_28.era(), Era::Modern);
    }
}
