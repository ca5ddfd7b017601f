//! `tar`: create, list and extract ustar archives (optionally gzipped),
//! written and read by hand.
//!
//! Reading follows POSIX.1-2001's pax format as GNU tar does: `x` extended
//! headers give the next member's `path`, `linkpath`, `mtime` (with its
//! fraction) and `size`, `g` headers give them for every member after it,
//! a record with an empty value deletes the value it would override, and
//! GNU's `L`/`K` long-name members are read too. `uid`, `gid`, `uname` and
//! `gname` are read and dropped: every node belongs to `agent`. Writing
//! uses ustar fields where a value fits, and a pax `x` header before a
//! member whose path, link target or mtime (negative, too large, or with
//! milliseconds) does not, as GNU tar's `--format=pax` does.
//!
//! Extraction is a security boundary: an archive comes from anywhere. Every
//! member name is made relative (leading `/` stripped, as GNU does), a name
//! with a `..` component is refused, and nothing is ever written through a
//! symlink: an existing node at a member's path is removed first, and a
//! member whose parent path crosses a symlink is refused. So whatever links
//! an archive plants, its members land inside the destination directory.

use stead_vfs::{Kind, Node, VPath, VfsError};

use super::gzip::{deflate, inflate, MAX_INFLATED};
use super::time::minutes;
use super::{join_operand, mode_string, options, parse_opts, Opts, Spec, OWNER, OWNER_ID};
use crate::limits::Abort;
use crate::utils::{strerror, Ctx};

const BLOCK: usize = 512;
/// CPU units one extracted member is charged beyond its bytes: each is a
/// change to the workspace's storage (a few SQL statements, each crossing
/// from the isolate to the runtime on Workers), far more work than
/// processing its 512-byte header. At the default `max_cpu_units` an exec
/// extracts about 30,000 members (an empty one included) before it ends
/// on that limit; a larger archive is the computer's to unpack.
const MEMBER_COST: u64 = 1 << 15;
/// GNU tar pads archives to records of 20 blocks.
const RECORD: usize = 20 * BLOCK;

/// What kind of member a header describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemberKind {
    File,
    Dir,
    Symlink,
    HardLink,
    Other,
}

/// One archive member.
#[derive(Debug, Clone)]
struct Member {
    name: String,
    kind: MemberKind,
    mode: u32,
    /// Milliseconds since the epoch, as the workspace keeps it.
    mtime_ms: i64,
    link: String,
    data: Vec<u8>,
}

// ---- writing -------------------------------------------------------------

/// Writes `value` as zero-padded octal filling `field` but its last byte (NUL).
fn put_octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    let text = &text.as_bytes()[text.len().saturating_sub(digits)..];
    field[..digits].copy_from_slice(text);
    field[digits] = 0;
}

fn put_str(field: &mut [u8], text: &str) {
    let bytes = text.as_bytes();
    let n = bytes.len().min(field.len());
    field[..n].copy_from_slice(&bytes[..n]);
}

fn checksum(header: &[u8]) -> u64 {
    header
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u64::from(*b)
            }
        })
        .sum()
}

/// The largest value an 11-digit octal field (size, mtime) holds.
const MAX_OCTAL_11: i64 = 8_i64.pow(11) - 1;

/// One 512-byte ustar header; `mtime` in whole seconds (clamped to what
/// the field holds: a pax record carries the exact value).
fn header(
    name: &str,
    prefix: &str,
    flag: u8,
    mode: u32,
    size: u64,
    mtime: i64,
    link: &str,
) -> [u8; BLOCK] {
    let mut h = [0u8; BLOCK];
    put_str(&mut h[0..100], name);
    put_octal(&mut h[100..108], u64::from(mode & 0o7777));
    put_octal(&mut h[108..116], u64::from(OWNER_ID));
    put_octal(&mut h[116..124], u64::from(OWNER_ID));
    put_octal(&mut h[124..136], size);
    put_octal(&mut h[136..148], mtime.clamp(0, MAX_OCTAL_11) as u64);
    h[156] = flag;
    put_str(&mut h[157..257], link);
    h[257..265].copy_from_slice(b"ustar\x0000");
    put_str(&mut h[265..297], OWNER);
    put_str(&mut h[297..329], OWNER);
    put_str(&mut h[345..500], prefix);
    let sum = checksum(&h);
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

/// Appends `data` padded to whole blocks.
fn put_data(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(BLOCK), 0);
}

/// Splits a long name into ustar (prefix, name), if it fits.
fn split_name(name: &str) -> Option<(&str, &str)> {
    if name.len() <= 100 {
        return Some(("", name));
    }
    name.char_indices()
        .filter(|(i, c)| *c == '/' && *i <= 155 && name.len() - i - 1 <= 100 && *i > 0)
        .map(|(i, _)| (&name[..i], &name[i + 1..]))
        .next()
}

/// The longest prefix of `text` within `max` bytes, cut at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One pax record, `LEN key=value\n`, where LEN counts the whole record,
/// its own digits included.
fn pax_record(key: &str, value: &str) -> String {
    let body = key.len() + value.len() + 3;
    let mut len = body + body.to_string().len();
    if len.to_string().len() > body.to_string().len() {
        len += 1;
    }
    format!("{len} {key}={value}\n")
}

/// A millisecond time as pax writes it: decimal seconds, the fraction only
/// when there is one (`1700000000`, `1700000000.5`, `-1.25`).
fn pax_time(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let (secs, frac) = (ms.unsigned_abs() / 1000, ms.unsigned_abs() % 1000);
    if frac == 0 {
        format!("{sign}{secs}")
    } else {
        let frac = format!("{frac:03}");
        format!("{sign}{secs}.{}", frac.trim_end_matches('0'))
    }
}

