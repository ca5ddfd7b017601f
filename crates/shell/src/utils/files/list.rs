//! `ls`, `tree` and `du`: walking directories and printing them as GNU does
//! when the output is not a terminal (one name per line).

use stead_vfs::{DirEntry, Kind, Node, VPath};

use super::find::fnmatch;
use super::time::ls_date;
use super::{
    human_size, join_operand, mode_string, options, shown_size, usage_kib, Opts, Spec, OWNER,
};
use crate::limits::Abort;
use crate::utils::Ctx;

/// CPU units charged per node visited (a listing row costs about this much).
const NODE_COST: u64 = 64;

/// One name `ls` prints.
struct Item {
    name: String,
    node: Node,
}

/// How `ls` was asked to print.
struct LsMode {
    long: bool,
    /// `-o`/`-G`: the long format without the group column.
    no_group: bool,
    all: bool,
    almost_all: bool,
    recursive: bool,
    human: bool,
    classify: bool,
    slash: bool,
    dirs_first: bool,
    directory: bool,
    reverse: bool,
    sort: char,
}

impl LsMode {
    fn from(opts: &Opts) -> LsMode {
        LsMode {
            long: opts.has('l') || opts.has('o'),
            no_group: opts.has('o') || opts.has('G'),
            all: opts.has('a'),
            almost_all: opts.has('A'),
            recursive: opts.has('R'),
            human: opts.has('h'),
            classify: opts.has('F'),
            slash: opts.has('p'),
            dirs_first: opts.has('g'),
            directory: opts.has('d'),
            reverse: opts.has('r'),
            sort: opts.last_of("tSU").unwrap_or('n'),
        }
    }

    fn sort(&self, items: &mut [Item]) {
        match self.sort {
            't' => items.sort_by(|a, b| b.node.mtime.cmp(&a.node.mtime).then(a.name.cmp(&b.name))),
            'S' => items.sort_by(|a, b| {
                shown_size(&b.node)
                    .cmp(&shown_size(&a.node))
                    .then(a.name.cmp(&b.name))
            }),
            'U' => {}
            _ => items.sort_by(|a, b| a.name.cmp(&b.name)),
        }
        if self.reverse {
            items.reverse();
        }
        if self.dirs_first {
            items.sort_by_key(|item| !item.node.is_dir());
        }
    }

    fn shows(&self, name: &str) -> bool {
        self.all || self.almost_all || !name.starts_with('.')
    }
}

/// `ls`'s options (its parser and `auto`'s check read this one table).
pub(super) const LS_OPTIONS: Spec = Spec {
    short: "laA1RhtrSdFpCxUGo",
    long: &[
        ("all", 'a'),
        ("almost-all", 'A'),
        ("recursive", 'R'),
        ("human-readable", 'h'),
        ("reverse", 'r'),
        ("directory", 'd'),
        ("classify", 'F'),
        ("color", 'c'),
        ("group-directories-first", 'g'),
    ],
};

/// `ls [-laA1RhtrSdF] [FILE]...`
pub(super) fn ls(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &LS_OPTIONS, 2)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    let mode = LsMode::from(&opts);
    let operands = if opts.operands.is_empty() {
        vec![".".to_string()]
    } else {
        opts.operands.clone()
    };
    let mut status = 0;
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for operand in &operands {
        match operand_node(ctx, operand, &mode) {
            Ok(node) if node.is_dir() && !mode.directory => dirs.push(Item {
                name: operand.clone(),
                node,
            }),
            Ok(node) => files.push(Item {
                name: operand.clone(),
                node,
            }),
            Err(error) => {
                let reason = crate::utils::strerror(&error);
                ctx.error("ls", &format!("cannot access '{operand}': {reason}"))?;
                status = 2;
            }
        }
    }
    mode.sort(&mut files);
    let mut printed = false;
    if !files.is_empty() {
        print_items(ctx, &files, &mode, false)?;
        printed = true;
    }
    mode.sort(&mut dirs);
    let headers = operands.len() > 1 || mode.recursive;
    for item in dirs {
        let path = ctx.path(&item.name).unwrap_or_else(|_| VPath::root());
        let real = ctx.fs.realpath(&path).unwrap_or(path);
        status = status.max(list_dir(
            ctx,
            &item.name,
            &real,
            &mode,
            headers,
            &mut printed,
        )?);
    }
    Ok(status)
}

