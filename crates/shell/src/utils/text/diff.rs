//! `diff`: normal and unified output (`-u`, `-U N`), `-q`, `-i`, `-w`,
//! `-b`, `-B`-free; `-r` over workspace directories. Line matching comes
//! from the `similar` crate (Myers); hunks and headers are printed the GNU
//! way, timestamps in UTC. Exit status 0 same, 1 different, 2 trouble.

use similar::{capture_diff_slices, Algorithm, DiffOp};
use stead_vfs::Kind;

use super::{flag, getopt, with_arg, Opt, Parsed};
use crate::limits::Abort;
use crate::utils::Ctx;

/// How lines are compared and printed.
struct Style {
    /// Context lines for unified output; `None` for normal output.
    unified: Option<usize>,
    brief: bool,
    ignore_case: bool,
    ignore_all_space: bool,
    ignore_space_change: bool,
    recursive: bool,
    /// The options as typed, echoed in `diff -r` file headers as GNU does.
    switches: String,
}

/// One side of a comparison: its name as given, content and mtime (ms).
struct Input {
    name: String,
    data: Vec<u8>,
    mtime_ms: i64,
}

pub(super) const DIFF_OPTS: &[Opt] = &[
    flag('u', "unified"),
    with_arg('U', ""),
    flag('q', "brief"),
    flag('i', "ignore-case"),
    flag('w', "ignore-all-space"),
    flag('b', "ignore-space-change"),
    flag('r', "recursive"),
    flag('N', "new-file"),
    flag('a', "text"),
    flag('s', "report-identical-files"),
];

pub(super) fn diff(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    let parsed = match getopt(&argv[1..], DIFF_OPTS) {
        Ok(p) => p,
        Err(message) => return diff_usage(ctx, &message, 2),
    };
    let switches: Vec<&str> = argv[1..]
        .iter()
        .take_while(|a| *a != "--")
        .filter(|a| a.starts_with('-') && a.len() > 1)
        .map(String::as_str)
        .collect();
    let style = match style_of(&parsed, switches.join(" ")) {
        Ok(style) => style,
        Err(message) => return diff_usage(ctx, &message, 2),
    };
    match parsed.operands.as_slice() {
        [a, b] => compare_paths(ctx, &style, a, b),
        [] => diff_usage(ctx, "missing operand after 'diff'", 2),
        [a] => diff_usage(ctx, &format!("missing operand after '{a}'"), 2),
        [_, _, extra, ..] => diff_usage(ctx, &format!("extra operand '{extra}'"), 2),
    }
}

/// GNU diff words usage errors with its name on the `Try` line too.
fn diff_usage(ctx: &mut Ctx<'_>, message: &str, status: i32) -> Result<i32, Abort> {
    ctx.error("diff", message)?;
    ctx.error("diff", "Try 'diff --help' for more information.")?;
    Ok(status)
}

fn style_of(parsed: &Parsed, switches: String) -> Result<Style, String> {
    let context = match parsed.value('U') {
        Some(n) => Some(
            n.parse::<usize>()
                .map_err(|_| format!("invalid context length '{n}'"))?,
        ),
        None => parsed.has('u').then_some(3),
    };
    Ok(Style {
        unified: context,
        brief: parsed.has('q'),
        ignore_case: parsed.has('i'),
        ignore_all_space: parsed.has('w'),
        ignore_space_change: parsed.has('b'),
        recursive: parsed.has('r'),
        switches,
    })
}

/// Whether `operand` names a directory (stdin never does).
fn is_dir(ctx: &Ctx<'_>, operand: &str) -> bool {
    operand != "-"
        && ctx
            .path(operand)
            .and_then(|p| ctx.fs.stat(&p, true))
            .is_ok_and(|node| node.kind == Kind::Dir)
}

fn compare_paths(ctx: &mut Ctx<'_>, style: &Style, a: &str, b: &str) -> Result<i32, Abort> {
    let (a_dir, b_dir) = (is_dir(ctx, a), is_dir(ctx, b));
    if a_dir && b_dir {
        return compare_dirs(ctx, style, a, b);
    }
    // `diff dir file` compares dir/basename(file), as GNU does.
    let joined = |dir: &str, other: &str| {
        format!(
            "{}/{}",
            dir.trim_end_matches('/'),
            other.rsplit('/').next().unwrap_or(other)
        )
    };
    let (a, b) = match (a_dir, b_dir) {
        (true, false) => (joined(a, b), b.to_string()),
        (false, true) => (a.to_string(), joined(b, a)),
        _ => (a.to_string(), b.to_string()),
    };
    let (left, right) = (load(ctx, &a)?, load(ctx, &b)?);
    let (Some(left), Some(right)) = (left, right) else {
        return Ok(2);
    };
    compare_files(ctx, style, &left, &right)
}

