//! Reading about nodes: `stat`, `realpath`, `readlink`, `file`.

use stead_vfs::{Errno, Kind, Node, VPath, VfsError};

use super::time::full;
use super::{mode_string, options, shown_size, usage_kib, Spec, OWNER, OWNER_ID};
use crate::limits::Abort;
use crate::utils::{strerror, Ctx};

/// `%F`: the node's type as GNU names it.
fn type_name(node: &Node) -> &'static str {
    match node.kind {
        Kind::File if node.size == 0 => "regular empty file",
        Kind::File => "regular file",
        Kind::Dir => "directory",
        Kind::Symlink => "symbolic link",
    }
}

/// Expands one `stat -c` directive.
fn directive(c: char, name: &str, node: &Node) -> Option<String> {
    Some(match c {
        'n' => name.to_string(),
        'N' => match &node.target {
            Some(target) => format!("'{name}' -> '{target}'"),
            None => format!("'{name}'"),
        },
        's' => shown_size(node).to_string(),
        'F' => type_name(node).to_string(),
        'a' => format!("{:o}", node.mode & 0o7777),
        'A' => mode_string(node.kind, node.mode),
        'f' => format!("{:x}", kind_bits(node.kind) | node.mode),
        'Y' | 'X' | 'Z' => node.mtime.div_euclid(1000).to_string(),
        'y' | 'x' | 'z' => full(node.mtime),
        'W' => "0".to_string(),
        'w' => "-".to_string(),
        'U' | 'G' => OWNER.to_string(),
        'u' | 'g' => OWNER_ID.to_string(),
        'i' => node.ino.to_string(),
        'h' => "1".to_string(),
        'b' => (usage_kib(node) * 2).to_string(),
        'B' => "512".to_string(),
        'o' => "4096".to_string(),
        'd' | 'D' => "0".to_string(),
        't' | 'T' => "0".to_string(),
        '%' => "%".to_string(),
        _ => return None,
    })
}

/// The file-type bits of `st_mode` (`%f`).
fn kind_bits(kind: Kind) -> u32 {
    match kind {
        Kind::File => 0o100000,
        Kind::Dir => 0o040000,
        Kind::Symlink => 0o120000,
    }
}

/// Expands a `stat -c`/`--printf` format; `escapes` handles `\n` and friends.
fn expand(format: &str, name: &str, node: &Node, escapes: bool) -> String {
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' => match chars.next() {
                Some(d) => match directive(d, name, node) {
                    Some(text) => out.push_str(&text),
                    None => {
                        out.push('?');
                    }
                },
                None => out.push('%'),
            },
            '\\' if escapes => super::push_escape(&mut out, chars.next()),
            _ => out.push(c),
        }
    }
    out
}

/// GNU `stat`'s default report.
fn default_report(name: &str, node: &Node) -> String {
    let shown = match &node.target {
        Some(target) => format!("{name} -> {target}"),
        None => name.to_string(),
    };
    let size = shown_size(node).to_string();
    let blocks = (usage_kib(node) * 2).to_string();
    let date = full(node.mtime);
    format!(
        "  File: {shown}\n  Size: {size:<10}\tBlocks: {blocks:<10} IO Block: 4096   {}\n\
         Device: 0,0\tInode: {:<11} Links: 1\n\
         Access: ({:04o}/{})  Uid: ({OWNER_ID:>5}/{OWNER:>8})   Gid: ({OWNER_ID:>5}/{OWNER:>8})\n\
         Access: {date}\nModify: {date}\nChange: {date}\n Birth: -\n",
        type_name(node),
        node.ino,
        node.mode & 0o7777,
        mode_string(node.kind, node.mode),
    )
}

/// `stat`'s options (its parser and `auto`'s check read this one table).
pub(super) const STAT_OPTIONS: Spec = Spec {
    short: "Lc:P:tf",
    long: &[
        ("dereference", 'L'),
        ("format", 'c'),
        ("printf", 'P'),
        ("terse", 't'),
    ],
};