/// The node an operand names; command-line symlinks to directories are
/// followed unless `-l`, `-d` or `-F` is given, as GNU does.
fn operand_node(ctx: &Ctx<'_>, operand: &str, mode: &LsMode) -> Result<Node, stead_vfs::VfsError> {
    let path = ctx.path(operand)?;
    let node = ctx.fs.stat(&path, false)?;
    let keep_link = (mode.long || mode.directory || mode.classify) && !operand.ends_with('/');
    if node.kind == Kind::Symlink && !keep_link {
        if let Ok(target) = ctx.fs.stat(&path, true) {
            return Ok(target);
        }
    }
    Ok(node)
}

/// Lists one directory (and, with `-R`, those below it).
fn list_dir(
    ctx: &mut Ctx<'_>,
    shown: &str,
    path: &VPath,
    mode: &LsMode,
    header: bool,
    printed: &mut bool,
) -> Result<i32, Abort> {
    ctx.budget.charge_cpu(NODE_COST)?;
    let entries = match ctx.fs.list(path) {
        Ok(entries) => entries,
        Err(error) => {
            let reason = crate::utils::strerror(&error);
            ctx.error("ls", &format!("cannot open directory '{shown}': {reason}"))?;
            return Ok(2);
        }
    };
    if *printed {
        ctx.stdout.write_str("\n")?;
    }
    *printed = true;
    if header {
        ctx.stdout.write_str(&format!("{shown}:\n"))?;
    }
    let mut items = dir_items(ctx, path, entries, mode)?;
    mode.sort(&mut items);
    print_items(ctx, &items, mode, true)?;
    let mut status = 0;
    if mode.recursive {
        for item in &items {
            if item.node.is_dir() && item.name != "." && item.name != ".." {
                let child = join_operand(shown, &item.name);
                let child_path = path.join(&item.name);
                status = status.max(list_dir(ctx, &child, &child_path, mode, true, printed)?);
            }
        }
    }
    Ok(status)
}

/// The items of a listing: visible entries, plus `.` and `..` with `-a`.
fn dir_items(
    ctx: &Ctx<'_>,
    path: &VPath,
    entries: Vec<DirEntry>,
    mode: &LsMode,
) -> Result<Vec<Item>, Abort> {
    let mut items = Vec::with_capacity(entries.len() + 2);
    if mode.all {
        let parent = path.parent().unwrap_or_else(VPath::root);
        for (name, dir) in [(".", path), ("..", &parent)] {
            if let Ok(node) = ctx.fs.stat(dir, true) {
                items.push(Item {
                    name: name.to_string(),
                    node,
                });
            }
        }
    }
    for entry in entries {
        ctx.budget.charge_cpu(NODE_COST)?;
        if mode.shows(&entry.name) {
            items.push(Item {
                name: entry.name,
                node: entry.node,
            });
        }
    }
    Ok(items)
}

/// The `-F` indicator of a node.
fn indicator(node: &Node) -> &'static str {
    match node.kind {
        Kind::Dir => "/",
        Kind::Symlink => "@",
        Kind::File if node.mode & 0o111 != 0 => "*",
        Kind::File => "",
    }
}

