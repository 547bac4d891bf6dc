//! Upstreams by id: the position of an upstream in the configuration, as a type of its own,
//! and the tables indexed by it (the pool's upstreams, the catalog's members and listings).

/// One upstream of an aggregator: its place in the configuration, which never changes
/// while the aggregator lives. Made only by [`PerUpstream`], so every id names an
/// upstream that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct UpstreamId(usize);

/// One `T` per upstream, in configuration order.
#[derive(Debug, Clone, Default)]
pub(crate) struct PerUpstream<T>(Vec<T>);

impl<T> PerUpstream<T> {
    pub(crate) fn get(&self, id: UpstreamId) -> Option<&T> {
        self.0.get(id.0)
    }

    /// Every upstream's id, in order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = UpstreamId> {
        (0..self.0.len()).map(UpstreamId)
    }

    /// `(id, item)` in order.
    pub(crate) fn iter_ids(&self) -> impl Iterator<Item = (UpstreamId, &T)> {
        self.0.iter().enumerate().map(|(i, t)| (UpstreamId(i), t))
    }

    /// The items, in order.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }

    /// Each item mapped, in order.
    pub(crate) fn map<U>(&self, f: impl FnMut(&T) -> U) -> PerUpstream<U> {
        PerUpstream(self.0.iter().map(f).collect())
    }

    /// `(id, item)` by value, in order.
    pub(crate) fn into_iter_ids(self) -> impl Iterator<Item = (UpstreamId, T)> {
        self.0
            .into_iter()
            .enumerate()
            .map(|(i, t)| (UpstreamId(i), t))
    }
}

impl<T> std::ops::Index<UpstreamId> for PerUpstream<T> {
    type Output = T;
    fn index(&self, id: UpstreamId) -> &T {
        &self.0[id.0]
    }
}

impl<T> std::ops::IndexMut<UpstreamId> for PerUpstream<T> {
    fn index_mut(&mut self, id: UpstreamId) -> &mut T {
        &mut self.0[id.0]
    }
}

impl<T> FromIterator<T> for PerUpstream<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        PerUpstream(items.into_iter().collect())
    }
}

impl<'a, T> IntoIterator for &'a PerUpstream<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