/// Reads an operand, reporting failure as `diff: NAME: error`.
fn load(ctx: &mut Ctx<'_>, operand: &str) -> Result<Option<Input>, Abort> {
    if operand == "-" {
        let stdin = ctx.stdin.all()?;
        ctx.budget.charge_cpu(stdin.len() as u64)?;
        return Ok(Some(Input {
            name: "-".to_string(),
            data: stdin.to_vec(),
            mtime_ms: ctx.clock.now_ms() as i64,
        }));
    }
    let read = ctx.path(operand).and_then(|p| {
        let node = ctx.fs.stat(&p, true)?;
        Ok((ctx.fs.read(&p)?, node.mtime))
    });
    match read {
        Ok((data, mtime_ms)) => {
            ctx.budget.charge_cpu(data.len() as u64)?;
            Ok(Some(Input {
                name: operand.to_string(),
                data,
                mtime_ms,
            }))
        }
        Err(error) => {
            ctx.fs_error("diff", operand, &error)?;
            Ok(None)
        }
    }
}

/// Compares two directories recursively (`-r`) or reports common subdirectories.
fn compare_dirs(ctx: &mut Ctx<'_>, style: &Style, a: &str, b: &str) -> Result<i32, Abort> {
    let names = |ctx: &Ctx<'_>, dir: &str| -> Vec<String> {
        let listed = ctx.path(dir).and_then(|p| ctx.fs.list(&p));
        listed
            .map(|entries| entries.into_iter().map(|e| e.name).collect())
            .unwrap_or_default()
    };
    let (left, right) = (names(ctx, a), names(ctx, b));
    let mut all: Vec<&String> = left.iter().chain(&right).collect();
    all.sort();
    all.dedup();
    let mut status = 0;
    for name in all {
        ctx.budget.charge_iteration()?;
        let (pa, pb) = (child(a, name), child(b, name));
        match (left.contains(name), right.contains(name)) {
            (true, false) => {
                ctx.stdout.write_str(&format!("Only in {a}: {name}\n"))?;
                status = status.max(1);
            }
            (false, true) => {
                ctx.stdout.write_str(&format!("Only in {b}: {name}\n"))?;
                status = status.max(1);
            }
            _ => status = status.max(compare_entry(ctx, style, &pa, &pb)?),
        }
    }
    Ok(status)
}

fn child(dir: &str, name: &str) -> String {
    format!("{}/{name}", dir.trim_end_matches('/'))
}

/// One name present on both sides of a directory comparison.
fn compare_entry(ctx: &mut Ctx<'_>, style: &Style, a: &str, b: &str) -> Result<i32, Abort> {
    match (is_dir(ctx, a), is_dir(ctx, b)) {
        (true, true) if style.recursive => compare_dirs(ctx, style, a, b),
        (true, true) => {
            ctx.stdout
                .write_str(&format!("Common subdirectories: {a} and {b}\n"))?;
            Ok(0)
        }
        (false, false) => {
            let (Some(left), Some(right)) = (load(ctx, a)?, load(ctx, b)?) else {
                return Ok(2);
            };
            let differs = comparable(style, &left.data) != comparable(style, &right.data);
            if differs && !style.brief {
                let header = format!("diff {} {a} {b}\n", style.switches);
                ctx.stdout.write_str(&header)?;
            }
            compare_files(ctx, style, &left, &right)
        }
        (a_dir, _) => {
            let (dir, file) = if a_dir { (a, b) } else { (b, a) };
            ctx.stdout.write_str(&format!(
                "File {dir} is a directory while file {file} is a regular file\n"
            ))?;
            Ok(1)
        }
    }
}

/// The bytes that matter for equality under the options.
fn comparable(style: &Style, data: &[u8]) -> Vec<Vec<u8>> {
    data.split_inclusive(|b| *b == b'\n')
        .map(|l| line_key(style, l))
        .collect()
}