fn print_items(ctx: &mut Ctx<'_>, items: &[Item], mode: &LsMode, total: bool) -> Result<(), Abort> {
    let size_text = |node: &Node| {
        if mode.human {
            human_size(shown_size(node))
        } else {
            shown_size(node).to_string()
        }
    };
    if mode.long && total {
        let kib: u64 = items.iter().map(|i| usage_kib(&i.node)).sum();
        let text = if mode.human {
            human_size(kib * 1024)
        } else {
            kib.to_string()
        };
        ctx.stdout.write_str(&format!("total {text}\n"))?;
    }
    let width = items
        .iter()
        .map(|i| size_text(&i.node).len())
        .max()
        .unwrap_or(0);
    let now = ctx.clock.now_ms() as i64;
    let owners = if mode.no_group {
        OWNER.to_string()
    } else {
        format!("{OWNER} {OWNER}")
    };
    let mut out = String::new();
    for item in items {
        let node = &item.node;
        let suffix = if mode.classify && !(mode.long && node.kind == Kind::Symlink) {
            indicator(node)
        } else if mode.slash && node.is_dir() {
            "/"
        } else {
            ""
        };
        if mode.long {
            out.push_str(&format!(
                "{} 1 {owners} {:>width$} {} ",
                mode_string(node.kind, node.mode),
                size_text(node),
                ls_date(node.mtime, now),
            ));
        }
        out.push_str(&item.name);
        out.push_str(suffix);
        if let (true, Some(target)) = (mode.long, &node.target) {
            out.push_str(" -> ");
            out.push_str(target);
        }
        out.push('\n');
    }
    ctx.stdout.write_str(&out)
}

/// What `tree` counted.
#[derive(Default)]
struct TreeCount {
    dirs: u64,
    files: u64,
}

/// `tree`'s options (its parser and `auto`'s check read this one table).
pub(super) const TREE_OPTIONS: Spec = Spec {
    short: "adL:fI:P:",
    long: &[("dirsfirst", 'D'), ("noreport", 'N')],
};

/// `tree [-a] [-d] [-L LEVEL] [DIR]...`
pub(super) fn tree(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &TREE_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    let max_level = match opts.value('L').map(str::parse::<usize>) {
        None => usize::MAX,
        Some(Ok(level)) if level > 0 => level,
        Some(_) => {
            ctx.stderr
                .write_str("tree: Invalid level, must be greater than 0.\n")?;
            return Ok(1);
        }
    };
    let patterns = |flag: char| -> Vec<String> {
        opts.flags
            .iter()
            .filter(|(f, _)| *f == flag)
            .filter_map(|(_, v)| v.as_deref())
            .flat_map(|v| v.split('|'))
            .map(str::to_string)
            .collect()
    };
    let walk = TreeWalk {
        all: opts.has('a'),
        dirs_only: opts.has('d'),
        full: opts.has('f'),
        dirs_first: opts.has('D'),
        ignore: patterns('I'),
        only: patterns('P'),
        max_level,
    };
    let roots = if opts.operands.is_empty() {
        vec![".".to_string()]
    } else {
        opts.operands.clone()
    };
    let mut count = TreeCount::default();
    let mut status = 0;
    for root in &roots {
        let listing = ctx
            .path(root)
            .and_then(|p| ctx.fs.stat(&p, true).map(|n| (p, n)));
        match listing {
            Ok((path, node)) if node.is_dir() => {
                ctx.stdout.write_str(&format!("{root}\n"))?;
                walk.print(ctx, &path, root, "", 1, &mut count)?;
            }
            Ok(_) => {
                ctx.stdout
                    .write_str(&format!("{root}  [error opening dir]\n"))?;
                status = 2;
            }
            Err(_) => {
                ctx.stdout
                    .write_str(&format!("{root}  [error opening dir]\n"))?;
                status = 2;
            }
        }
    }
    if opts.has('N') {
        return Ok(status);
    }
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut summary = format!("\n{}", plural(count.dirs, "directory", "directories"));
    if !walk.dirs_only {
        summary.push_str(&format!(", {}", plural(count.files, "file", "files")));
    }
    summary.push('\n');
    ctx.stdout.write_str(&summary)?;
    Ok(status)
}

