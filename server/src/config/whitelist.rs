//! `4lw.commands.whitelist`: which four-letter words the client port answers.

use std::collections::BTreeSet;
use std::fmt;

use wire::FourLetterWord;

/// Which four-letter words the client port answers (`4lw.commands.whitelist`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FourLetterWhitelist {
    /// `*`: every word.
    All,
    /// Only these words. `srvr` is always among them, as in ZooKeeper (`zkServer.sh status`
    /// depends on it).
    Only(BTreeSet<&'static str>),
}

impl FourLetterWhitelist {
    /// ZooKeeper's default for a server started from a zoo.cfg: `srvr` only.
    pub fn zookeeper_default() -> FourLetterWhitelist {
        FourLetterWhitelist::only(std::iter::empty())
    }

    /// The given words plus `srvr`.
    pub fn only(words: impl IntoIterator<Item = FourLetterWord>) -> FourLetterWhitelist {
        let mut set: BTreeSet<&'static str> =
            words.into_iter().map(FourLetterWord::as_str).collect();
        set.insert(FourLetterWord::Srvr.as_str());
        FourLetterWhitelist::Only(set)
    }

    /// Parses ZooKeeper's comma-separated form. Any `*` item means all words. Names that are not
    /// four-letter words are returned separately so the caller can warn; ZooKeeper ignores them.
    pub fn parse(list: &str) -> (FourLetterWhitelist, Vec<String>) {
        let mut words = Vec::new();
        let mut unknown = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item == "*" {
                return (FourLetterWhitelist::All, Vec::new());
            }
            match FourLetterWord::from_name(item) {
                Some(w) => words.push(w),
                None => unknown.push(item.to_string()),
            }
        }
        (FourLetterWhitelist::only(words), unknown)
    }

    pub fn allows(&self, word: FourLetterWord) -> bool {
        match self {
            FourLetterWhitelist::All => true,
            FourLetterWhitelist::Only(set) => set.contains(word.as_str()),
        }
    }

    pub(super) fn add(&mut self, word: FourLetterWord) {
        if let FourLetterWhitelist::Only(set) = self {
            set.insert(word.as_str());
        }
    }
}

impl fmt::Display for FourLetterWhitelist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FourLetterWhitelist::All => f.write_str("*"),
            FourLetterWhitelist::Only(set) => {
                let list: Vec<&str> = set.iter().copied().collect();
                f.write_str(&list.join(","))
            }
        }
    }
}
