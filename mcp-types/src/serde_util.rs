//! Small serde helpers shared by the wire model.

use serde::{Deserialize, Deserializer};

/// Deserializes any present value, `null` included, as `Some`, so that a field
/// sent as `null` is written back as `null` rather than dropped.
pub(crate) fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}