/// A line as compared: case folded, blanks dropped or squeezed as asked.
/// The newline stays part of it, so a missing final newline is a change.
fn line_key(style: &Style, line: &[u8]) -> Vec<u8> {
    let (body, newline) = match line.strip_suffix(b"\n") {
        Some(body) => (body, true),
        None => (line, false),
    };
    let mut key: Vec<u8> = if style.ignore_all_space {
        body.iter()
            .copied()
            .filter(|b| !b.is_ascii_whitespace())
            .collect()
    } else if style.ignore_space_change {
        let mut squeezed = Vec::with_capacity(body.len());
        for word in body
            .split(u8::is_ascii_whitespace)
            .filter(|w| !w.is_empty())
        {
            if !squeezed.is_empty() {
                squeezed.push(b' ');
            }
            squeezed.extend_from_slice(word);
        }
        if body.first().is_some_and(u8::is_ascii_whitespace) {
            squeezed.insert(0, b' ');
        }
        squeezed
    } else {
        body.to_vec()
    };
    if style.ignore_case {
        key.make_ascii_lowercase();
    }
    if newline {
        key.push(b'\n');
    }
    key
}

fn compare_files(
    ctx: &mut Ctx<'_>,
    style: &Style,
    left: &Input,
    right: &Input,
) -> Result<i32, Abort> {
    let (old, new) = (lines_of(&left.data), lines_of(&right.data));
    let old_keys: Vec<Vec<u8>> = old.iter().map(|l| line_key(style, l)).collect();
    let new_keys: Vec<Vec<u8>> = new.iter().map(|l| line_key(style, l)).collect();
    ctx.budget.charge_cpu((old.len() + new.len()) as u64)?;
    let ops = match_lines(&old_keys, &new_keys);
    if ops.iter().all(|op| matches!(op, DiffOp::Equal { .. })) {
        return Ok(0);
    }
    if style.brief {
        ctx.stdout
            .write_str(&format!("Files {} and {} differ\n", left.name, right.name))?;
        return Ok(1);
    }
    if left.data.contains(&0) || right.data.contains(&0) {
        ctx.stdout.write_str(&format!(
            "Binary files {} and {} differ\n",
            left.name, right.name
        ))?;
        return Ok(1);
    }
    let text = match style.unified {
        Some(context) => unified(left, right, &old, &new, &ops, context),
        None => normal(&old, &new, &ops),
    };
    ctx.stdout.write(&text)?;
    Ok(1)
}

/// Past this many line pairs in the differing middle, Myers (GNU's
/// minimal diff, costing (n+m)·d) could take seconds on unlike inputs.
const MYERS_PAIRS: usize = 25_000_000;

/// Matches lines: Myers when affordable; for big inputs, patience when
/// enough lines are unique on both sides to anchor it; otherwise one
/// coarse change for the whole differing middle. Either way a correct diff.
fn match_lines(old: &[Vec<u8>], new: &[Vec<u8>]) -> Vec<DiffOp> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old_mid, new_mid) = (
        &old[prefix..old.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    if old_mid.len() * new_mid.len() <= MYERS_PAIRS {
        return capture_diff_slices(Algorithm::Myers, old, new);
    }
    if anchors(old_mid, new_mid) * 100 >= old_mid.len().min(new_mid.len()) {
        return capture_diff_slices(Algorithm::Patience, old, new);
    }
    coarse(prefix, old_mid.len(), new_mid.len(), suffix)
}

/// How many lines occur exactly once on each side.
fn anchors(old: &[Vec<u8>], new: &[Vec<u8>]) -> usize {
    let mut counts: std::collections::HashMap<&[u8], (u32, u32)> = std::collections::HashMap::new();
    for line in old {
        counts.entry(line).or_default().0 += 1;
    }
    for line in new {
        counts.entry(line).or_default().1 += 1;
    }
    counts.values().filter(|(a, b)| *a == 1 && *b == 1).count()
}

/// Equal prefix, one change, equal suffix.
fn coarse(prefix: usize, old_len: usize, new_len: usize, suffix: usize) -> Vec<DiffOp> {
    let mut ops = Vec::new();
    if prefix > 0 {
        ops.push(DiffOp::Equal {
            old_index: 0,
            new_index: 0,
            len: prefix,
        });
    }
    ops.push(DiffOp::Replace {
        old_index: prefix,
        old_len,
        new_index: prefix,
        new_len,
    });
    if suffix > 0 {
        ops.push(DiffOp::Equal {
            old_index: prefix + old_len,
            new_index: prefix + new_len,
            len: suffix,
        });
    }
    ops
}

fn lines_of(data: &[u8]) -> Vec<&[u8]> {
    data.split_inclusive(|b| *b == b'\n').collect()
}

/// A run of changed lines: old `[o1, o2)` replaced by new `[n1, n2)`.
#[derive(Clone, Copy)]
struct Change {
    old: (usize, usize),
    new: (usize, usize),
}

/// Merges adjacent non-equal ops into changes.
fn changes(ops: &[DiffOp]) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    for op in ops {
        if let DiffOp::Equal { .. } = op {
            continue;
        }
        let (old, new) = (op.old_range(), op.new_range());
        match out.last_mut() {
            Some(last) if last.old.1 == old.start && last.new.1 == new.start => {
                last.old.1 = old.end;
                last.new.1 = new.end;
            }
            _ => out.push(Change {
                old: (old.start, old.end),
                new: (new.start, new.end),
            }),
        }
    }
    out
}

