//! A child's name, the key of its parent's child map. Every znode has one, so its size is paid
//! a million times over: 24 bytes, holding names of up to 23 bytes in place (`lock-0000000001`,
//! `latch-0000000001`, `isr_change_0000000001`) and longer ones in one heap block. Keys compare
//! as bytes, which is `str` order, and a lookup borrows the key as `[u8]`, so finding a child
//! never re-checks UTF-8 and never allocates.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::num::NonZeroU8;

const INLINE: usize = 23;

/// `Inline` keeps `len + 1` in a `NonZeroU8`: the zero it can never hold is how the compiler
/// tells `Heap` apart, so the enum needs no separate tag and stays at 24 bytes.
#[derive(Clone)]
pub(crate) enum Name {
    Inline {
        len_plus_one: NonZeroU8,
        bytes: [u8; INLINE],
    },
    Heap(Box<str>),
}

impl Name {
    pub fn new(s: &str) -> Name {
        if s.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            Name::Inline {
                len_plus_one: NonZeroU8::MIN.saturating_add(s.len() as u8),
                bytes,
            }
        } else {
            Name::Heap(s.into())
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Name::Inline {
                len_plus_one,
                bytes,
            } => &bytes[..len_plus_one.get() as usize - 1],
            Name::Heap(s) => s.as_bytes(),
        }
    }

    /// The name as text. An inline name is bytes copied whole from a `str`, so the check
    /// always passes; it is paid only where a name leaves the tree (getChildren).
    pub fn as_str(&self) -> &str {
        match self {
            Name::Inline { .. } => {
                std::str::from_utf8(self.as_bytes()).expect("a name is copied from a str")
            }
            Name::Heap(s) => s,
        }
    }
}

impl Borrow<[u8]> for Name {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Name {}

impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Name) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Name {
    fn cmp(&self, other: &Name) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_up_to_23_bytes_are_inline_and_the_type_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Name>(), 24);
        for s in ["", "a", "lock-0000000001", "isr_change_00000000012"] {
            assert!(matches!(Name::new(s), Name::Inline { .. }), "{s}");
            assert_eq!(Name::new(s).as_str(), s);
        }
        let long = "a".repeat(24);
        assert!(matches!(Name::new(&long), Name::Heap(_)));
        assert_eq!(Name::new(&long).as_bytes(), long.as_bytes());
        // Multi-byte characters are kept whole.
        assert_eq!(Name::new("é€𝄞").as_str(), "é€𝄞");
    }

    #[test]
    fn names_order_as_their_bytes_whether_inline_or_not() {
        let long = "a".repeat(30);
        let mut want = vec!["b", "a-x", &long, "a", "é", "a0"];
        let mut v: Vec<Name> = want.iter().map(|s| Name::new(s)).collect();
        v.sort();
        let got: Vec<&str> = v.iter().map(|n| n.as_str()).collect();
        want.sort();
        assert_eq!(want, ["a", "a-x", "a0", &long, "b", "é"]);
        assert_eq!(got, want);
        assert_eq!(Name::new("abc"), Name::new("abc"));
        assert_ne!(Name::new("abc"), Name::new("abd"));
    }
}