/// Appends one member, with a pax `x` header first for what its ustar
/// fields cannot hold: a path that does not split into prefix and name, a
/// link target over 100 bytes, an mtime before 1970, past the octal field
/// or with milliseconds.
fn put_member(out: &mut Vec<u8>, m: &Member) {
    let flag = match m.kind {
        MemberKind::Dir => b'5',
        MemberKind::Symlink => b'2',
        MemberKind::HardLink => b'1',
        _ => b'0',
    };
    let split = split_name(&m.name);
    let secs = m.mtime_ms.div_euclid(1000);
    let mut records = String::new();
    if split.is_none() {
        records.push_str(&pax_record("path", &m.name));
    }
    if m.link.len() > 100 {
        records.push_str(&pax_record("linkpath", &m.link));
    }
    if m.mtime_ms % 1000 != 0 || !(0..=MAX_OCTAL_11).contains(&secs) {
        records.push_str(&pax_record("mtime", &pax_time(m.mtime_ms)));
    }
    if !records.is_empty() {
        // GNU's name for the extended header: DIR/PaxHeaders/BASE.
        let (dir, base) = match m.name.trim_end_matches('/').rsplit_once('/') {
            Some((dir, base)) => (format!("{dir}/"), base),
            None => (String::new(), m.name.trim_end_matches('/')),
        };
        let pax_name = format!("{dir}PaxHeaders/{base}");
        out.extend_from_slice(&header(
            truncate(&pax_name, 100),
            "",
            b'x',
            0o644,
            records.len() as u64,
            secs,
            "",
        ));
        put_data(out, records.as_bytes());
    }
    let (prefix, name) = split.unwrap_or(("", truncate(&m.name, 100)));
    out.extend_from_slice(&header(
        name,
        prefix,
        flag,
        m.mode,
        m.data.len() as u64,
        secs,
        truncate(&m.link, 100),
    ));
    put_data(out, &m.data);
}

/// The finished archive: members, two zero blocks, padded to a record.
fn finish(mut out: Vec<u8>) -> Vec<u8> {
    out.resize(out.len() + 2 * BLOCK, 0);
    out.resize(out.len().next_multiple_of(RECORD), 0);
    out
}

// ---- reading -------------------------------------------------------------

/// Why an archive could not be read.
#[derive(Debug, PartialEq, Eq)]
enum ReadError {
    NotTar,
    Truncated,
}

fn field_str(field: &[u8]) -> String {
    let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// A numeric field: octal text, or GNU's base-256 for big values.
fn field_num(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        return Some(
            field[1..]
                .iter()
                .fold(0u64, |acc, b| acc.wrapping_shl(8) | u64::from(*b)),
        );
    }
    let text = field_str(field);
    let text = text.trim_matches(|c: char| c == ' ' || c == '\0');
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}

/// One value of a pax extended header, as it bears on a member.
#[derive(Debug, Clone, Default)]
enum PaxValue<T> {
    /// No record: the value below (a global one, or the ustar field) holds.
    #[default]
    Absent,
    /// A record with an empty value: the ustar field holds, whatever a
    /// global header said.
    Deleted,
    Given(T),
}

impl<T: Clone> PaxValue<T> {
    /// This value (a member's own record) over `global`'s; `None` means
    /// the member's header field.
    fn over(&self, global: &PaxValue<T>) -> Option<T> {
        match (self, global) {
            (PaxValue::Given(v), _) | (PaxValue::Absent, PaxValue::Given(v)) => Some(v.clone()),
            _ => None,
        }
    }
}

/// The pax values the workspace keeps, from one `x` header (the next
/// member's) or from the `g` headers so far (every later member's).
#[derive(Debug, Clone, Default)]
struct PaxValues {
    path: PaxValue<String>,
    linkpath: PaxValue<String>,
    mtime_ms: PaxValue<i64>,
    size: PaxValue<u64>,
}

/// A pax time (`[-]SECONDS[.FRACTION]`, decimal) in milliseconds, the
/// fraction cut to them as the workspace keeps time.
fn parse_pax_time(text: &str) -> Option<i64> {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (secs, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(secs) || !(frac.is_empty() || digits(frac)) {
        return None;
    }
    let ms: String = frac.chars().chain("000".chars()).take(3).collect();
    let value = secs
        .parse::<i64>()
        .ok()?
        .checked_mul(1000)?
        .checked_add(ms.parse::<i64>().ok()?)?;
    Some(if negative { -value } else { value })
}

/// Reads the records (`LEN key=value\n`) of an extended header into
/// `values`. In a global header an empty value removes the global value;
/// in a member's own header it deletes (see [`PaxValue::Deleted`]). A
/// malformed record ends the header, as GNU tar stops reading it; unknown
/// keywords are ignored, as POSIX asks.
fn read_pax_records(data: &[u8], values: &mut PaxValues, global: bool) {
    fn set<T>(slot: &mut PaxValue<T>, value: Option<T>, global: bool) {
        *slot = match (value, global) {
            (Some(v), _) => PaxValue::Given(v),
            (None, true) => PaxValue::Absent,
            (None, false) => PaxValue::Deleted,
        };
    }
    let mut rest = data;
    while !rest.is_empty() {
        let Some(space) = rest.iter().position(|b| *b == b' ') else {
            return;
        };
        let Some(len) = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return;
        };
        if len <= space + 1 || len > rest.len() || rest[len - 1] != b'\n' {
            return;
        }
        let record = &rest[space + 1..len - 1];
        rest = &rest[len..];
        let Some(eq) = record.iter().position(|b| *b == b'=') else {
            return;
        };
        let key = String::from_utf8_lossy(&record[..eq]);
        let value = String::from_utf8_lossy(&record[eq + 1..]).into_owned();
        let given = (!value.is_empty()).then_some(value);
        match key.as_ref() {
            "path" => set(&mut values.path, given, global),
            "linkpath" => set(&mut values.linkpath, given, global),
            "mtime" => {
                let time = given.as_deref().map(parse_pax_time);
                if let Some(None) = time {
                    continue; // not a number: ignored, as GNU tar does
                }
                set(&mut values.mtime_ms, time.flatten(), global)
            }
            "size" => {
                let size = given.as_deref().map(|s| s.parse::<u64>().ok());
                if let Some(None) = size {
                    continue;
                }
                set(&mut values.size, size.flatten(), global)
            }
            // atime, ctime, uid, gid, uname, gname, charset, comment,
            // hdrcharset and vendor keywords: nothing the workspace keeps.
            _ => {}
        }
    }
}