/// Pushes a line with its prefix, and GNU's marker if it has no newline.
fn push_line(out: &mut Vec<u8>, prefix: &[u8], line: &[u8]) {
    out.extend_from_slice(prefix);
    out.extend_from_slice(line);
    if !line.ends_with(b"\n") {
        out.extend_from_slice(b"\n\\ No newline at end of file\n");
    }
}

/// `N` or `N,M` for 1-based inclusive line numbers `[from, to)` 0-based.
fn span(from: usize, to: usize) -> String {
    if to <= from + 1 {
        format!("{}", to.max(from))
    } else {
        format!("{},{}", from + 1, to)
    }
}

fn normal(old: &[&[u8]], new: &[&[u8]], ops: &[DiffOp]) -> Vec<u8> {
    let mut out = Vec::new();
    for change in changes(ops) {
        let (o, n) = (change.old, change.new);
        let header = match (o.0 == o.1, n.0 == n.1) {
            (true, _) => format!("{}a{}\n", o.0, span(n.0, n.1)),
            (_, true) => format!("{}d{}\n", span(o.0, o.1), n.0),
            _ => format!("{}c{}\n", span(o.0, o.1), span(n.0, n.1)),
        };
        out.extend_from_slice(header.as_bytes());
        old[o.0..o.1]
            .iter()
            .for_each(|l| push_line(&mut out, b"< ", l));
        if o.0 != o.1 && n.0 != n.1 {
            out.extend_from_slice(b"---\n");
        }
        new[n.0..n.1]
            .iter()
            .for_each(|l| push_line(&mut out, b"> ", l));
    }
    out
}

/// `--- name\tYYYY-MM-DD HH:MM:SS.NNNNNNNNN +0000`.
fn unified_header(prefix: &str, input: &Input) -> String {
    let seconds = input.mtime_ms.div_euclid(1000);
    let nanos = input.mtime_ms.rem_euclid(1000) * 1_000_000;
    let stamp = super::date::format_utc("%Y-%m-%d %H:%M:%S", seconds);
    format!("{prefix} {}\t{stamp}.{nanos:09} +0000\n", input.name)
}

/// `-l,s` of a unified hunk: an empty range names the line before it.
fn hunk_range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

