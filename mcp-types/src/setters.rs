//! [`setters!`](crate::setters): the builder-style setters of the crates' `#[non_exhaustive]`
//! option structs, written once.

/// Builder-style setters, `pub fn field(mut self, value: T) -> Self` (`#[must_use]`), one
/// per listed field, each with the doc comment written above it:
///
/// ```
/// #[derive(Default)]
/// #[non_exhaustive]
/// pub struct Options {
///     /// How many.
///     pub count: usize,
/// }
/// mcp_types::setters! {
///     Options {
///         /// Sets [`Options::count`].
///         count: usize;
///     }
/// }
/// assert_eq!(Options::default().count(3).count, 3);
/// ```
#[macro_export]
macro_rules! setters {
    ($ty:ident { $($(#[$doc:meta])* $name:ident: $t:ty;)* }) => {
        impl $ty {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $name(mut self, value: $t) -> Self {
                    self.$name = value;
                    self
                }
            )*
        }
    };
}