struct TreeWalk {
    all: bool,
    dirs_only: bool,
    full: bool,
    dirs_first: bool,
    /// `-I`: names to leave out.
    ignore: Vec<String>,
    /// `-P`: the only file names to show (directories always show).
    only: Vec<String>,
    max_level: usize,
}

impl TreeWalk {
    fn print(
        &self,
        ctx: &mut Ctx<'_>,
        path: &VPath,
        shown: &str,
        prefix: &str,
        level: usize,
        count: &mut TreeCount,
    ) -> Result<(), Abort> {
        if level > self.max_level {
            return Ok(());
        }
        ctx.budget.charge_cpu(NODE_COST)?;
        let mut entries: Vec<(DirEntry, bool)> = ctx
            .fs
            .list(path)
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                let is_dir = self.is_dir(ctx, path, &e);
                (e, is_dir)
            })
            .filter(|(e, is_dir)| self.shows(&e.name, *is_dir))
            .collect();
        if self.dirs_first {
            entries.sort_by_key(|(_, is_dir)| !is_dir);
        }
        for (i, (entry, is_dir)) in entries.iter().enumerate() {
            ctx.budget.charge_cpu(NODE_COST)?;
            let last = i + 1 == entries.len();
            let child_shown = join_operand(shown, &entry.name);
            let name = if self.full { &child_shown } else { &entry.name };
            let mut line = format!("{prefix}{}{name}", if last { "└── " } else { "├── " });
            if let Some(target) = &entry.node.target {
                line.push_str(&format!(" -> {target}"));
            }
            line.push('\n');
            ctx.stdout.write_str(&line)?;
            if *is_dir {
                count.dirs += 1;
                if entry.node.is_dir() {
                    let deeper = format!("{prefix}{}", if last { "    " } else { "│   " });
                    let child = path.join(&entry.name);
                    self.print(ctx, &child, &child_shown, &deeper, level + 1, count)?;
                }
            } else {
                count.files += 1;
            }
        }
        Ok(())
    }

    fn shows(&self, name: &str, is_dir: bool) -> bool {
        let matches = |patterns: &[String]| patterns.iter().any(|p| fnmatch(p, name, false));
        (self.all || !name.starts_with('.'))
            && (!self.dirs_only || is_dir)
            && !matches(&self.ignore)
            && (is_dir || self.only.is_empty() || matches(&self.only))
    }

    /// Whether an entry counts as a directory (symlinks to directories do).
    fn is_dir(&self, ctx: &Ctx<'_>, dir: &VPath, entry: &DirEntry) -> bool {
        match entry.node.kind {
            Kind::Dir => true,
            Kind::Symlink => ctx
                .fs
                .stat(&dir.join(&entry.name), true)
                .is_ok_and(|n| n.is_dir()),
            Kind::File => false,
        }
    }
}

/// How `du` reports.
struct DuMode {
    all: bool,
    max_depth: usize,
    human: bool,
    bytes: bool,
}

impl DuMode {
    fn size(&self, node: &Node) -> u64 {
        if self.bytes {
            shown_size(node)
        } else {
            usage_kib(node) * 1024
        }
    }

    fn line(&self, bytes: u64, shown: &str) -> String {
        let size = if self.human {
            human_size(bytes)
        } else if self.bytes {
            bytes.to_string()
        } else {
            bytes.div_ceil(1024).to_string()
        };
        format!("{size}\t{shown}\n")
    }
}

/// `du`'s options (its parser and `auto`'s check read this one table).
pub(super) const DU_OPTIONS: Spec = Spec {
    short: "sahckbAd:",
    long: &[
        ("summarize", 's'),
        ("all", 'a'),
        ("human-readable", 'h'),
        ("total", 'c'),
        ("bytes", 'b'),
        ("max-depth", 'd'),
        ("apparent-size", 'A'),
    ],
};