fn unified(
    left: &Input,
    right: &Input,
    old: &[&[u8]],
    new: &[&[u8]],
    ops: &[DiffOp],
    context: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(unified_header("---", left).as_bytes());
    out.extend_from_slice(unified_header("+++", right).as_bytes());
    for group in similar::group_diff_ops(ops.to_vec(), context) {
        let (first, last) = (&group[0], &group[group.len() - 1]);
        let (old_start, new_start) = (first.old_range().start, first.new_range().start);
        let old_len = last.old_range().end - old_start;
        let new_len = last.new_range().end - new_start;
        let header = format!(
            "@@ -{} +{} @@\n",
            hunk_range(old_start, old_len),
            hunk_range(new_start, new_len)
        );
        out.extend_from_slice(header.as_bytes());
        for op in &group {
            match op {
                DiffOp::Equal { .. } => old[op.old_range()]
                    .iter()
                    .for_each(|l| push_line(&mut out, b" ", l)),
                _ => {
                    old[op.old_range()]
                        .iter()
                        .for_each(|l| push_line(&mut out, b"-", l));
                    new[op.new_range()]
                        .iter()
                        .for_each(|l| push_line(&mut out, b"+", l));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, files, run};

    const X: &str = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
    const Y: &str = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk";

    #[test]
    fn normal_output_matches_gnu() {
        let db = db();
        files(
            &db,
            &[("/x", X), ("/y", Y), ("/p", "1\n2\n"), ("/q", "0\n1\n")],
        );
        let r = run(&db, &["diff", "/x", "/y"], "");
        assert_eq!(
            r.stdout,
            "2c2\n< b\n---\n> B\n10a11\n> k\n\\ No newline at end of file\n"
        );
        assert_eq!(r.status, 1);
        assert_eq!(
            run(&db, &["diff", "/p", "/q"], "").stdout,
            "0a1\n> 0\n2d2\n< 2\n"
        );
        assert_eq!(run(&db, &["diff", "/p", "/p"], "").status, 0);
    }

    #[test]
    fn unified_output_matches_gnu() {
        let db = db();
        files(
            &db,
            &[
                ("/x", X),
                ("/y", Y),
                ("/p", "1\n2\n"),
                ("/q", "0\n1\n"),
                ("/e", ""),
            ],
        );
        let r = run(&db, &["diff", "-u", "/x", "/y"], "");
        let body: Vec<&str> = r.stdout.lines().skip(2).collect();
        assert_eq!(
            body.join("\n"),
            "@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n@@ -8,3 +8,4 @@\n h\n i\n j\n+k\n\\ No newline at end of file"
        );
        assert!(r
            .stdout
            .starts_with("--- /x\t2023-11-14 22:13:20.000000000 +0000\n+++ /y\t"));
        let short = run(&db, &["diff", "-U1", "/p", "/q"], "").stdout;
        assert!(short.ends_with("@@ -1,2 +1,2 @@\n+0\n 1\n-2\n"));
        assert!(run(&db, &["diff", "-u", "/e", "/p"], "")
            .stdout
            .ends_with("@@ -0,0 +1,2 @@\n+1\n+2\n"));
        assert!(run(&db, &["diff", "-u", "/p", "/e"], "")
            .stdout
            .ends_with("@@ -1,2 +0,0 @@\n-1\n-2\n"));
        assert!(run(&db, &["diff", "-u", "-", "/p"], "1\n")
            .stdout
            .ends_with("@@ -1 +1,2 @@\n 1\n+2\n"));
    }

    #[test]
    fn brief_ignore_options_and_errors() {
        let db = db();
        files(
            &db,
            &[("/x", X), ("/y", Y), ("/A", "A  b\n"), ("/a", "a b\n")],
        );
        let brief = run(&db, &["diff", "-q", "/x", "/y"], "");
        assert_eq!(
            (brief.stdout.as_str(), brief.status),
            ("Files /x and /y differ\n", 1)
        );
        assert_eq!(run(&db, &["diff", "-i", "-b", "/A", "/a"], "").status, 0);
        assert_eq!(run(&db, &["diff", "-i", "/A", "/a"], "").status, 1);
        assert_eq!(run(&db, &["diff", "-iw", "/A", "/a"], "").status, 0);
        let missing = run(&db, &["diff", "/nope", "/x"], "");
        assert_eq!(
            (missing.status, missing.stderr.as_str()),
            (2, "diff: /nope: No such file or directory\n")
        );
    }

    #[test]
    fn big_unlike_inputs_stay_fast() {
        let db = db();
        let a: String = "a\n".repeat(8000);
        let b: String = "b\n".repeat(8000);
        files(&db, &[("/a", &a), ("/b", &b)]);
        let r = run(&db, &["diff", "/a", "/b"], "");
        assert!(r.stdout.starts_with("1,8000c1,8000\n< a\n"));
        assert_eq!(r.stdout.lines().count(), 16002);
        let ops = super::coarse(1, 2, 0, 1);
        assert_eq!(ops.len(), 3);
    }

    #[test]
    fn recursive_directories() {
        let db = db();
        files(
            &db,
            &[
                ("/l/same", "1\n"),
                ("/l/diff", "a\n"),
                ("/l/only", "x\n"),
                ("/r/same", "1\n"),
                ("/r/diff", "b\n"),
            ],
        );
        let r = run(&db, &["diff", "-r", "/l", "/r"], "");
        assert_eq!(
            r.stdout,
            "diff -r /l/diff /r/diff\n1c1\n< a\n---\n> b\nOnly in /l: only\n"
        );
        assert_eq!(r.status, 1);
        let unified = run(&db, &["diff", "-ru", "/l", "/r"], "");
        assert!(unified
            .stdout
            .starts_with("diff -ru /l/diff /r/diff\n--- /l/diff\t"));
    }
}
