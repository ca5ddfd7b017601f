//! Patches as `git diff` prints them: the `diff --git` header, mode and
//! index lines, `@@` hunks with three lines of context and git's default
//! function-name context, `\ No newline at end of file`, and `Binary files
//! differ` for content with a NUL. Lines are compared with Myers' algorithm
//! (`similar`), as git does by default.

use gix_hash::ObjectId;
use similar::{capture_diff_slices, group_diff_ops, Algorithm, DiffOp};

use crate::index::MODE_GITLINK;

/// One side of a file's change.
#[derive(Debug, Clone)]
pub struct Side {
    pub mode: u32,
    pub id: ObjectId,
    pub data: Vec<u8>,
}

/// Lines added and removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub added: usize,
    pub removed: usize,
    pub binary: bool,
}

fn is_binary(data: &[u8]) -> bool {
    data[..data.len().min(8000)].contains(&0)
}

fn lines(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|&b| b == b'\n').collect()
}

/// How many lines changed between two contents.
pub fn counts(old: &[u8], new: &[u8]) -> Counts {
    if is_binary(old) || is_binary(new) {
        return Counts {
            binary: true,
            ..Counts::default()
        };
    }
    let (a, b) = (lines(old), lines(new));
    let mut counts = Counts::default();
    for op in &capture_diff_slices(Algorithm::Myers, &a, &b) {
        match *op {
            DiffOp::Equal { .. } => {}
            DiffOp::Delete { old_len, .. } => counts.removed += old_len,
            DiffOp::Insert { new_len, .. } => counts.added += new_len,
            DiffOp::Replace {
                old_len, new_len, ..
            } => {
                counts.removed += old_len;
                counts.added += new_len;
            }
        }
    }
    counts
}

/// `start,len` as a hunk header gives it (`,1` left out; an empty side
/// starts at the line before).
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// git's default function-name rule: the nearest line above the hunk that
/// starts with a letter, `_` or `$`, trailing blanks cut, at most 80 bytes.
fn function_name(old: &[&[u8]], before: usize) -> Option<String> {
    old[..before].iter().rev().find_map(|line| {
        let first = *line.first()?;
        if first.is_ascii_alphabetic() || first == b'_' || first == b'$' {
            let text = String::from_utf8_lossy(line);
            let text = text.trim_end();
            let cut = text.char_indices().nth(80).map_or(text.len(), |(i, _)| i);
            Some(text[..cut].to_string())
        } else {
            None
        }
    })
}

fn push_line(out: &mut Vec<u8>, sign: u8, line: &[u8]) {
    out.push(sign);
    out.extend_from_slice(line);
    if !line.ends_with(b"\n") {
        out.extend_from_slice(b"\n\\ No newline at end of file\n");
    }
}

/// The patch for one path; `None` for a side that does not exist. Empty
/// when nothing differs.
pub fn patch(
    path: &str,
    old: Option<&Side>,
    new: Option<&Side>,
    abbrev: &dyn Fn(&ObjectId) -> String,
) -> Vec<u8> {
    let mut out = Vec::new();
    let zero = ObjectId::null(gix_hash::Kind::Sha1);
    out.extend_from_slice(format!("diff --git a/{path} b/{path}\n").as_bytes());
    match (old, new) {
        (None, Some(n)) => {
            out.extend_from_slice(format!("new file mode {:o}\n", n.mode).as_bytes());
            out.extend_from_slice(
                format!("index {}..{}\n", abbrev(&zero), abbrev(&n.id)).as_bytes(),
            );
        }
        (Some(o), None) => {
            out.extend_from_slice(format!("deleted file mode {:o}\n", o.mode).as_bytes());
            out.extend_from_slice(
                format!("index {}..{}\n", abbrev(&o.id), abbrev(&zero)).as_bytes(),
            );
        }
        (Some(o), Some(n)) => {
            if o.mode != n.mode {
                out.extend_from_slice(
                    format!("old mode {:o}\nnew mode {:o}\n", o.mode, n.mode).as_bytes(),
                );
            }
            if o.id == n.id {
                return if o.mode != n.mode { out } else { Vec::new() };
            }
            if o.mode == n.mode {
                out.extend_from_slice(
                    format!("index {}..{} {:o}\n", abbrev(&o.id), abbrev(&n.id), o.mode).as_bytes(),
                );
            } else {
                out.extend_from_slice(
                    format!("index {}..{}\n", abbrev(&o.id), abbrev(&n.id)).as_bytes(),
                );
            }
        }
        (None, None) => return Vec::new(),
    }
    let empty = Vec::new();
    let old_data = old.map_or(&empty, |s| &s.data);
    let new_data = new.map_or(&empty, |s| &s.data);
    if old.is_some_and(|s| s.mode == MODE_GITLINK) || new.is_some_and(|s| s.mode == MODE_GITLINK) {
        return out;
    }
    if is_binary(old_data) || is_binary(new_data) {
        let a = if old.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_string()
        };
        let b = if new.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".to_string()
        };
        out.extend_from_slice(format!("Binary files {a} and {b} differ\n").as_bytes());
        return out;
    }
    if old_data.is_empty() && new_data.is_empty() {
        return out;
    }
    let a = if old.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".to_string()
    };
    let b = if new.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".to_string()
    };
    out.extend_from_slice(format!("--- {a}\n+++ {b}\n").as_bytes());
    let (a, b) = (lines(old_data), lines(new_data));
    let ops = capture_diff_slices(Algorithm::Myers, &a, &b);
    for group in group_diff_ops(ops, 3) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_start = first.old_range().start;
        let old_end = last.old_range().end;
        let new_start = first.new_range().start;
        let new_end = last.new_range().end;
        let header = format!(
            "@@ -{} +{} @@",
            range(old_start, old_end - old_start),
            range(new_start, new_end - new_start)
        );
        out.extend_from_slice(header.as_bytes());
        if let Some(name) = function_name(&a, old_start) {
            out.push(b' ');
            out.extend_from_slice(name.as_bytes());
        }
        out.push(b'\n');
        for op in &group {
            let (old_range, new_range) = (op.old_range(), op.new_range());
            match op {
                DiffOp::Equal { .. } => {
                    for line in &a[old_range] {
                        push_line(&mut out, b' ', line);
                    }
                }
                DiffOp::Delete { .. } | DiffOp::Insert { .. } | DiffOp::Replace { .. } => {
                    for line in &a[old_range] {
                        push_line(&mut out, b'-', line);
                    }
                    for line in &b[new_range] {
                        push_line(&mut out, b'+', line);
                    }
                }
            }
        }
    }
    out
}
