//! Path rules (ZooKeeper's `PathUtils.validatePath`) and the parent/child split the tree uses.

/// `PathUtils.validatePath`: absolute, no empty, `.` or `..` component, no trailing `/`
/// (except the root itself), no NUL and none of the characters ZooKeeper reserves.
pub fn validate_path(path: &str) -> bool {
    if path.is_empty() || !path.starts_with('/') {
        return false;
    }
    if path == "/" {
        return true;
    }
    if path.ends_with('/') {
        return false;
    }
    for comp in path[1..].split('/') {
        if comp.is_empty() || comp == "." || comp == ".." {
            return false;
        }
    }
    path.chars().all(|c| {
        let u = c as u32;
        !(u == 0
            || (0x01..=0x1f).contains(&u)
            || (0x7f..=0x9f).contains(&u)
            || (0xd800..=0xf8ff).contains(&u)
            || (0xfff0..=0xffff).contains(&u))
    })
}

/// Splits at the last `/`: `("/a", "b")` for `/a/b`, `("/", "a")` for `/a`, `("/", "")` for `/`.
/// `None` when there is no `/` at all. ZooKeeper names the root's parent `""` and maps it to
/// the root, which is the same as calling it `/` here.
pub fn split(path: &str) -> Option<(&str, &str)> {
    let i = path.rfind('/')?;
    let parent = if i == 0 { "/" } else { &path[..i] };
    Some((parent, &path[i + 1..]))
}

/// True when `path` is `parent`, one `/` and a name: the last step of a canonical path, so that
/// the name `split` gives is the child of `parent` that `path` names (`//a` is not one of `/`).
pub fn is_child_path(path: &str, parent: &str) -> bool {
    let sep = if parent == "/" { 0 } else { 1 };
    path.len() > parent.len() + sep
        && path.starts_with(parent)
        && (sep == 0 || path.as_bytes()[parent.len()] == b'/')
        && !path[parent.len() + sep..].contains('/')
}

/// True when `path` is `ancestor` or lies below it.
pub fn is_at_or_below(path: &str, ancestor: &str) -> bool {
    if ancestor == "/" {
        return path.starts_with('/');
    }
    path == ancestor
        || (path.starts_with(ancestor) && path.as_bytes().get(ancestor.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_names_the_root_as_parent_of_top_level_nodes() {
        assert_eq!(split("/a"), Some(("/", "a")));
        assert_eq!(split("/a/b"), Some(("/a", "b")));
        assert_eq!(split("/"), Some(("/", "")));
        assert_eq!(split("/a/"), Some(("/a", "")));
        assert_eq!(split("a"), None);
    }

    #[test]
    fn a_child_path_is_its_parent_one_slash_and_a_name() {
        assert!(is_child_path("/a", "/"));
        assert!(is_child_path("/a/b", "/a"));
        assert!(!is_child_path("//a", "/"));
        assert!(!is_child_path("/a/b", "/"));
        assert!(!is_child_path("/a/", "/a"));
        assert!(!is_child_path("/", "/"));
        assert!(!is_child_path("/ab", "/a"));
    }

    #[test]
    fn validate_path_applies_every_rule() {
        for ok in [
            "/",
            "/a",
            "/a/b",
            "/a.b",
            "/...",
            "/a b",
            "/\u{00a0}",
            "/\u{f900}",
        ] {
            assert!(validate_path(ok), "{ok:?} should be valid");
        }
        for bad in [
            "",
            "a",
            "/a/",
            "//",
            "/a//b",
            "/.",
            "/a/..",
            "/a/./b",
            "/a\0",
            "/\u{1}",
            "/\u{7f}",
            "/\u{9f}",
            "/\u{e000}",
            "/\u{fff0}",
            "/\u{ffff}",
        ] {
            assert!(!validate_path(bad), "{bad:?} should be invalid");
        }
    }

    #[test]
    fn is_at_or_below_respects_component_boundaries() {
        assert!(is_at_or_below("/a/b", "/a"));
        assert!(is_at_or_below("/a", "/a"));
        assert!(!is_at_or_below("/ab", "/a"));
        assert!(is_at_or_below("/ab", "/"));
    }
}