/// Parses a whole (uncompressed) archive into its members.
fn parse(data: &[u8]) -> Result<Vec<Member>, ReadError> {
    let mut members = Vec::new();
    let mut at = 0;
    let (mut long_name, mut long_link) = (None, None);
    let (mut global, mut local) = (PaxValues::default(), PaxValues::default());
    while at + BLOCK <= data.len() {
        let h = &data[at..at + BLOCK];
        if h.iter().all(|b| *b == 0) {
            break;
        }
        let stored = field_num(&h[148..156]).ok_or(ReadError::NotTar)?;
        if stored != checksum(h) {
            return Err(ReadError::NotTar);
        }
        let flag = h[156];
        let is_member = !matches!(flag, b'L' | b'K' | b'x' | b'g');
        let header_size = field_num(&h[124..136]).ok_or(ReadError::NotTar)?;
        let size = if is_member {
            local.size.over(&global.size).unwrap_or(header_size)
        } else {
            header_size
        };
        let size = usize::try_from(size).map_err(|_| ReadError::Truncated)?;
        let start = at + BLOCK;
        let end = start.checked_add(size).ok_or(ReadError::Truncated)?;
        if end > data.len() {
            return Err(ReadError::Truncated);
        }
        let body = &data[start..end];
        at = start + size.next_multiple_of(BLOCK);
        match flag {
            b'L' => long_name = Some(field_str(body)),
            b'K' => long_link = Some(field_str(body)),
            b'x' => read_pax_records(body, &mut local, false),
            b'g' => read_pax_records(body, &mut global, true),
            _ => {
                let mine = std::mem::take(&mut local);
                let mut name = field_str(&h[0..100]);
                let prefix = field_str(&h[345..500]);
                if &h[257..262] == b"ustar" && !prefix.is_empty() {
                    name = format!("{prefix}/{name}");
                }
                // pax over GNU's long names over the ustar fields.
                let (long, long_target) = (long_name.take(), long_link.take());
                let name = mine.path.over(&global.path).or(long).unwrap_or(name);
                let link = (mine.linkpath.over(&global.linkpath))
                    .or(long_target)
                    .unwrap_or_else(|| field_str(&h[157..257]));
                let header_mtime = field_num(&h[136..148]).unwrap_or(0) as i64;
                let kind = match flag {
                    b'0' | 0 | b'7' if name.ends_with('/') => MemberKind::Dir,
                    b'0' | 0 | b'7' => MemberKind::File,
                    b'5' => MemberKind::Dir,
                    b'2' => MemberKind::Symlink,
                    b'1' => MemberKind::HardLink,
                    _ => MemberKind::Other,
                };
                members.push(Member {
                    name,
                    kind,
                    mode: field_num(&h[100..108]).unwrap_or(0o644) as u32 & 0o7777,
                    mtime_ms: mine
                        .mtime_ms
                        .over(&global.mtime_ms)
                        .unwrap_or(header_mtime.saturating_mul(1000)),
                    link,
                    data: if kind == MemberKind::File {
                        body.to_vec()
                    } else {
                        Vec::new()
                    },
                });
            }
        }
    }
    if at > data.len() || (at < data.len() && data.len() - at < BLOCK) {
        return Err(ReadError::Truncated);
    }
    Ok(members)
}

// ---- the command ---------------------------------------------------------

/// The parsed command line.
struct TarArgs {
    op: char,
    file: Option<String>,
    gzip: bool,
    verbose: bool,
    dir: Option<String>,
    strip: usize,
    to_stdout: bool,
    excludes: Vec<String>,
    members: Vec<String>,
    /// `--wildcards`: member operands are shell patterns.
    wildcards: bool,
}

/// Running state: the exit status and the once-only warnings.
#[derive(Default)]
struct TarState {
    status: i32,
    warned_slash: bool,
    /// Directories of the destination already found or made by this
    /// extraction, so each member's parents are looked up once, not once
    /// per member. Safe to trust: extraction never turns a directory into
    /// anything else (see [`clear_path`]), and nothing else runs meanwhile.
    dirs: std::collections::HashSet<VPath>,
}

impl TarState {
    fn fail(&mut self, ctx: &mut Ctx<'_>, message: &str) -> Result<(), Abort> {
        self.status = 2;
        ctx.error("tar", message)
    }

    fn warn_slash(&mut self, ctx: &mut Ctx<'_>) -> Result<(), Abort> {
        if !self.warned_slash {
            self.warned_slash = true;
            ctx.error("tar", "Removing leading `/' from member names")?;
        }
        Ok(())
    }
}

/// Old-style `tar czf x.tgz dir`: a first argument without `-` is a flag cluster.
fn normalise_args(args: &[String]) -> Vec<String> {
    let mut out = args.to_vec();
    if let Some(first) = out.get_mut(1) {
        if !first.starts_with('-')
            && !first.is_empty()
            && first.chars().all(|c| c.is_ascii_alphabetic())
        {
            *first = format!("-{first}");
        }
    }
    out
}

fn parse_args(opts: &Opts) -> Result<TarArgs, String> {
    let op = opts
        .last_of("ctx")
        .ok_or("You must specify one of the '-Acdtrux', '--delete' or '--test-label' options")?;
    if opts.has('j') || opts.has('J') {
        return Err("bzip2 and xz compression are not supported in the light shell; use -z".into());
    }
    let strip = match opts.value('S') {
        Some(n) => n
            .parse()
            .map_err(|_| format!("Invalid number of elements: '{n}'"))?,
        None => 0,
    };
    let file = opts.value('f').map(str::to_string);
    let auto_gzip = opts.has('a')
        && file
            .as_deref()
            .is_some_and(|f| f.ends_with(".gz") || f.ends_with(".tgz"));
    Ok(TarArgs {
        op,
        gzip: opts.has('z') || auto_gzip,
        file,
        verbose: opts.has('v'),
        dir: opts.value('C').map(str::to_string),
        strip,
        to_stdout: opts.has('O'),
        excludes: opts
            .flags
            .iter()
            .filter(|(f, _)| *f == 'E')
            .filter_map(|(_, v)| v.clone())
            .collect(),
        members: opts.operands.clone(),
        wildcards: opts.has('w'),
    })
}

/// `tar`'s options (its parser and `auto`'s check read this one table).
pub(super) const TAR_OPTIONS: Spec = Spec {
    short: "ctxf:zvC:S:E:OajJopWkmhwnN",
    long: &[
        ("create", 'c'),
        ("extract", 'x'),
        ("get", 'x'),
        ("list", 't'),
        ("file", 'f'),
        ("gzip", 'z'),
        ("gunzip", 'z'),
        ("ungzip", 'z'),
        ("verbose", 'v'),
        ("directory", 'C'),
        ("strip-components", 'S'),
        ("exclude", 'E'),
        ("to-stdout", 'O'),
        ("auto-compress", 'a'),
        ("bzip2", 'j'),
        ("xz", 'J'),
        ("no-same-owner", 'o'),
        ("preserve-permissions", 'p'),
        ("overwrite", 'W'),
        ("wildcards", 'w'),
        ("no-wildcards", 'n'),
        ("no-same-permissions", 'N'),
        ("touch", 'm'),
    ],
};