/// `stat [-L] [-c FORMAT | --printf FORMAT] FILE...`
pub(super) fn stat(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &STAT_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    if opts.operands.is_empty() {
        ctx.error("stat", "missing operand")?;
        ctx.stderr
            .write_str("Try 'stat --help' for more information.\n")?;
        return Ok(1);
    }
    let mut status = 0;
    for operand in &opts.operands {
        ctx.budget.charge_cpu(64)?;
        let found = ctx
            .path(operand)
            .and_then(|p| ctx.fs.stat(&p, opts.has('L')));
        let node = match found {
            Ok(node) => node,
            Err(error) => {
                ctx.error(
                    "stat",
                    &format!("cannot statx '{operand}': {}", strerror(&error)),
                )?;
                status = 1;
                continue;
            }
        };
        let text = match (opts.last_of("cP"), opts.value('c'), opts.value('P')) {
            (Some('c'), Some(format), _) => expand(format, operand, &node, false) + "\n",
            (Some('P'), _, Some(format)) => expand(format, operand, &node, true),
            _ => default_report(operand, &node),
        };
        ctx.stdout.write_str(&text)?;
    }
    Ok(status)
}

/// How much of a path must exist to be canonicalised.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Every component (`-e`).
    All,
    /// All but the last (the default of `realpath`, `readlink -f`).
    Parent,
    /// None (`-m`).
    Nothing,
}

/// The canonical path: symlinks resolved, missing parts kept as allowed.
fn canonical(ctx: &Ctx<'_>, path: &VPath, need: Need) -> Result<VPath, VfsError> {
    let error = match ctx.fs.realpath(path) {
        Ok(real) => return Ok(real),
        Err(error) => error,
    };
    if need == Need::All || error.code() != Errno::Enoent {
        return Err(error);
    }
    let (Some(parent), Some(name)) = (path.parent(), path.name()) else {
        return Err(error);
    };
    let parent_need = if need == Need::Parent {
        Need::All
    } else {
        Need::Nothing
    };
    let parent = canonical(ctx, &parent, parent_need)?;
    if need == Need::Parent && !ctx.fs.stat(&parent, true)?.is_dir() {
        return Err(VfsError::NotADirectory {
            path: parent.to_string(),
        });
    }
    let joined = parent.join(name);
    Ok(ctx.fs.realpath(&joined).unwrap_or(joined))
}

/// `path` relative to `base` (both canonical), as `realpath --relative-to` prints it.
fn relative(path: &VPath, base: &VPath) -> String {
    let p: Vec<&str> = path.components().collect();
    let b: Vec<&str> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<&str> = vec![".."; b.len() - common];
    parts.extend(&p[common..]);
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

/// `realpath`'s options (its parser and `auto`'s check read this one table).
pub(super) const REALPATH_OPTIONS: Spec = Spec {
    short: "emsqzLPR:",
    long: &[
        ("canonicalize-existing", 'e'),
        ("canonicalize-missing", 'm'),
        ("strip", 's'),
        ("no-symlinks", 's'),
        ("relative-to", 'R'),
        ("quiet", 'q'),
        ("zero", 'z'),
    ],
};

/// `realpath [-e|-m] [-s] [--relative-to=DIR] FILE...`
pub(super) fn realpath(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &REALPATH_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    if opts.operands.is_empty() {
        ctx.error("realpath", "missing operand")?;
        return Ok(1);
    }
    let need = match opts.last_of("em") {
        Some('e') => Need::All,
        Some(_) => Need::Nothing,
        None => Need::Parent,
    };
    let resolve = |ctx: &Ctx<'_>, operand: &str| {
        let path = ctx.path(operand)?;
        if opts.has('s') {
            Ok(path)
        } else {
            canonical(ctx, &path, need)
        }
    };
    let base = match opts.value('R').map(|dir| resolve(ctx, dir)) {
        Some(Ok(base)) => Some(base),
        Some(Err(error)) => {
            ctx.error(
                "realpath",
                &format!("{}: {}", opts.value('R').unwrap_or(""), strerror(&error)),
            )?;
            return Ok(1);
        }
        None => None,
    };
    let end = if opts.has('z') { "\0" } else { "\n" };
    let mut status = 0;
    for operand in &opts.operands {
        ctx.budget.charge_cpu(64)?;
        match resolve(ctx, operand) {
            Ok(path) => {
                let text = match &base {
                    Some(base) => relative(&path, base),
                    None => path.to_string(),
                };
                ctx.stdout.write_str(&format!("{text}{end}"))?;
            }
            Err(error) => {
                if !opts.has('q') {
                    ctx.fs_error("realpath", operand, &error)?;
                }
                status = 1;
            }
        }
    }
    Ok(status)
}

