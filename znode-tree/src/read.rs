//! The read path with watch registration (§6.2): exists registers even on NoNode; getData and
//! getChildren only when the read succeeds; addWatch registers without any check.

use wire::ops::watches::{add_watch_mode, ErrorResponse};
use wire::{ErrorCode, Request, Response};

use crate::tree::{ReadCtx, Tree};
use crate::watch::{WatchKind, WatchRegistry, WatcherId};

pub fn read_with_watch(
    tree: &Tree,
    watches: &mut WatchRegistry,
    ctx: &ReadCtx,
    w: WatcherId,
    req: &Request,
) -> Result<Response, ErrorCode> {
    if let Request::AddWatch(r) = req {
        let kind = match r.mode {
            add_watch_mode::PERSISTENT => WatchKind::Persistent,
            add_watch_mode::PERSISTENT_RECURSIVE => WatchKind::PersistentRecursive,
            // ZooKeeper's AddWatchMode.fromInt throws, which its server reports this way.
            _ => return Err(ErrorCode::MarshallingError),
        };
        watches.add(w, &r.path, kind);
        return Ok(Response::AddWatch(ErrorResponse { err: 0 }));
    }
    let res = tree.read(ctx, req);
    match req {
        Request::Exists(r) if r.watch => match &res {
            Ok(_) => watches.add(w, &r.path, WatchKind::Data),
            Err(ErrorCode::NoNode) => watches.add(w, &r.path, WatchKind::Exist),
            Err(_) => {}
        },
        Request::GetData(r) if r.watch && res.is_ok() => watches.add(w, &r.path, WatchKind::Data),
        Request::GetChildren(r) | Request::GetChildren2(r) if r.watch && res.is_ok() => {
            watches.add(w, &r.path, WatchKind::Child)
        }
        _ => {}
    }
    res
}