/// Whether `tar` accepts `args`' options, as it reads them when it runs.
pub(super) fn check_options(args: &[String]) -> Result<(), String> {
    parse_args(&parse_opts(&normalise_args(args), &TAR_OPTIONS)?).map(drop)
}

/// `tar -c|-x|-t [-zvaO] [-f ARCHIVE] [-C DIR] [--strip-components=N] [--exclude=PAT] [MEMBER]...`
pub(super) fn tar(ctx: &mut Ctx<'_>, args: &[String]) -> Result<i32, Abort> {
    let args = normalise_args(args);
    let opts = match options(ctx, &args, &TAR_OPTIONS, 2)? {
        Ok(opts) => opts,
        Err(status) => return Ok(status),
    };
    let tar_args = match parse_args(&opts) {
        Ok(parsed) => parsed,
        Err(message) => {
            ctx.error("tar", &message)?;
            ctx.stderr
                .write_str("Try 'tar --help' or 'tar --usage' for more information.\n")?;
            return Ok(2);
        }
    };
    let mut state = TarState::default();
    match tar_args.op {
        'c' => create(ctx, &tar_args, &mut state)?,
        op => read_archive(ctx, &tar_args, op, &mut state)?,
    }
    if state.status != 0 {
        ctx.error("tar", "Exiting with failure status due to previous errors")?;
    }
    Ok(state.status)
}

/// The directory `-C` names (or the current one).
fn base_dir(ctx: &Ctx<'_>, args: &TarArgs) -> Result<VPath, VfsError> {
    let dir = ctx.path(args.dir.as_deref().unwrap_or("."))?;
    let real = ctx.fs.realpath(&dir)?;
    if ctx.fs.stat(&real, true)?.is_dir() {
        Ok(real)
    } else {
        Err(VfsError::NotADirectory {
            path: dir.to_string(),
        })
    }
}

/// Whether `--exclude` drops a member: a pattern matching the whole name,
/// a leading part of it, or any one component (so a directory's contents go too).
fn excluded(args: &TarArgs, name: &str) -> bool {
    let trimmed = name.trim_end_matches('/');
    let prefixes = trimmed
        .match_indices('/')
        .map(|(i, _)| &trimmed[..i])
        .chain([trimmed]);
    let mut candidates = prefixes.chain(trimmed.split('/'));
    candidates.any(|candidate| {
        args.excludes
            .iter()
            .any(|pat| super::find::fnmatch(pat, candidate, false))
    })
}

// ---- create ----------------------------------------------------------------

fn create(ctx: &mut Ctx<'_>, args: &TarArgs, state: &mut TarState) -> Result<(), Abort> {
    if args.members.is_empty() {
        state.fail(ctx, "Cowardly refusing to create an empty archive")?;
        return Ok(());
    }
    let base = match base_dir(ctx, args) {
        Ok(base) => base,
        Err(error) => {
            let message = format!(
                "{}: Cannot open: {}",
                args.dir.as_deref().unwrap_or("."),
                strerror(&error)
            );
            return state.fail(ctx, &message);
        }
    };
    let archive_path = match args.file.as_deref() {
        Some("-") | None => None,
        Some(file) => ctx.path(file).ok(),
    };
    let mut out = Vec::new();
    for operand in &args.members {
        let name = operand.trim_start_matches('/');
        if name.len() != operand.len() {
            state.warn_slash(ctx)?;
        }
        let name = if name.is_empty() { "." } else { name };
        let found =
            VPath::parse_from(operand, &base).and_then(|p| ctx.fs.stat(&p, false).map(|n| (p, n)));
        match found {
            Ok((path, node)) => add_tree(
                ctx,
                args,
                state,
                &mut out,
                (&path, &node),
                name,
                archive_path.as_ref(),
            )?,
            Err(error) => state.fail(
                ctx,
                &format!("{operand}: Cannot stat: {}", strerror(&error)),
            )?,
        }
    }
    if out.len() > MAX_INFLATED {
        let message = format!(
            "archive larger than {} MiB: too large for the light shell",
            MAX_INFLATED >> 20
        );
        return state.fail(ctx, &message);
    }
    let mut archive = finish(out);
    if args.gzip {
        archive = deflate(ctx, &archive, 6, None, 0)?;
    }
    match (&args.file, archive_path) {
        (Some(file), Some(path)) => {
            if let Err(error) = ctx.write_file(&path, &archive)? {
                state.fail(ctx, &format!("{file}: Cannot open: {}", strerror(&error)))?;
            }
        }
        (Some(file), None) if file != "-" => {
            state.fail(ctx, &format!("{file}: Cannot open: Invalid argument"))?
        }
        _ => ctx.stdout.write(&archive)?,
    }
    Ok(())
}

/// Appends a node (and, for a directory, everything below it).
fn add_tree(
    ctx: &mut Ctx<'_>,
    args: &TarArgs,
    state: &mut TarState,
    out: &mut Vec<u8>,
    (path, node): (&VPath, &Node),
    name: &str,
    archive: Option<&VPath>,
) -> Result<(), Abort> {
    ctx.budget.charge_cpu(BLOCK as u64)?;
    if out.len() > MAX_INFLATED || excluded(args, name) {
        return Ok(());
    }
    if archive == Some(path) {
        return ctx.error("tar", &format!("{name}: file is the archive; not dumped"));
    }
    let (kind, data, shown) = match node.kind {
        Kind::Dir => {
            let shown = if name.ends_with('/') {
                name.to_string()
            } else {
                format!("{name}/")
            };
            (MemberKind::Dir, Vec::new(), shown)
        }
        Kind::Symlink => (MemberKind::Symlink, Vec::new(), name.to_string()),
        Kind::File => match ctx.fs.read(path) {
            Ok(data) => {
                ctx.budget.charge_cpu(data.len() as u64)?;
                (MemberKind::File, data, name.to_string())
            }
            Err(error) => {
                return state.fail(ctx, &format!("{name}: Cannot open: {}", strerror(&error)))
            }
        },
    };
    if args.verbose {
        let line = format!("{shown}\n");
        if args.file.as_deref().is_none_or(|f| f == "-") {
            ctx.stderr.write_str(&line)?;
        } else {
            ctx.stdout.write_str(&line)?;
        }
    }
    let member = Member {
        name: shown,
        kind,
        mode: node.mode,
        mtime_ms: node.mtime,
        link: node.target.clone().unwrap_or_default(),
        data,
    };
    put_member(out, &member);
    if node.is_dir() {
        for entry in ctx.fs.list(path).unwrap_or_default() {
            let child_name = join_operand(name, &entry.name);
            add_tree(
                ctx,
                args,
                state,
                out,
                (&path.join(&entry.name), &entry.node),
                &child_name,
                archive,
            )?;
        }
    }
    Ok(())
}