/// `du [-sahckb] [-d N] [FILE]...`
pub(super) fn du(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let opts = match options(ctx, args, &DU_OPTIONS, 1)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    let depth = match opts.value('d').map(str::parse::<usize>) {
        Some(Ok(depth)) => depth,
        Some(Err(_)) => {
            ctx.error("du", "invalid maximum depth")?;
            return Ok(1);
        }
        None if opts.has('s') => 0,
        None => usize::MAX,
    };
    let mode = DuMode {
        all: opts.has('a'),
        max_depth: depth,
        human: opts.has('h'),
        bytes: opts.has('b'),
    };
    let operands = if opts.operands.is_empty() {
        vec![".".to_string()]
    } else {
        opts.operands.clone()
    };
    let mut status = 0;
    let mut total = 0;
    for operand in &operands {
        let found = ctx
            .path(operand)
            .and_then(|p| ctx.fs.stat(&p, operand.ends_with('/')).map(|n| (p, n)));
        match found {
            Ok((path, node)) => total += du_walk(ctx, &mode, &path, &node, operand, 0)?,
            Err(error) => {
                let reason = crate::utils::strerror(&error);
                ctx.error("du", &format!("cannot access '{operand}': {reason}"))?;
                status = 1;
            }
        }
    }
    if opts.has('c') {
        ctx.stdout.write_str(&mode.line(total, "total"))?;
    }
    Ok(status)
}

