//! The macro every wire object is declared with.
//!
//! Each object keeps the members it does not model in `extra` and writes them
//! back, and each optional member is omitted on write when it was absent on read.

/// Declares a wire object. `req` members are required, `opt` members become
/// `Option<T>` that are skipped when `None`. Unknown members land in `extra`.
macro_rules! wire_object {
    (
        $(#[$m:meta])*
        pub struct $name:ident { $($body:tt)* }
    ) => {
        $crate::model::wire_object!(@munch [$(#[$m])*] $name [] $($body)*);
    };
    (@munch $attrs:tt $name:ident [$($out:tt)*]
        $(#[$fm:meta])* req $field:ident : $ty:ty $(, $($rest:tt)*)?
    ) => {
        $crate::model::wire_object!(@munch $attrs $name [$($out)* $(#[$fm])* pub $field: $ty,] $($($rest)*)?);
    };
    (@munch $attrs:tt $name:ident [$($out:tt)*]
        $(#[$fm:meta])* opt $field:ident : $ty:ty $(, $($rest:tt)*)?
    ) => {
        $crate::model::wire_object!(@munch $attrs $name [$($out)*
            $(#[$fm])*
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $field: Option<$ty>,
        ] $($($rest)*)?);
    };
    (@munch [$(#[$m:meta])*] $name:ident [$($out:tt)*]) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $($out)*
            /// Members this crate does not model, kept verbatim.
            #[serde(flatten)]
            pub extra: $crate::jsonrpc::Extra,
        }
    };
}

/// Declares an open string enum: known values as variants, anything else kept in `Other`.
macro_rules! open_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident {
            $(#[$fvm:meta])* $first:ident = $fwire:literal,
            $( $(#[$vm:meta])* $variant:ident = $wire:literal ),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $(#[$fvm])* $first,
            $( $(#[$vm])* $variant, )*
            /// A value this crate does not know, kept as received.
            Other(String),
        }

        impl $name {
            /// The wire string.
            pub fn as_str(&self) -> &str {
                match self {
                    $name::$first => $fwire,
                    $( $name::$variant => $wire, )*
                    $name::Other(s) => s,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $fwire => $name::$first,
                    $( $wire => $name::$variant, )*
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name::$first
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = std::borrow::Cow::<str>::deserialize(d)?;
                Ok($name::from(s.as_ref()))
            }
        }
    };
}

pub(crate) use {open_enum, wire_object};