// ---- list and extract ------------------------------------------------------

/// Loads, un-gzips (by magic, as GNU does) and parses the archive.
fn load(
    ctx: &mut Ctx<'_>,
    args: &TarArgs,
    state: &mut TarState,
) -> Result<Option<Vec<Member>>, Abort> {
    let raw = match args.file.as_deref() {
        None | Some("-") => ctx.stdin.all()?.to_vec(),
        Some(file) => match ctx.path(file).and_then(|p| ctx.fs.read(&p)) {
            Ok(raw) => raw,
            Err(error) => {
                state.fail(ctx, &format!("{file}: Cannot open: {}", strerror(&error)))?;
                return Ok(None);
            }
        },
    };
    ctx.budget.charge_cpu(raw.len() as u64)?;
    let data = if raw.starts_with(&[0x1f, 0x8b]) {
        match inflate(ctx, &raw)? {
            Ok(data) => data,
            Err(_) => {
                state.fail(ctx, "This does not look like a tar archive")?;
                return Ok(None);
            }
        }
    } else {
        raw
    };
    match parse(&data) {
        Ok(members) => Ok(Some(members)),
        Err(ReadError::NotTar) => {
            state.fail(ctx, "This does not look like a tar archive")?;
            Ok(None)
        }
        Err(ReadError::Truncated) => {
            state.fail(ctx, "Unexpected EOF in archive")?;
            Ok(None)
        }
    }
}

/// Whether a member was asked for (no operands: all of them).
fn wanted(args: &TarArgs, name: &str, seen: &mut [bool]) -> bool {
    if args.members.is_empty() {
        return true;
    }
    let name = name.trim_end_matches('/');
    let mut hit = false;
    for (i, m) in args.members.iter().enumerate() {
        let m = m.trim_end_matches('/');
        let below = |prefix: &str| {
            name.strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/'))
        };
        let matched = if args.wildcards {
            let mut prefixes = name.match_indices('/').map(|(i, _)| &name[..i]);
            super::find::fnmatch(m, name, false)
                || prefixes.any(|p| super::find::fnmatch(m, p, false))
        } else {
            name == m || below(m)
        };
        if matched {
            seen[i] = true;
            hit = true;
        }
    }
    hit
}

fn read_archive(
    ctx: &mut Ctx<'_>,
    args: &TarArgs,
    op: char,
    state: &mut TarState,
) -> Result<(), Abort> {
    let Some(members) = load(ctx, args, state)? else {
        return Ok(());
    };
    let dest = if op == 'x' {
        match base_dir(ctx, args) {
            Ok(dest) => Some(dest),
            Err(error) => {
                let message = format!(
                    "{}: Cannot open: {}",
                    args.dir.as_deref().unwrap_or("."),
                    strerror(&error)
                );
                return state.fail(ctx, &message);
            }
        }
    } else {
        None
    };
    let mut seen = vec![false; args.members.len()];
    let mut dir_times = Vec::new();
    for member in &members {
        ctx.budget.charge_cpu(BLOCK as u64)?;
        if !wanted(args, &member.name, &mut seen) || excluded(args, &member.name) {
            continue;
        }
        match &dest {
            None => list_member(ctx, args, member)?,
            Some(dest) => {
                ctx.budget.charge_cpu(MEMBER_COST)?;
                ctx.budget.check_time(ctx.clock)?;
                if let Some(dir) = extract_member(ctx, args, state, dest, member)? {
                    dir_times.push((dir, member.mtime_ms));
                }
            }
        }
    }
    for (dir, mtime) in dir_times.into_iter().rev() {
        let _ = ctx.fs.touch(&dir, Some(mtime));
    }
    for (member, found) in args.members.iter().zip(seen) {
        if !found {
            state.fail(ctx, &format!("{member}: Not found in archive"))?;
        }
    }
    Ok(())
}

fn list_member(ctx: &mut Ctx<'_>, args: &TarArgs, m: &Member) -> Result<(), Abort> {
    if !args.verbose {
        return ctx.stdout.write_str(&format!("{}\n", m.name));
    }
    let kind = match m.kind {
        MemberKind::Dir => Kind::Dir,
        MemberKind::Symlink => Kind::Symlink,
        _ => Kind::File,
    };
    let mut modes = mode_string(kind, m.mode);
    if m.kind == MemberKind::HardLink {
        modes.replace_range(0..1, "h");
    }
    let owner = format!("{OWNER}/{OWNER}");
    let size = m.data.len().to_string();
    let width = 19usize.saturating_sub(owner.len() + 1).max(size.len());
    let mut line = format!(
        "{modes} {owner} {size:>width$} {} {}",
        minutes(m.mtime_ms),
        m.name
    );
    match m.kind {
        MemberKind::Symlink => line.push_str(&format!(" -> {}", m.link)),
        MemberKind::HardLink => line.push_str(&format!(" link to {}", m.link)),
        _ => {}
    }
    line.push('\n');
    ctx.stdout.write_str(&line)
}

/// Makes a member name safe: relative, without `..`, with `--strip-components`
/// applied. `None` (after reporting) when it must be skipped; `Some("")` is
/// the destination itself.
fn safe_name(
    ctx: &mut Ctx<'_>,
    args: &TarArgs,
    state: &mut TarState,
    name: &str,
) -> Result<Option<String>, Abort> {
    let relative = name.trim_start_matches('/');
    if relative.len() != name.len() {
        state.warn_slash(ctx)?;
    }
    let parts: Vec<&str> = relative
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        state.fail(ctx, &format!("{name}: Member name contains '..'"))?;
        return Ok(None);
    }
    if args.strip > 0 && parts.len() <= args.strip {
        return Ok(None);
    }
    Ok(Some(parts[args.strip.min(parts.len())..].join("/")))
}

