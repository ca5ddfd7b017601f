//! Path normalisation: `VPath::parse`, `parse_from` and `resolve_link`.
//!
//! Every path an agent sends goes through here before it touches storage,
//! so this is where an escape from the workspace root would start. The
//! checks: a parsed path is normal (absolute, no empty, `.` or `..` names,
//! no NUL, within the length limits), parsing is idempotent and independent
//! of the cwd once absolute, and the result (or error code) equals a
//! straightforward lexical reference in which `..` above the root is an
//! error, never clamped. Symlink targets resolve chroot-style to a normal
//! path whatever they say.

use stead_vfs::{VPath, MAX_NAME_LEN, MAX_PATH_LEN};

use crate::Target;

pub const TARGET: Target = Target {
    name: "path",
    about: "VPath::parse/parse_from/resolve_link: normal form, idempotent, never above the root, limits, matches a reference",
    run,
    seeds,
    tokens: &["/", "..", ".", "//", "/../", "./", "\0", "%2e", "\\", "é", "~"],
    bounds: None,
};

/// The input is `cwd` and `path` separated by the first `\n` (no `\n`: the
/// cwd is `/`).
pub fn run(data: &[u8]) {
    let input = super::text(data);
    let (cwd_text, path) = input.split_once('\n').unwrap_or(("/", &input));
    let cwd = VPath::parse(cwd_text).unwrap_or_else(|_| VPath::root());
    check_normal(&cwd);

    let parsed = VPath::parse_from(path, &cwd);
    let expected = reference(path, &cwd);
    match (&parsed, &expected) {
        (Ok(got), Ok(want)) => assert_eq!(got.as_str(), want, "parse_from({path:?}, {cwd:?})"),
        (Err(got), Err(want)) => {
            assert_eq!(got.code().as_str(), *want, "parse_from({path:?}, {cwd:?})")
        }
        _ => panic!("parse_from({path:?}, {cwd:?}) = {parsed:?}, reference {expected:?}"),
    }
    if let Ok(p) = &parsed {
        check_normal(p);
        // Idempotent, and an absolute path does not depend on the cwd.
        assert_eq!(&VPath::parse(p.as_str()).expect("reparse"), p);
        assert_eq!(&VPath::parse_from(p.as_str(), &cwd).expect("reparse"), p);
        if path.starts_with('/') {
            assert_eq!(VPath::parse(path).ok().as_ref(), Some(p));
        }
        // A relative path lands below the cwd unless it climbs out of it.
        if !path.starts_with('/') && !path.split('/').any(|c| c == "..") {
            assert!(p.starts_with(&cwd), "{p:?} not below {cwd:?}");
        }
        // Family relations agree with the text.
        if let Some(parent) = p.parent() {
            check_normal(&parent);
            assert_eq!(
                &parent.join(p.name().expect("a non-root path has a name")),
                p
            );
            assert!(p.starts_with(&parent));
            let relative = p.strip_prefix(&parent).expect("below its parent");
            assert_eq!(&parent.join_relative(relative), p);
        } else {
            assert!(p.is_root());
        }
        let relative = p.strip_prefix(&VPath::root()).expect("below the root");
        assert_eq!(&VPath::root().join_relative(relative), p);
    }

    // A symlink target, whatever it says, resolves to a normal path.
    let linked = VPath::resolve_link(&cwd, path);
    check_normal_link(&linked, path);
}

/// The invariants of a normal path.
fn check_normal(p: &VPath) {
    let s = p.as_str();
    assert!(s.starts_with('/'), "{s:?} is not absolute");
    assert!(s.len() <= MAX_PATH_LEN, "{} bytes", s.len());
    assert!(!s.contains('\0'));
    if !p.is_root() {
        assert!(!s.ends_with('/'), "{s:?} ends with /");
        for name in s[1..].split('/') {
            assert!(!name.is_empty() && name != "." && name != "..", "{s:?}");
            assert!(name.len() <= MAX_NAME_LEN, "{s:?}");
        }
    }
    assert_eq!(
        p.components().count(),
        s.split('/').filter(|c| !c.is_empty()).count()
    );
}

/// `resolve_link` does not check lengths (targets were checked when the link
/// was made), so only the shape is required.
fn check_normal_link(p: &VPath, target: &str) {
    let s = p.as_str();
    assert!(s.starts_with('/'), "resolve_link(.., {target:?}) = {s:?}");
    if !p.is_root() {
        assert!(
            s[1..]
                .split('/')
                .all(|n| !n.is_empty() && n != "." && n != ".."),
            "resolve_link(.., {target:?}) = {s:?}"
        );
    }
}

/// The specification, written plainly: the normal path, or the error code.
fn reference(input: &str, cwd: &VPath) -> Result<String, &'static str> {
    if input.is_empty() || input.contains('\0') {
        return Err("EINVAL");
    }
    if input.len() > MAX_PATH_LEN {
        return Err("ENAMETOOLONG");
    }
    let mut stack: Vec<&str> = if input.starts_with('/') {
        Vec::new()
    } else {
        cwd.as_str().split('/').filter(|c| !c.is_empty()).collect()
    };
    for name in input.split('/') {
        match name {
            "" | "." => {}
            ".." => {
                if stack.pop().is_none() {
                    return Err("EACCES");
                }
            }
            name if name.len() > MAX_NAME_LEN => return Err("ENAMETOOLONG"),
            name => stack.push(name),
        }
    }
    let out = format!("/{}", stack.join("/"));
    if out.len() > MAX_PATH_LEN {
        return Err("ENAMETOOLONG");
    }
    Ok(out)
}

fn seeds() -> Vec<Vec<u8>> {
    let long_name = "n".repeat(255);
    let mut seeds: Vec<String> = [
        "/",
        "a/b",
        "//a/./b/",
        "/a/b/../c",
        "/..",
        "../x",
        "a/../../etc/passwd",
        "/home/agent\n../../..",
        "/a/b\nc/./d/..",
        "/x\n/abs",
        ".",
        "./",
        "...",
        "/a\0b",
        "é/ü/../ß",
        "/tmp\n~",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    seeds.push(format!("/{long_name}"));
    seeds.push(format!("/{long_name}x"));
    seeds.push("/abcdefgh".repeat(511));
    seeds.push(format!("{}\n{}", "/d".repeat(2000), "x/".repeat(60)));
    seeds.into_iter().map(String::into_bytes).collect()
}