/// `readlink`'s options (its parser and `auto`'s check read this one table).
pub(super) const READLINK_OPTIONS: Spec = Spec {
    short: "femnvqsz",
    long: &[
        ("canonicalize", 'f'),
        ("canonicalize-existing", 'e'),
        ("canonicalize-missing", 'm'),
        ("no-newline", 'n'),
        ("verbose", 'v'),
        ("quiet", 'q'),
        ("silent", 's'),
        ("zero", 'z'),
    ],
};

/// `readlink [-f|-e|-m] [-n] FILE...`
pub(super) fn readlink(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &READLINK_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    if opts.operands.is_empty() {
        ctx.error("readlink", "missing operand")?;
        return Ok(1);
    }
    let need = match opts.last_of("fem") {
        Some('f') => Some(Need::Parent),
        Some('e') => Some(Need::All),
        Some(_) => Some(Need::Nothing),
        None => None,
    };
    let end = match (opts.has('z'), opts.has('n') && opts.operands.len() == 1) {
        (true, _) => "\0",
        (false, true) => "",
        (false, false) => "\n",
    };
    let mut status = 0;
    for operand in &opts.operands {
        ctx.budget.charge_cpu(64)?;
        let result = ctx.path(operand).and_then(|path| match need {
            Some(need) => canonical(ctx, &path, need).map(|p| p.to_string()),
            None => ctx.fs.readlink(&path),
        });
        match result {
            Ok(text) => ctx.stdout.write_str(&format!("{text}{end}"))?,
            Err(error) => {
                if opts.has('v') {
                    ctx.fs_error("readlink", operand, &error)?;
                }
                status = 1;
            }
        }
    }
    Ok(status)
}

/// What `file` says about some content.
fn describe(data: &[u8]) -> &'static str {
    if data.is_empty() {
        "empty"
    } else if data.starts_with(&[0x1f, 0x8b]) {
        "gzip compressed data"
    } else if data.len() >= 263 && &data[257..262] == b"ustar" {
        "POSIX tar archive"
    } else if data.starts_with(b"\x7fELF") {
        "ELF executable"
    } else if data.starts_with(b"%PDF-") {
        "PDF document"
    } else if data.starts_with(b"\x89PNG") {
        "PNG image data"
    } else if data.contains(&0) {
        "data"
    } else if data.is_ascii() {
        "ASCII text"
    } else if std::str::from_utf8(data).is_ok() {
        "Unicode text, UTF-8 text"
    } else {
        "data"
    }
}

/// `file`'s options (its parser and `auto`'s check read this one table).
pub(super) const FILE_OPTIONS: Spec = Spec {
    short: "bL",
    long: &[("brief", 'b')],
};