/// Creates the directories from `dest` down to `path`'s parent, refusing to
/// go through a symlink or a file. The error names the offending component.
fn prepare_parents(
    ctx: &Ctx<'_>,
    state: &mut TarState,
    dest: &VPath,
    path: &VPath,
) -> Result<(), String> {
    let Some(parent) = path.parent() else {
        return Err("Cannot open: Not inside the destination".into());
    };
    if state.dirs.contains(&parent) {
        return Ok(());
    }
    let Some(relative) = parent.strip_prefix(dest).map(str::to_string) else {
        return Err("Cannot open: Not inside the destination".into());
    };
    let mut dir = dest.clone();
    for part in relative.split('/').filter(|p| !p.is_empty()) {
        dir = dir.join(part);
        if state.dirs.contains(&dir) {
            continue;
        }
        match ctx.fs.stat(&dir, false) {
            Ok(node) if node.is_dir() => {}
            Ok(node) if node.kind == Kind::Symlink => {
                return Err(format!("Cannot extract through symbolic link '{part}'"));
            }
            Ok(_) => return Err("Cannot open: Not a directory".into()),
            Err(_) => ctx
                .fs
                .mkdir(&dir, false)
                .map_err(|e| format!("Cannot mkdir: {}", strerror(&e)))?,
        }
        state.dirs.insert(dir.clone());
    }
    Ok(())
}

/// Removes whatever non-directory is at `path` so nothing is written through it.
fn clear_path(ctx: &Ctx<'_>, path: &VPath) -> Result<Option<Node>, VfsError> {
    match ctx.fs.stat(path, false) {
        Ok(node) if node.is_dir() => Ok(Some(node)),
        Ok(_) => ctx.fs.remove(path, false).map(|()| None),
        Err(_) => Ok(None),
    }
}

/// Extracts one member; returns a directory's path so its mtime is set last.
fn extract_member(
    ctx: &mut Ctx<'_>,
    args: &TarArgs,
    state: &mut TarState,
    dest: &VPath,
    m: &Member,
) -> Result<Option<VPath>, Abort> {
    if args.to_stdout {
        if m.kind == MemberKind::File {
            ctx.stdout.write(&m.data)?;
        }
        return Ok(None);
    }
    let Some(relative) = safe_name(ctx, args, state, &m.name)? else {
        return Ok(None);
    };
    if args.verbose {
        ctx.stdout
            .write_str(&format!("{}\n", m.name.trim_start_matches('/')))?;
    }
    if relative.is_empty() {
        return Ok(None);
    }
    let path = match VPath::parse_from(&relative, dest) {
        Ok(path) if path.starts_with(dest) && path != *dest => path,
        Ok(_) => {
            state.fail(
                ctx,
                &format!("{}: Member name escapes the destination", m.name),
            )?;
            return Ok(None);
        }
        Err(error) => {
            state.fail(
                ctx,
                &format!("{}: Cannot open: {}", m.name, strerror(&error)),
            )?;
            return Ok(None);
        }
    };
    if let Err(message) = prepare_parents(ctx, state, dest, &path) {
        state.fail(ctx, &format!("{}: {message}", m.name))?;
        return Ok(None);
    }
    let made = match m.kind {
        MemberKind::Dir => make_dir(ctx, &path, m.mode).map(|()| {
            state.dirs.insert(path.clone());
            Some(path.clone())
        }),
        MemberKind::File => write_member(ctx, &path, m)?.map(|()| None),
        MemberKind::Symlink => clear_path(ctx, &path)
            .and_then(|_| ctx.fs.symlink(&m.link, &path))
            .map(|()| None),
        MemberKind::HardLink => hard_link(ctx, args, dest, &path, &m.link).map(|()| None),
        MemberKind::Other => {
            ctx.error(
                "tar",
                &format!("{}: Unsupported member type; skipped", m.name),
            )?;
            return Ok(None);
        }
    };
    match made {
        Ok(dir) => Ok(dir),
        Err(error) => {
            state.fail(
                ctx,
                &format!("{}: Cannot open: {}", m.name, strerror(&error)),
            )?;
            Ok(None)
        }
    }
}

fn make_dir(ctx: &Ctx<'_>, path: &VPath, mode: u32) -> Result<(), VfsError> {
    if clear_path(ctx, path)?.is_none() {
        ctx.fs.mkdir(path, false)?;
    }
    ctx.fs.chmod(path, mode & 0o1777)
}

fn write_member(
    ctx: &mut Ctx<'_>,
    path: &VPath,
    m: &Member,
) -> Result<Result<(), VfsError>, Abort> {
    match clear_path(ctx, path) {
        Ok(Some(_)) => {
            return Ok(Err(VfsError::IsADirectory {
                path: path.to_string(),
            }))
        }
        Ok(None) => {}
        Err(error) => return Ok(Err(error)),
    }
    ctx.budget.charge_write(m.data.len() as u64)?;
    Ok(ctx
        .fs
        .write_stamped(path, &m.data, m.mode & 0o1777, m.mtime_ms))
}

