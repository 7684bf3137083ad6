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

/// A name of up to 23 bytes as a sort key: its bytes zero-padded to 24 and read as three
/// big-endian words, then its length. Comparing keys is comparing the names' bytes (a shorter
/// name pads with zeros where the longer one has its next byte, so a prefix sorts first, and
/// equal words with different lengths can only differ in trailing zero bytes, where the length
/// decides as byte order does), in three word compares instead of a `memcmp` call: a child
/// lookup's binary search does about ten of them per path component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key([u64; 3], u8);

impl Key {
    /// The key of `bytes`, if they are short enough to have one.
    #[inline]
    pub fn of(bytes: &[u8]) -> Option<Key> {
        if bytes.len() > INLINE {
            return None;
        }
        let mut padded = [0u8; 24];
        padded[..bytes.len()].copy_from_slice(bytes);
        Some(Key::from_padded(&padded, bytes.len()))
    }

    #[inline]
    fn from_padded(b: &[u8; 24], len: usize) -> Key {
        let word = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Key([word(0), word(8), word(16)], len as u8)
    }
}

impl Name {
    /// The name's sort key (`Key`), if it is held in place.
    #[inline]
    pub fn key(&self) -> Option<Key> {
        match self {
            Name::Inline {
                len_plus_one,
                bytes,
            } => {
                let mut padded = [0u8; 24];
                padded[..INLINE].copy_from_slice(bytes);
                Some(Key::from_padded(&padded, len_plus_one.get() as usize - 1))
            }
            Name::Heap(_) => None,
        }
    }

    /// Orders this name against `bytes`, whose key (if any) the caller computed once.
    #[inline]
    pub fn cmp_bytes(&self, bytes: &[u8], key: Option<Key>) -> Ordering {
        match (self.key(), key) {
            (Some(mine), Some(theirs)) => mine.cmp(&theirs),
            _ => self.as_bytes().cmp(bytes),
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
        self.cmp_bytes(other.as_bytes(), other.key())
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

    /// Keys order exactly as bytes do, for every pair of a set of names chosen to catch
    /// each way the word compare could go wrong: prefixes, zero and 0xFF bytes (a zero byte
    /// against the padding), differences in each of the three words and in the last byte,
    /// the 23-byte limit, and names too long to have a key.
    #[test]
    fn name_keys_order_exactly_as_the_names_bytes() {
        let mut names: Vec<Vec<u8>> = vec![vec![]];
        for len in [1, 7, 8, 9, 15, 16, 17, 22, 23, 24, 30] {
            for fill in [b'a', 0u8, 0xFF, b'0'] {
                let base = vec![fill; len];
                names.push(base.clone());
                for at in [0, len / 2, len - 1] {
                    for b in [0u8, 1, b'b', 0xFE] {
                        let mut v = base.clone();
                        v[at] = b;
                        names.push(v);
                    }
                }
            }
        }
        names.push(b"lock-0000000001".to_vec());
        names.push(b"lock-0000000001\0".to_vec());
        names.push(b"lock-00000000010".to_vec());
        let mut checked = 0;
        for a in &names {
            for b in &names {
                let want = a.cmp(b);
                if let (Some(ka), Some(kb)) = (Key::of(a), Key::of(b)) {
                    assert_eq!(ka.cmp(&kb), want, "{a:?} against {b:?}");
                    checked += 1;
                }
                assert_eq!(Key::of(a).is_some(), a.len() <= INLINE);
                // Names hold text; the byte-level checks above cover the rest.
                if let (Ok(sa), Ok(sb)) = (std::str::from_utf8(a), std::str::from_utf8(b)) {
                    let (na, nb) = (Name::new(sa), Name::new(sb));
                    assert_eq!(na.cmp(&nb), want, "{sa:?} against {sb:?}");
                    assert_eq!(na.cmp_bytes(b, Key::of(b)), want, "{sa:?} against {sb:?}");
                    assert_eq!(na.key(), Key::of(a));
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
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