/// Sums a subtree, printing directories (and files with `-a`) within depth.
fn du_walk(
    ctx: &mut Ctx<'_>,
    mode: &DuMode,
    path: &VPath,
    node: &Node,
    shown: &str,
    depth: usize,
) -> Result<u64, Abort> {
    ctx.budget.charge_cpu(NODE_COST)?;
    let mut sum = mode.size(node);
    if node.is_dir() {
        for entry in ctx.fs.list(path).unwrap_or_default() {
            let child = join_operand(shown, &entry.name);
            sum += du_walk(
                ctx,
                mode,
                &path.join(&entry.name),
                &entry.node,
                &child,
                depth + 1,
            )?;
        }
    }
    let printable = depth == 0 || node.is_dir() || mode.all;
    if printable && depth <= mode.max_depth {
        ctx.stdout.write_str(&mode.line(sum, shown))?;
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, files, run};

    fn sample() -> stead_sql::SqliteDb {
        let db = db();
        files(
            &db,
            &[("/w/a.txt", "hi\n"), ("/w/d/e/f", "x\n"), ("/w/.hid", "")],
        );
        db
    }

    #[test]
    fn ls_plain_all_and_operands() {
        let db = sample();
        assert_eq!(run(&db, &["ls", "/w"], "").stdout, "a.txt\nd\n");
        assert_eq!(
            run(&db, &["ls", "-a", "/w"], "").stdout,
            ".\n..\n.hid\na.txt\nd\n"
        );
        assert_eq!(run(&db, &["ls", "-A", "/w"], "").stdout, ".hid\na.txt\nd\n");
        let r = run(&db, &["ls", "/w/a.txt", "/w/d"], "");
        assert_eq!(r.stdout, "/w/a.txt\n\n/w/d:\ne\n");
        let r = run(&db, &["ls", "/w/nope"], "");
        assert_eq!(r.status, 2);
        assert_eq!(
            r.stderr,
            "ls: cannot access '/w/nope': No such file or directory\n"
        );
    }

    #[test]
    fn ls_long_matches_gnu_layout() {
        let db = sample();
        run(&db, &["ln", "-s", "a.txt", "/w/l"], "");
        // GNU: `ls -l` of the same tree (owner shown as agent).
        let r = run(&db, &["ls", "-l", "/w"], "");
        assert_eq!(
            r.stdout,
            "total 8\n\
             -rw-r--r-- 1 agent agent    3 Nov 14 22:13 a.txt\n\
             drwxr-xr-x 1 agent agent 4096 Nov 14 22:13 d\n\
             lrwxrwxrwx 1 agent agent    5 Nov 14 22:13 l -> a.txt\n"
        );
        let r = run(&db, &["ls", "-lh", "/w/d"], "");
        assert_eq!(
            r.stdout,
            "total 4.0K\ndrwxr-xr-x 1 agent agent 4.0K Nov 14 22:13 e\n"
        );
        assert_eq!(run(&db, &["ls", "-F", "/w"], "").stdout, "a.txt\nd/\nl@\n");
        let r = run(&db, &["ls", "-o", "/w/a.txt"], "");
        assert_eq!(r.stdout, "-rw-r--r-- 1 agent 3 Nov 14 22:13 /w/a.txt\n");
    }

    #[test]
    fn ls_recursive_sorted_and_dir() {
        let db = sample();
        let r = run(&db, &["ls", "-R", "/w/d"], "");
        assert_eq!(r.stdout, "/w/d:\ne\n\n/w/d/e:\nf\n");
        files(&db, &[("/s/big", "12345"), ("/s/small", "1")]);
        assert_eq!(run(&db, &["ls", "-S", "/s"], "").stdout, "big\nsmall\n");
        assert_eq!(run(&db, &["ls", "-1r", "/s"], "").stdout, "small\nbig\n");
        assert_eq!(run(&db, &["ls", "-d", "/s"], "").stdout, "/s\n");
        files(&db, &[("/g/b/x", ""), ("/g/a", ""), ("/g/c", "")]);
        let r = run(&db, &["ls", "--group-directories-first", "-p", "/g"], "");
        assert_eq!(r.stdout, "b/\na\nc\n");
    }

    #[test]
    fn tree_prints_gnu_tree_layout() {
        let db = sample();
        run(&db, &["ln", "-s", "a.txt", "/w/l"], "");
        let r = run(&db, &["tree", "/w"], "");
        assert_eq!(
            r.stdout,
            "/w\n├── a.txt\n├── d\n│   └── e\n│       └── f\n└── l -> a.txt\n\n2 directories, 3 files\n"
        );
        let r = run(&db, &["tree", "-d", "-L", "1", "/w"], "");
        assert_eq!(r.stdout, "/w\n└── d\n\n1 directory\n");
        let r = run(&db, &["tree", "-I", "d|l", "--noreport", "/w"], "");
        assert_eq!(r.stdout, "/w\n└── a.txt\n");
        let r = run(&db, &["tree", "--dirsfirst", "-P", "*.md", "/w"], "");
        assert_eq!(r.stdout, "/w\n└── d\n    └── e\n\n2 directories, 0 files\n");
    }

    #[test]
    fn du_counts_four_kib_blocks() {
        let db = sample();
        let r = run(&db, &["du", "/w"], "");
        assert_eq!(r.stdout, "8\t/w/d/e\n12\t/w/d\n20\t/w\n");
        let r = run(&db, &["du", "-sh", "/w"], "");
        assert_eq!(r.stdout, "20K\t/w\n");
        let r = run(&db, &["du", "-c", "/w/a.txt", "/w/d"], "");
        assert_eq!(r.stdout, "4\t/w/a.txt\n8\t/w/d/e\n12\t/w/d\n16\ttotal\n");
    }

    #[test]
    fn ls_sorts_by_time_and_du_all() {
        let db = db();
        files(&db, &[("/t/old", "1"), ("/t/new", "2")]);
        run(&db, &["touch", "-d", "@1000", "/t/old"], "");
        assert_eq!(run(&db, &["ls", "-t", "/t"], "").stdout, "new\nold\n");
        assert_eq!(run(&db, &["ls", "-tr", "/t"], "").stdout, "old\nnew\n");
        assert!(run(&db, &["ls", "-l", "/t/old"], "")
            .stdout
            .contains(" Jan  1  1970 /t/old"));
        let r = run(&db, &["du", "-a", "/t"], "");
        assert_eq!(r.stdout, "4\t/t/new\n4\t/t/old\n12\t/t\n");
        let r = run(&db, &["du", "-sb", "/t"], "");
        assert_eq!(r.stdout, "4098\t/t\n");
    }
}