/// `file FILE...`: a rough guess at content type (text, empty, directory, data...).
pub(super) fn file(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &FILE_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    let width = opts.operands.iter().map(|o| o.len()).max().unwrap_or(0) + 2;
    for operand in &opts.operands {
        let found = ctx
            .path(operand)
            .and_then(|p| ctx.fs.stat(&p, opts.has('L')).map(|n| (p, n)));
        let what = match found {
            Ok((_, node)) if node.kind == Kind::Symlink => {
                format!("symbolic link to {}", node.target.unwrap_or_default())
            }
            Ok((_, node)) if node.is_dir() => "directory".to_string(),
            Ok((path, _)) => match ctx.fs.read(&path) {
                Ok(data) => {
                    ctx.budget.charge_cpu(data.len() as u64)?;
                    describe(&data).to_string()
                }
                Err(error) => format!("cannot open `{operand}' ({})", strerror(&error)),
            },
            Err(error) => format!("cannot open `{operand}' ({})", strerror(&error)),
        };
        let line = if opts.has('b') {
            format!("{what}\n")
        } else {
            format!("{:<width$}{what}\n", format!("{operand}:"))
        };
        ctx.stdout.write_str(&line)?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, files, run};

    #[test]
    fn stat_default_matches_gnu_layout() {
        let db = db();
        files(&db, &[("/a.txt", "hi\n")]);
        let r = run(&db, &["stat", "/a.txt"], "");
        let lines: Vec<&str> = r.stdout.lines().collect();
        assert_eq!(lines[0], "  File: /a.txt");
        assert_eq!(
            lines[1],
            "  Size: 3         \tBlocks: 8          IO Block: 4096   regular file"
        );
        assert!(lines[2].starts_with("Device: 0,0\tInode: "));
        assert_eq!(
            lines[3],
            "Access: (0644/-rw-r--r--)  Uid: ( 1000/   agent)   Gid: ( 1000/   agent)"
        );
        assert_eq!(lines[5], "Modify: 2023-11-14 22:13:20.000000000 +0000");
        assert_eq!(lines[7], " Birth: -");
        let r = run(&db, &["stat", "/nope"], "");
        assert_eq!(
            (r.status, r.stderr.as_str()),
            (1, "stat: cannot statx '/nope': No such file or directory\n")
        );
    }

    #[test]
    fn stat_formats() {
        let db = db();
        files(&db, &[("/a.txt", "hi\n"), ("/e", "")]);
        run(&db, &["ln", "-s", "a.txt", "/l"], "");
        run(&db, &["mkdir", "/d"], "");
        let r = run(
            &db,
            &[
                "stat",
                "-c",
                "%n %s %F %a %A %Y %U %G %h",
                "/a.txt",
                "/d",
                "/l",
                "/e",
            ],
            "",
        );
        assert_eq!(
            r.stdout,
            "/a.txt 3 regular file 644 -rw-r--r-- 1700000000 agent agent 1\n\
             /d 4096 directory 755 drwxr-xr-x 1700000000 agent agent 1\n\
             /l 5 symbolic link 777 lrwxrwxrwx 1700000000 agent agent 1\n\
             /e 0 regular empty file 644 -rw-r--r-- 1700000000 agent agent 1\n"
        );
        assert_eq!(
            run(&db, &["stat", "-L", "-c", "%F", "/l"], "").stdout,
            "regular file\n"
        );
        assert_eq!(
            run(&db, &["stat", "--printf", "%s\\n", "/e"], "").stdout,
            "0\n"
        );
        assert_eq!(
            run(&db, &["stat", "-c", "%N", "/l"], "").stdout,
            "'/l' -> 'a.txt'\n"
        );
    }

    #[test]
    fn realpath_and_readlink() {
        let db = db();
        files(&db, &[("/d/f", "")]);
        run(&db, &["ln", "-s", "/d", "/l"], "");
        assert_eq!(run(&db, &["realpath", "/l/f"], "").stdout, "/d/f\n");
        assert_eq!(run(&db, &["realpath", "/l/new"], "").stdout, "/d/new\n");
        let r = run(&db, &["realpath", "/no/x"], "");
        assert_eq!(
            (r.status, r.stderr.as_str()),
            (1, "realpath: /no/x: No such file or directory\n")
        );
        assert_eq!(
            run(&db, &["realpath", "-m", "/no/x/../y"], "").stdout,
            "/no/y\n"
        );
        assert_eq!(run(&db, &["realpath", "-e", "/l/new"], "").status, 1);
        assert_eq!(run(&db, &["realpath", "-s", "/l/f"], "").stdout, "/l/f\n");
        assert_eq!(
            run(&db, &["realpath", "--relative-to=/d", "/l/f", "/"], "").stdout,
            "f\n..\n"
        );
        assert_eq!(run(&db, &["readlink", "/l"], "").stdout, "/d\n");
        assert_eq!(run(&db, &["readlink", "/d"], "").status, 1);
        assert_eq!(run(&db, &["readlink", "-f", "/l/f"], "").stdout, "/d/f\n");
    }

    #[test]
    fn file_guesses_types() {
        let db = db();
        files(
            &db,
            &[
                ("/a.txt", "hi\n"),
                ("/empty", ""),
                ("/u", "h\u{e9}\n"),
                ("/d/x", ""),
            ],
        );
        let r = run(&db, &["file", "/a.txt", "/empty", "/d", "/u"], "");
        assert_eq!(
            r.stdout,
            "/a.txt: ASCII text\n/empty: empty\n/d:     directory\n/u:     Unicode text, UTF-8 text\n"
        );
    }
}
