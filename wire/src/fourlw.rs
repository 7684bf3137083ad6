//! Four-letter words: on a fresh connection the first 4 bytes, read as a length, may be an
//! ASCII command such as `ruok` (ZooKeeper's `NIOServerCnxn.checkFourLetterWord` and
//! `FourLetterCommands`). Every known word decodes to a
//! length over 1 MiB, so it can never be mistaken for a real ConnectRequest frame.

/// The four-letter commands ZooKeeper 3.9 knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FourLetterWord {
    Conf,
    Cons,
    Crst,
    Dirs,
    Dump,
    Envi,
    Gtmk,
    Hash,
    Isro,
    Mntr,
    Ruok,
    Srst,
    Srvr,
    Stat,
    Stmk,
    Wchc,
    Wchp,
    Wchs,
}

impl FourLetterWord {
    pub const ALL: [FourLetterWord; 18] = [
        FourLetterWord::Conf,
        FourLetterWord::Cons,
        FourLetterWord::Crst,
        FourLetterWord::Dirs,
        FourLetterWord::Dump,
        FourLetterWord::Envi,
        FourLetterWord::Gtmk,
        FourLetterWord::Hash,
        FourLetterWord::Isro,
        FourLetterWord::Mntr,
        FourLetterWord::Ruok,
        FourLetterWord::Srst,
        FourLetterWord::Srvr,
        FourLetterWord::Stat,
        FourLetterWord::Stmk,
        FourLetterWord::Wchc,
        FourLetterWord::Wchp,
        FourLetterWord::Wchs,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FourLetterWord::Conf => "conf",
            FourLetterWord::Cons => "cons",
            FourLetterWord::Crst => "crst",
            FourLetterWord::Dirs => "dirs",
            FourLetterWord::Dump => "dump",
            FourLetterWord::Envi => "envi",
            FourLetterWord::Gtmk => "gtmk",
            FourLetterWord::Hash => "hash",
            FourLetterWord::Isro => "isro",
            FourLetterWord::Mntr => "mntr",
            FourLetterWord::Ruok => "ruok",
            FourLetterWord::Srst => "srst",
            FourLetterWord::Srvr => "srvr",
            FourLetterWord::Stat => "stat",
            FourLetterWord::Stmk => "stmk",
            FourLetterWord::Wchc => "wchc",
            FourLetterWord::Wchp => "wchp",
            FourLetterWord::Wchs => "wchs",
        }
    }

    pub fn from_name(name: &str) -> Option<FourLetterWord> {
        FourLetterWord::ALL
            .iter()
            .copied()
            .find(|w| w.as_str() == name)
    }

    /// Reads the first four bytes of a fresh connection as a command, if they are one.
    pub fn detect(first4: [u8; 4]) -> Option<FourLetterWord> {
        std::str::from_utf8(&first4)
            .ok()
            .and_then(FourLetterWord::from_name)
    }
}
