//! Closed sets of names: an enum whose variants a scenario (or a command line, or a typed
//! configuration) selects by name.
//!
//! The names are written once, beside the variants, by [`names!`] (for an enum defined
//! elsewhere) or [`choice!`] (which defines the enum too). Everything else takes them from
//! the [`Choice`] implementation: the registry's list of allowed values and so the docs, the
//! parser, the error that lists the allowed values, the name printed back. `name` is an
//! exhaustive `match`, so a variant added without a name does not compile, and a name cannot
//! be listed without the variant it selects.

/// An enum whose variants are selected by name.
pub trait Choice: Copy + Sized + 'static {
    /// Every name, in the order docs and error messages list them.
    const NAMES: &'static [&'static str];

    /// The name of this variant.
    fn name(self) -> &'static str;

    /// The variant `name` selects, if any (exact, case-sensitive).
    fn from_name(name: &str) -> Option<Self>;
}

/// Implements [`Choice`] for an existing enum: `names!(Enum { Variant = "name", ... })`,
/// every variant once.
#[macro_export]
macro_rules! names {
    ($ty:ty { $($variant:ident = $text:literal),+ $(,)? }) => {
        impl $crate::Choice for $ty {
            const NAMES: &'static [&'static str] = &[$($text),+];

            fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

/// Defines a field-less enum and its names at once:
///
/// ```
/// choice::choice! {
///     /// Which way a flow sends.
///     pub enum Direction {
///         /// Client to server.
///         Up = "up",
///         /// Server to client.
///         Down = "down",
///     }
/// }
/// use choice::Choice;
/// assert_eq!(Direction::from_name("down"), Some(Direction::Down));
/// assert_eq!(Direction::NAMES, &["up", "down"]);
/// ```
#[macro_export]
macro_rules! choice {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        $crate::names!($name { $($variant = $text),+ });
    };
}

/// `a` followed by `b`, in a constant: lets one allowed list join two name sets
/// (`const ALL: [&str; N] = concat(A::NAMES, B::NAMES)` with `N = A::NAMES.len() + B::NAMES.len()`).
pub const fn concat<const N: usize>(a: &[&'static str], b: &[&'static str]) -> [&'static str; N] {
    assert!(a.len() + b.len() == N, "N must be the total length");
    let mut out = [""; N];
    let mut i = 0;
    while i < a.len() {
        out[i] = a[i];
        i += 1;
    }
    let mut j = 0;
    while j < b.len() {
        out[i + j] = b[j];
        j += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    choice! {
        /// A test set.
        enum Fruit {
            /// First.
            Apple = "apple",
            /// Second, with a dash.
            BloodOrange = "blood-orange",
        }
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_none() {
        for (i, n) in Fruit::NAMES.iter().enumerate() {
            let f = Fruit::from_name(n).expect("listed name parses");
            assert_eq!(f.name(), *n);
            assert_eq!(i, f as usize, "NAMES keep the variants' order");
        }
        assert_eq!(Fruit::from_name("Apple"), None);
        assert_eq!(Fruit::from_name(""), None);
    }

    #[test]
    fn concat_joins_in_order() {
        const BOTH: [&str; 3] = concat(&["a"], &["b", "c"]);
        assert_eq!(BOTH, ["a", "b", "c"]);
    }
}
