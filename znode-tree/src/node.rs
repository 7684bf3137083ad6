//! One znode as stored: the persisted stat (ZooKeeper's `StatPersisted`), data, an index into
//! the interned ACL table and the number of children. Child names are not stored: the tree is
//! keyed by full path in an ordered map, so a node's children are a key range (see
//! `Tree::child_names`). That saves a set and a copy of every name per znode.

use wire::Stat;

/// `EphemeralType.CONTAINER_EPHEMERAL_OWNER`.
pub const CONTAINER_OWNER: i64 = i64::MIN;
/// Top byte of an extended ephemeralOwner (TTL): `0xFF`, then feature id 0, then 40 bits of ttl.
pub const TTL_MARK: i64 = 0xFF00_0000_0000_0000_u64 as i64;
pub const TTL_MASK: i64 = 0xFFFF_0000_0000_0000_u64 as i64;
pub const MAX_TTL: i64 = (1 << 40) - 1;

/// What `ephemeralOwner` says the node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Persistent,
    Ephemeral(i64),
    Container,
    Ttl(i64),
}

pub fn kind_of(owner: i64) -> Kind {
    if owner == 0 {
        Kind::Persistent
    } else if owner == CONTAINER_OWNER {
        Kind::Container
    } else if owner & TTL_MASK == TTL_MARK {
        Kind::Ttl(owner & MAX_TTL)
    } else {
        Kind::Ephemeral(owner)
    }
}

pub fn ttl_owner(ttl: i64) -> i64 {
    TTL_MARK | (ttl & MAX_TTL)
}

/// The stored stat; `cversion` is the count of child creates (§4.2), not the wire value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoredStat {
    pub czxid: i64,
    pub mzxid: i64,
    pub pzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub ephemeral_owner: i64,
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
}

impl StoredStat {
    /// The stored fields in the one order the snapshot encoder and the digest both use:
    /// the six i64s, then the three i32s. Changing it changes the snapshot format.
    pub fn fields(&self) -> ([i64; 6], [i32; 3]) {
        (
            [
                self.czxid,
                self.mzxid,
                self.pzxid,
                self.ctime,
                self.mtime,
                self.ephemeral_owner,
            ],
            [self.version, self.cversion, self.aversion],
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub stat: StoredStat,
    pub data: Option<Box<[u8]>>,
    pub acl: u32,
    pub num_children: u32,
}

impl Node {
    pub fn data_len(&self) -> usize {
        self.data.as_ref().map_or(0, |d| d.len())
    }

    pub fn kind(&self) -> Kind {
        kind_of(self.stat.ephemeral_owner)
    }

    /// The client-visible Stat (`DataNode.copyStat`).
    pub fn wire_stat(&self) -> Stat {
        let s = &self.stat;
        let n = self.num_children as i32;
        Stat {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion.wrapping_mul(2).wrapping_sub(n),
            aversion: s.aversion,
            // Containers and TTL nodes show 0 so clients see them as persistent.
            ephemeral_owner: match self.kind() {
                Kind::Ephemeral(id) => id,
                _ => 0,
            },
            data_length: self.data_len() as i32,
            num_children: n,
            pzxid: s.pzxid,
        }
    }

    pub fn data_vec(&self) -> Option<Vec<u8>> {
        self.data.as_ref().map(|d| d.to_vec())
    }
}