/// A hard link member becomes a copy of its (already extracted) target,
/// which must itself be a safe name reached without symlinks.
fn hard_link(
    ctx: &Ctx<'_>,
    args: &TarArgs,
    dest: &VPath,
    path: &VPath,
    link: &str,
) -> Result<(), VfsError> {
    let refuse = || VfsError::InvalidPath {
        path: link.to_string(),
        reason: "unsafe hard link target",
    };
    let parts: Vec<&str> = link
        .trim_start_matches('/')
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") || parts.len() <= args.strip {
        return Err(refuse());
    }
    let source = VPath::parse_from(&parts[args.strip..].join("/"), dest)?;
    let mut dir = dest.clone();
    for part in source.strip_prefix(dest).ok_or_else(refuse)?.split('/') {
        dir = dir.join(part);
        if ctx.fs.stat(&dir, false)?.kind == Kind::Symlink {
            return Err(refuse());
        }
    }
    clear_path(ctx, path)?;
    ctx.fs.copy(&source, path, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::utils::testing::{db, files, run};
    use stead_vfs::Vfs;

    fn read(db: &stead_sql::SqliteDb, path: &str) -> Vec<u8> {
        Vfs::new(db, 0)
            .read_file(&VPath::parse(path).unwrap())
            .unwrap()
    }

    fn put(db: &stead_sql::SqliteDb, path: &str, data: &[u8]) {
        Vfs::new(db, 0)
            .write(&VPath::parse(path).unwrap(), data, Default::default())
            .unwrap();
    }

    fn member(name: &str, kind: MemberKind, link: &str, data: &[u8]) -> Member {
        Member {
            name: name.into(),
            kind,
            mode: 0o644,
            mtime_ms: 1_000_000,
            link: link.into(),
            data: data.to_vec(),
        }
    }

    fn archive(members: &[Member]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in members {
            put_member(&mut out, m);
        }
        finish(out)
    }

    #[test]
    fn round_trip_keeps_content_modes_and_links() {
        let db = db();
        files(
            &db,
            &[
                ("/src/a.txt", "alpha\n"),
                ("/src/sub/run.sh", "#!/bin/sh\n"),
            ],
        );
        run(&db, &["chmod", "755", "/src/sub/run.sh"], "");
        run(&db, &["ln", "-s", "../a.txt", "/src/sub/link"], "");
        run(&db, &["touch", "-d", "@1600000000", "/src/a.txt"], "");
        let r = run(&db, &["tar", "-czf", "/out.tgz", "-C", "/", "src"], "");
        assert_eq!((r.status, r.stderr.as_str()), (0, ""));
        let r = run(&db, &["tar", "-tzf", "/out.tgz"], "");
        assert_eq!(
            r.stdout,
            "src/\nsrc/a.txt\nsrc/sub/\nsrc/sub/link\nsrc/sub/run.sh\n"
        );
        run(&db, &["mkdir", "/dst"], "");
        let r = run(&db, &["tar", "xzf", "/out.tgz", "-C", "/dst"], "");
        assert_eq!((r.status, r.stderr.as_str()), (0, ""));
        assert_eq!(
            run(&db, &["cat", "/dst/src/sub/link"], "").stdout,
            "alpha\n"
        );
        assert_eq!(
            run(&db, &["readlink", "/dst/src/sub/link"], "").stdout,
            "../a.txt\n"
        );
        let r = run(
            &db,
            &[
                "stat",
                "-c",
                "%a %Y",
                "/dst/src/sub/run.sh",
                "/dst/src/a.txt",
            ],
            "",
        );
        assert_eq!(r.stdout, "755 1700000000\n644 1600000000\n");
        assert_eq!(read(&db, "/dst/src/sub/run.sh"), b"#!/bin/sh\n");
    }

    #[test]
    fn lists_verbose_like_gnu() {
        let db = db();
        files(&db, &[("/hello.txt", "hi\n")]);
        run(&db, &["tar", "-cf", "/a.tar", "hello.txt"], "");
        let r = run(&db, &["tar", "-tvf", "/a.tar"], "");
        assert_eq!(
            r.stdout,
            "-rw-r--r-- agent/agent       3 2023-11-14 22:13 hello.txt\n"
        );
        assert_eq!(read(&db, "/a.tar").len() % RECORD, 0);
    }

    #[test]
    fn refuses_dot_dot_and_strips_absolute_names() {
        let db = db();
        let data = archive(&[
            member("../evil", MemberKind::File, "", b"x"),
            member("a/../../evil2", MemberKind::File, "", b"x"),
            member("/abs.txt", MemberKind::File, "", b"abs"),
            member("ok", MemberKind::File, "", b"ok"),
        ]);
        put(&db, "/in/x.tar", &data);
        run(&db, &["mkdir", "/out"], "");
        let r = run(&db, &["tar", "-xf", "/in/x.tar", "-C", "/out"], "");
        assert_eq!(r.status, 2);
        assert!(r
            .stderr
            .contains("tar: ../evil: Member name contains '..'\n"));
        assert!(r
            .stderr
            .contains("tar: a/../../evil2: Member name contains '..'\n"));
        assert!(r.stderr.contains("Removing leading `/' from member names"));
        assert_eq!(run(&db, &["ls", "/"], "").stdout, "in\nout\n");
        assert_eq!(run(&db, &["ls", "/out"], "").stdout, "abs.txt\nok\n");
    }

    #[test]
    fn never_writes_through_planted_symlinks() {
        let db = db();
        files(&db, &[("/secret/passwd", "root"), ("/victim", "keep")]);
        let data = archive(&[
            member("link", MemberKind::Symlink, "/secret", b""),
            member("link/passwd", MemberKind::File, "", b"owned"),
            member("file", MemberKind::Symlink, "/victim", b""),
            member("file", MemberKind::File, "", b"new"),
            member("hl", MemberKind::HardLink, "link/passwd", b""),
        ]);
        put(&db, "/x.tar", &data);
        run(&db, &["mkdir", "/out"], "");
        let r = run(&db, &["tar", "-xf", "/x.tar", "-C", "/out"], "");
        assert_eq!(r.status, 2);
        assert!(r
            .stderr
            .contains("link/passwd: Cannot extract through symbolic link 'link'"));
        assert_eq!(read(&db, "/secret/passwd"), b"root");
        assert_eq!(read(&db, "/victim"), b"keep");
        assert_eq!(read(&db, "/out/file"), b"new");
        assert!(run(&db, &["ls", "/out/hl"], "").status != 0);
        assert_eq!(run(&db, &["readlink", "/out/link"], "").stdout, "/secret\n");
    }

    #[test]
    fn long_names_and_bad_archives() {
        let long = format!("{}/{}", "d".repeat(120), "f".repeat(90));
        let longer = format!("{}é", "x".repeat(99));
        let data = archive(&[
            member(&long, MemberKind::File, "", b"1"),
            member(&longer, MemberKind::File, "", b"2"),
        ]);
        let members = parse(&data).unwrap();
        assert_eq!(members[0].name, long);
        assert_eq!(members[1].name, longer);
        assert_eq!(members[1].data, b"2");
        assert_eq!(parse(&[1u8; 1024]).unwrap_err(), ReadError::NotTar);
        assert_eq!(parse(&data[..700]).unwrap_err(), ReadError::Truncated);
        let db = db();
        files(&db, &[("/junk.tar", "not an archive at all")]);
        let r = run(&db, &["tar", "-tf", "/junk.tar"], "");
        assert_eq!(r.status, 2);
    }

    /// An extended header (`x` or `g`) with `records`, as an archive part.
    fn pax_header(flag: u8, records: &[(&str, &str)]) -> Vec<u8> {
        let body: String = records.iter().map(|(k, v)| pax_record(k, v)).collect();
        let mut out = header("PaxHeaders/x", "", flag, 0o644, body.len() as u64, 0, "").to_vec();
        put_data(&mut out, body.as_bytes());
        out
    }

    #[test]
    fn pax_records_count_their_own_length() {
        assert_eq!(pax_record("path", "a"), "9 path=a\n");
        assert_eq!(pax_record("mtime", ""), "9 mtime=\n");
        // 98 bytes and 2 digits make 100, which has 3 digits: 101.
        let record = pax_record("path", &"x".repeat(91));
        assert_eq!(record.len(), 101);
        assert!(record.starts_with("101 "));
        assert_eq!(pax_time(1_700_000_000_500), "1700000000.5");
        assert_eq!(pax_time(-1250), "-1.25");
        assert_eq!(
            parse_pax_time("1700000000.123456789"),
            Some(1_700_000_000_123)
        );
        assert_eq!(parse_pax_time("-1.5"), Some(-1500));
        assert_eq!(parse_pax_time("12"), Some(12_000));
        assert_eq!(parse_pax_time("1e9"), None);
    }

    /// POSIX.1-2001: `x` records are the next member's, `g` records every
    /// later member's, an empty value deletes; `size` says how long the
    /// member's data is. The ustar fields say otherwise throughout.
    #[test]
    fn pax_headers_override_the_ustar_fields() {
        let ustar = |name: &str, data: &[u8]| {
            let mut out = Vec::new();
            let mut m = member(name, MemberKind::File, "", data);
            m.mtime_ms = 0;
            put_member(&mut out, &m);
            out
        };
        let mut data = pax_header(b'g', &[("mtime", "1600000000.25"), ("comment", "hi")]);
        data.extend(pax_header(
            b'x',
            &[
                ("path", "real/name.txt"),
                ("mtime", "1700000000.123456789"),
                ("uid", "0"),
            ],
        ));
        data.extend(ustar("short", b"one"));
        data.extend(ustar("global-time", b"two"));
        data.extend(pax_header(b'x', &[("mtime", "")]));
        data.extend(ustar("header-time", b"three"));
        // A member whose real size is 5, though its header says 3.
        data.extend(pax_header(b'x', &[("size", "5")]));
        let mut sized = header("sized", "", b'0', 0o644, 3, 0, "").to_vec();
        put_data(&mut sized, b"12345");
        data.extend(sized);
        data.extend(pax_header(b'g', &[("mtime", "")]));
        data.extend(ustar("after", b"four"));
        let members = parse(&finish(data)).unwrap();
        let got: Vec<(&str, i64, &[u8])> = members
            .iter()
            .map(|m| (m.name.as_str(), m.mtime_ms, m.data.as_slice()))
            .collect();
        assert_eq!(
            got,
            [
                ("real/name.txt", 1_700_000_000_123, &b"one"[..]),
                ("global-time", 1_600_000_000_250, b"two"),
                ("header-time", 0, b"three"),
                ("sized", 1_600_000_000_250, b"12345"),
                ("after", 0, b"four"),
            ]
        );
    }

    #[test]
    fn writes_pax_records_only_where_ustar_cannot_hold_the_value() {
        let long = "n".repeat(150);
        let target = "t".repeat(120);
        let mut exact = member("exact", MemberKind::File, "", b"1");
        exact.mtime_ms = 1_700_000_000_000;
        let mut fine = member(&long, MemberKind::Symlink, &target, b"");
        fine.mtime_ms = 1_700_000_000_123;
        let mut old = member("old", MemberKind::File, "", b"2");
        old.mtime_ms = -86_400_000;
        let data = archive(&[exact.clone(), fine.clone(), old.clone()]);
        let text = String::from_utf8_lossy(&data);
        assert!(text.contains(&format!("path={long}\n")));
        assert!(text.contains(&format!("linkpath={target}\n")));
        assert!(text.contains("mtime=1700000000.123\n"));
        assert!(text.contains("mtime=-86400\n"));
        assert_eq!(text.matches("PaxHeaders/").count(), 2);
        let members = parse(&data).unwrap();
        for (got, want) in members.iter().zip([&exact, &fine, &old]) {
            assert_eq!(
                (&got.name, &got.link, got.mtime_ms),
                (&want.name, &want.link, want.mtime_ms)
            );
        }
    }

    #[test]
    fn reads_gnu_tar_output() {
        // `printf 'hi\n' > hello.txt; tar --owner=0 --group=0 --mtime=@0 -cf - hello.txt | head -c 512 | sha...`
        // rebuilt here from the fields GNU writes, checked by our parser.
        let mut h = [0u8; BLOCK];
        put_str(&mut h[0..100], "hello.txt");
        h[100..108].copy_from_slice(b"0000644\0");
        h[108..116].copy_from_slice(b"0000000\0");
        h[116..124].copy_from_slice(b"0000000\0");
        h[124..136].copy_from_slice(b"00000000003\0");
        h[136..148].copy_from_slice(b"00000000000\0");
        h[156] = b'0';
        h[257..265].copy_from_slice(b"ustar  \0");
        let sum = checksum(&h);
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        let mut data = h.to_vec();
        put_data(&mut data, b"hi\n");
        let members = parse(&finish(data)).unwrap();
        assert_eq!(
            (members[0].name.as_str(), members[0].data.as_slice()),
            ("hello.txt", &b"hi\n"[..])
        );
    }

    #[test]
    fn selects_members_strips_components_and_streams() {
        let db = db();
        files(&db, &[("/p/a/x", "X"), ("/p/a/y", "Y"), ("/p/b", "B")]);
        run(&db, &["tar", "-cf", "/t.tar", "-C", "/p", "a", "b"], "");
        let r = run(&db, &["tar", "-xOf", "/t.tar", "a/y"], "");
        assert_eq!(r.stdout, "Y");
        run(&db, &["mkdir", "/o"], "");
        let r = run(
            &db,
            &[
                "tar",
                "-xvf",
                "/t.tar",
                "-C",
                "/o",
                "--strip-components=1",
                "a",
            ],
            "",
        );
        assert_eq!(r.stdout, "a/x\na/y\n");
        assert_eq!(run(&db, &["ls", "/o"], "").stdout, "x\ny\n");
        let r = run(&db, &["tar", "-tf", "/t.tar", "nope"], "");
        assert_eq!(r.status, 2);
        assert!(r.stderr.starts_with("tar: nope: Not found in archive\n"));
        let r = run(&db, &["tar", "-tf", "/t.tar", "--wildcards", "*/y"], "");
        assert_eq!(r.stdout, "a/y\n");
        let r = run(&db, &["tar", "-tf", "/t.tar", "--exclude=a"], "");
        assert_eq!(r.stdout, "b\n");
        let r = run(&db, &["tar", "-f", "/t.tar"], "");
        assert_eq!(r.status, 2);
    }
}
