//! The registry of named checks, grouped by the part of the protocol they pin.

mod acl;
mod basic;
mod chroot;
mod ephemeral;
mod errors;
mod lock;
mod modes;
mod multi;
mod sessions;
mod watches;

use crate::CheckFn;

/// Registers an async check function under its own name.
macro_rules! checks {
    ($($module:ident :: $name:ident),* $(,)?) => {
        vec![$((stringify!($name), (|ctx, base| Box::pin($module::$name(ctx, base))) as CheckFn)),*]
    };
}

/// Every check, in run order.
pub fn all() -> Vec<(&'static str, CheckFn)> {
    checks![
        basic::create_get_stat,
        basic::set_data_stat,
        basic::delete_with_version,
        basic::parent_cversion_pzxid,
        basic::exists_and_sync,
        basic::descendant_count,
        basic::system_nodes,
        errors::error_node_exists,
        errors::error_no_node,
        errors::error_bad_version,
        errors::error_not_empty,
        errors::error_no_children_for_ephemerals,
        ephemeral::sequential_names_10_digits,
        ephemeral::ephemeral_owner_is_session,
        ephemeral::ephemerals_vanish_on_close,
        ephemeral::list_ephemerals,
        sessions::session_reattach_keeps_ephemerals,
        sessions::session_expiry_removes_ephemerals,
        watches::watch_data_changed,
        watches::watch_data_deleted,
        watches::watch_exists_created,
        watches::watch_children_changed,
        watches::watch_children_node_deleted,
        watches::persistent_recursive_grandchild,
        watches::persistent_watch_node,
        watches::watch_events_need_read_acl,
        watches::watch_remove_answers,
        multi::multi_commit_results,
        multi::multi_failure_applies_nothing,
        multi::multi_check_version_fails,
        multi::multi_ephemeral_owner,
        multi::multi_read,
        lock::lock_curator_contention,
        lock::lock_guarded_write_after_loss,
        modes::ttl_node_expires,
        modes::ttl_sequential_name,
        modes::container_deleted_when_emptied,
        acl::digest_creator_acl,
        acl::world_read_only_acl,
        acl::set_acl_versions,
        acl::whoami_lists_auth,
        chroot::chroot_ops_and_paths,
        chroot::chroot_watch_paths,
        chroot::chroot_in_connect_string,
    ]
}
