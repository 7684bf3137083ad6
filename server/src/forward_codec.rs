//! The frames a follower or observer sends its leader over the forward link (an `App` link of the
//! peer transport): writes to propose and session activity. Pure encoding, no IO.
//!
//! ```text
//! frame   := kind:u8 body
//! kind 1  Propose  body = a znode-tree log entry (Entry::encode); the leader stamps its own time
//! kind 2  Touch    body = count:u32, then count × (session:i64, timeout_ms:i32), big-endian
//! ```
//!
//! There are no replies: every member applies the committed entry and the member holding the
//! client's connection answers it. A leader that cannot propose closes the link, and the follower
//! then closes every client connection with a write in flight on it (their outcome is unknown).

/// One frame to the leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToLeader {
    /// An encoded `znode_tree::Entry`.
    Propose(Vec<u8>),
    /// Sessions whose clients this member heard from since the last touch, with their timeouts:
    /// ZooKeeper's learner PING carrying the session table.
    Touch(Vec<(i64, i32)>),
}

const PROPOSE: u8 = 1;
const TOUCH: u8 = 2;

impl ToLeader {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            ToLeader::Propose(entry) => {
                let mut out = Vec::with_capacity(1 + entry.len());
                out.push(PROPOSE);
                out.extend_from_slice(entry);
                out
            }
            ToLeader::Touch(sessions) => {
                let mut out = Vec::with_capacity(5 + sessions.len() * 12);
                out.push(TOUCH);
                out.extend_from_slice(&(sessions.len() as u32).to_be_bytes());
                for (id, timeout) in sessions {
                    out.extend_from_slice(&id.to_be_bytes());
                    out.extend_from_slice(&timeout.to_be_bytes());
                }
                out
            }
        }
    }

    pub fn decode(frame: &[u8]) -> Result<ToLeader, String> {
        let (&kind, body) = frame.split_first().ok_or("empty forward frame")?;
        match kind {
            PROPOSE if body.is_empty() => Err("empty proposal".into()),
            PROPOSE => Ok(ToLeader::Propose(body.to_vec())),
            TOUCH => {
                let count = body
                    .get(..4)
                    .map(|b| u32::from_be_bytes(b.try_into().unwrap()) as usize)
                    .ok_or("touch frame without a count")?;
                let rest = &body[4..];
                if rest.len() != count.saturating_mul(12) {
                    return Err(format!(
                        "touch frame announces {count} sessions but carries {} bytes",
                        rest.len()
                    ));
                }
                Ok(ToLeader::Touch(
                    rest.chunks_exact(12)
                        .map(|c| {
                            (
                                i64::from_be_bytes(c[..8].try_into().unwrap()),
                                i32::from_be_bytes(c[8..].try_into().unwrap()),
                            )
                        })
                        .collect(),
                ))
            }
            other => Err(format!("unknown forward frame kind {other}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_byte_for_byte() {
        let touch = ToLeader::Touch(vec![(0x0102_0304_0506_0708, 4000), (-1, 0)]);
        let bytes = touch.encode();
        assert_eq!(
            bytes,
            [
                vec![2, 0, 0, 0, 2],
                vec![1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0x0f, 0xa0],
                vec![0xff; 8],
                vec![0, 0, 0, 0]
            ]
            .concat()
        );
        assert_eq!(ToLeader::decode(&bytes), Ok(touch));
        let propose = ToLeader::Propose(vec![9, 8, 7]);
        assert_eq!(propose.encode(), vec![1, 9, 8, 7]);
        assert_eq!(ToLeader::decode(&[1, 9, 8, 7]), Ok(propose));
    }

    #[test]
    fn damaged_frames_are_errors_not_panics() {
        assert_eq!(ToLeader::decode(&[]), Err("empty forward frame".into()));
        assert_eq!(ToLeader::decode(&[1]), Err("empty proposal".into()));
        assert_eq!(
            ToLeader::decode(&[2, 0, 0]),
            Err("touch frame without a count".into())
        );
        assert_eq!(
            ToLeader::decode(&[2, 0xff, 0xff, 0xff, 0xff, 1]),
            Err("touch frame announces 4294967295 sessions but carries 1 bytes".into())
        );
        assert_eq!(
            ToLeader::decode(&[7]),
            Err("unknown forward frame kind 7".into())
        );
    }
}
