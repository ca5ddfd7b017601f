//! The file tools: one JSON route each, decoded strictly, answered in JSON.
//!
//! Requests reject unknown fields, so a misspelt option is an error instead
//! of being silently ignored. Paths are validated by [`VPath::parse`] before
//! anything is touched.

use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stead_sql::Sql;
use stead_vfs::{
    edit::Replacement,
    glob::{self, GlobRequest},
    grep::{self, GrepCursor, GrepMode, GrepRequest},
    read::{LineRequest, DEFAULT_BYTE_LIMIT, DEFAULT_LINE_LIMIT},
    ChangeCursor, VPath, Vfs, VfsError, WriteOptions,
};

use crate::decode::{decode_value, within, Cursor};
use crate::error::ApiError;
use crate::route::Tool;

/// Largest page of `ls` entries.
const MAX_LS_LIMIT: usize = 10_000;

/// Cursor kinds of the listings that page.
const LS_CURSOR: &str = "ls1";
const GLOB_CURSOR: &str = "glob1";

/// Runs `tool` with JSON request `body`.
/// Whether a call of `tool` with `body` can change the workspace: a tool
/// that mutates, unless the call is a dry run (`edit` and `apply_patch`
/// with `"dry_run": true` only show what they would do), which takes no
/// checkpoint and makes no revision.
pub fn writes(tool: Tool, body: &Value) -> bool {
    tool.mutates() && !dry_run(body)
}

/// Whether `body` asks for a dry run.
pub fn dry_run(body: &Value) -> bool {
    body.get("dry_run") == Some(&Value::Bool(true))
}

/// Runs `tool` on its request, parsed once by the dispatch
/// ([`crate::decode::parse`]).
pub fn call<S: Sql>(vfs: &Vfs<'_, S>, tool: Tool, body: &Value) -> Result<Value, ApiError> {
    match tool {
        Tool::Read => read(vfs, decode_value(body)?),
        Tool::Write => write(vfs, decode_value(body)?, false),
        Tool::Append => write(vfs, decode_value(body)?, true),
        Tool::Edit => edit(vfs, decode_value(body)?),
        Tool::ApplyPatch => apply_patch(vfs, decode_value(body)?),
        Tool::Stat => stat(vfs, decode_value(body)?),
        Tool::Ls => ls(vfs, decode_value(body)?),
        Tool::Mkdir => mkdir(vfs, decode_value(body)?),
        Tool::Rm => rm(vfs, decode_value(body)?),
        Tool::Mv => mv(vfs, decode_value(body)?),
        Tool::Cp => cp(vfs, decode_value(body)?),
        Tool::Symlink => symlink(vfs, decode_value(body)?),
        Tool::Readlink => readlink(vfs, decode_value(body)?),
        Tool::Chmod => chmod(vfs, decode_value(body)?),
        Tool::Glob => glob(vfs, decode_value(body)?),
        Tool::Grep => grep(vfs, decode_value(body)?),
        Tool::Changes => changes(vfs, decode_value(body)?),
    }
}

fn path(text: &str) -> Result<VPath, ApiError> {
    Ok(VPath::parse(text)?)
}

fn to_json(value: impl Serialize) -> Result<Value, ApiError> {
    serde_json::to_value(value).map_err(|e| ApiError::Internal(e.to_string()))
}

/// Permission bits as an octal string (`"755"`, `"0644"`) or a number.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Mode {
    /// Octal digits, such as `"755"` or `"0644"`.
    Octal(String),
    /// The bits as a number (`493` is `0o755`).
    Bits(u32),
}

impl Mode {
    fn bits(&self) -> Result<u32, ApiError> {
        match self {
            Mode::Bits(bits) => permission_bits(*bits),
            Mode::Octal(text) => parse_octal_mode(text),
        }
    }
}

/// Permission bits written as octal digits, with or without a leading
/// `0` or `0o` (`"755"`, `"0644"`, `"0o755"`): how a tool's `mode` and an
/// upload's `?mode=` are read alike.
pub(crate) fn parse_octal_mode(text: &str) -> Result<u32, ApiError> {
    let digits = text.strip_prefix("0o").unwrap_or(text);
    let bits = u32::from_str_radix(digits, 8)
        .ok()
        .filter(|_| !digits.starts_with(['+', '-']))
        .ok_or_else(|| {
            ApiError::InvalidRequest(format!(
                "mode {text:?} is not octal: give digits 0-7, such as \"755\" or \"0o644\""
            ))
        })?;
    permission_bits(bits)
}

/// `bits` when they fit in `07777` (permissions, setuid, setgid, sticky).
fn permission_bits(bits: u32) -> Result<u32, ApiError> {
    if bits > 0o7777 {
        return Err(ApiError::InvalidRequest(format!(
            "mode {bits:o} has bits beyond 07777"
        )));
    }
    Ok(bits)
}

fn mode_bits(mode: &Option<Mode>) -> Result<Option<u32>, ApiError> {
    mode.as_ref().map(Mode::bits).transpose()
}

#[derive(Debug, Clone, Copy, Deserialize, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Encoding {
    /// Text.
    #[default]
    Utf8,
    /// Base64 of the bytes.
    Base64,
}

impl Encoding {
    fn decode(self, content: String) -> Result<Vec<u8>, ApiError> {
        match self {
            Encoding::Utf8 => Ok(content.into_bytes()),
            Encoding::Base64 => base64::engine::general_purpose::STANDARD
                .decode(content)
                .map_err(|e| ApiError::InvalidRequest(format!("content is not valid base64: {e}"))),
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadReq {
    /// Absolute path of the file, such as `/src/main.rs`.
    path: String,
    /// First line to read, 1-based (default 1).
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    /// Lines to read, at most 2000 (the default).
    #[schemars(range(min = 1, max = DEFAULT_LINE_LIMIT))]
    limit: Option<u64>,
    /// Prefix each line with its number and a tab, as `cat -n` does.
    #[serde(default)]
    line_numbers: bool,
    /// Read bytes instead of lines, from this offset (use either lines or
    /// bytes).
    byte_offset: Option<u64>,
    /// Bytes to read, at most 256 KiB (the default).
    #[schemars(range(min = 1, max = DEFAULT_BYTE_LIMIT))]
    byte_length: Option<u64>,
    /// For byte reads: `base64` returns the bytes exactly; `utf8` fails on
    /// bytes that are not text (default: text when it is, else base64).
    encoding: Option<Encoding>,
}

fn read<S: Sql>(vfs: &Vfs<'_, S>, req: ReadReq) -> Result<Value, ApiError> {
    let p = path(&req.path)?;
    if req.byte_offset.is_some() || req.byte_length.is_some() {
        if req.offset.is_some() || req.limit.is_some() || req.line_numbers {
            return Err(ApiError::InvalidRequest(
                "use either lines (offset, limit, line_numbers) or bytes (byte_offset, byte_length)".into(),
            ));
        }
        let offset = req.byte_offset.unwrap_or(0);
        let length = within(
            "byte_length",
            req.byte_length.unwrap_or(DEFAULT_BYTE_LIMIT as u64),
            1,
            DEFAULT_BYTE_LIMIT as u64,
        )?;
        let (node, bytes) = vfs.read_range(&p, offset, length)?;
        let end = offset + bytes.len() as u64;
        let (content, encoding) = match (req.encoding, std::str::from_utf8(&bytes)) {
            (Some(Encoding::Base64), _) | (None, Err(_)) => (
                base64::engine::general_purpose::STANDARD.encode(&bytes),
                "base64",
            ),
            (_, Ok(text)) => (text.to_string(), "utf8"),
            (Some(Encoding::Utf8), Err(_)) => {
                return Err(VfsError::Edit {
                    path: req.path,
                    source: stead_vfs::edit::EditError::NotText,
                }
                .into())
            }
        };
        let mut out = json!({
            "path": p.as_str(), "size": node.size, "byte_offset": offset,
            "bytes": bytes.len(), "content": content, "encoding": encoding, "eof": end >= node.size,
        });
        if end < node.size {
            out["next_byte_offset"] = json!(end);
        }
        return Ok(out);
    }
    if req.encoding.is_some() {
        return Err(ApiError::InvalidRequest(
            "encoding applies to byte reads only".into(),
        ));
    }
    let lines = vfs.read_lines(
        &p,
        LineRequest {
            offset: within("offset", req.offset.unwrap_or(1), 1, u64::MAX)?,
            limit: within(
                "limit",
                req.limit.unwrap_or(DEFAULT_LINE_LIMIT),
                1,
                DEFAULT_LINE_LIMIT,
            )?,
            max_bytes: DEFAULT_BYTE_LIMIT,
            line_numbers: req.line_numbers,
        },
    )?;
    let binary = lines.binary;
    let mut out = to_json(lines)?;
    out["path"] = json!(p.as_str());
    if binary {
        // A binary file has no lines: say how to get its bytes.
        out["hint"] = json!(format!(
            "{p} looks binary, so it has no lines to show: read its bytes with byte_offset \
             (and byte_length, at most {DEFAULT_BYTE_LIMIT} per call; they come base64), or \
             download it whole with GET /agents/{{id}}/files{p}"
        ));
    }
    Ok(out)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteReq {
    /// Absolute path of the file to create or replace.
    path: String,
    /// The whole new content of the file.
    content: String,
    /// How `content` is written: `utf8` text (default) or `base64` bytes.
    #[serde(default)]
    encoding: Encoding,
    /// Permission bits of the file.
    mode: Option<Mode>,
    /// Create missing parent directories (default true).
    parents: Option<bool>,
    /// Write only if the file is still at this revision (its `rev` from
    /// `stat`, or the `X-Revision` of its download); `0`: only if it does
    /// not exist. Otherwise nothing is written and the answer is `412
    /// REVISION_CHANGED` with the file's current revision.
    if_rev: Option<i64>,
}

fn write<S: Sql>(vfs: &Vfs<'_, S>, req: WriteReq, append: bool) -> Result<Value, ApiError> {
    let p = path(&req.path)?;
    if let Some(expected) = req.if_rev {
        let actual = match vfs.stat(&p, true) {
            Ok((_, node)) => node.rev,
            Err(error) if error.code() == stead_vfs::Errno::Enoent => 0,
            Err(error) => return Err(error.into()),
        };
        if actual != expected {
            return Err(ApiError::RevisionChanged {
                path: p.as_str().to_string(),
                expected,
                actual,
            });
        }
    }
    let options = WriteOptions {
        mode: mode_bits(&req.mode)?,
        create_parents: req.parents.unwrap_or(true),
    };
    let data = req.encoding.decode(req.content)?;
    let written = if append {
        vfs.append(&p, &data, options)?
    } else {
        vfs.write(&p, &data, options)?
    };
    to_json(written)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditReq {
    /// Absolute path of the file to edit.
    path: String,
    /// Replacements, applied together: all of them or none.
    edits: Vec<Replacement>,
    /// Show the diff without changing the file.
    #[serde(default)]
    dry_run: bool,
}

fn edit<S: Sql>(vfs: &Vfs<'_, S>, req: EditReq) -> Result<Value, ApiError> {
    to_json(vfs.edit(&path(&req.path)?, &req.edits, req.dry_run)?)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyPatchReq {
    /// A V4A patch (`*** Begin Patch` ... `*** End Patch`) or a unified
    /// diff (`diff -u`, `git diff`).
    patch: String,
    /// Where relative paths in the patch start (default `/`).
    #[serde(default = "root")]
    base: String,
    /// Check the patch and show the diff without changing any file.
    #[serde(default)]
    dry_run: bool,
}

fn apply_patch<S: Sql>(vfs: &Vfs<'_, S>, req: ApplyPatchReq) -> Result<Value, ApiError> {
    let base = path(&req.base)?;
    let outcome = vfs.apply_patch(&req.patch, &base, req.dry_run)?;
    let mut answer = to_json(&outcome)?;
    answer["summary"] = json!(outcome.summary(Some(&base)));
    Ok(answer)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathReq {
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatReq {
    path: String,
    /// Follow a final symlink (default true).
    follow: Option<bool>,
}

fn stat<S: Sql>(vfs: &Vfs<'_, S>, req: StatReq) -> Result<Value, ApiError> {
    let p = path(&req.path)?;
    let (real, node) = vfs.stat(&p, req.follow.unwrap_or(true))?;
    let mut out = to_json(node)?;
    out["path"] = json!(p.as_str());
    out["real_path"] = json!(real.as_str());
    Ok(out)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LsReq {
    /// Directory to list (default `/`).
    #[serde(default = "root")]
    path: String,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Entries per page, at most 10,000 (default 1000).
    #[schemars(range(min = 1, max = MAX_LS_LIMIT))]
    limit: Option<usize>,
}

fn root() -> String {
    "/".to_string()
}

fn ls<S: Sql>(vfs: &Vfs<'_, S>, req: LsReq) -> Result<Value, ApiError> {
    let p = path(&req.path)?;
    let limit = within("limit", req.limit.unwrap_or(1000), 1, MAX_LS_LIMIT)?;
    let after = req
        .cursor
        .as_deref()
        .map(|cursor| Cursor::decode(LS_CURSOR, cursor))
        .transpose()?;
    let mut entries = vfs.list(&p, after.as_deref(), limit + 1)?;
    let truncated = entries.len() > limit;
    entries.truncate(limit);
    let next_cursor = truncated
        .then(|| entries.last().map(|e| Cursor::encode(LS_CURSOR, &e.name)))
        .flatten();
    Ok(json!({
        "path": p.as_str(), "entries": entries, "truncated": truncated, "next_cursor": next_cursor,
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MkdirReq {
    path: String,
    #[serde(default)]
    parents: bool,
    mode: Option<Mode>,
}

fn mkdir<S: Sql>(vfs: &Vfs<'_, S>, req: MkdirReq) -> Result<Value, ApiError> {
    let p = path(&req.path)?;
    let revision = vfs.mkdir(&p, req.parents, mode_bits(&req.mode)?)?;
    Ok(json!({ "path": p.as_str(), "revision": revision }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RmReq {
    path: String,
    #[serde(default)]
    recursive: bool,
    /// A missing path is not an error.
    #[serde(default)]
    force: bool,
}

fn rm<S: Sql>(vfs: &Vfs<'_, S>, req: RmReq) -> Result<Value, ApiError> {
    let p = path(&req.path)?;
    match vfs.remove(&p, req.recursive) {
        Ok(revision) => Ok(json!({ "path": p.as_str(), "removed": true, "revision": revision })),
        Err(VfsError::NotFound { .. }) if req.force => {
            Ok(json!({ "path": p.as_str(), "removed": false }))
        }
        Err(error) => Err(error.into()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MoveReq {
    from: String,
    to: String,
    #[serde(default)]
    recursive: bool,
}

fn mv<S: Sql>(vfs: &Vfs<'_, S>, req: MoveReq) -> Result<Value, ApiError> {
    if req.recursive {
        return Err(ApiError::InvalidRequest(
            "mv always moves whole subtrees; drop `recursive`".into(),
        ));
    }
    let (from, to) = (path(&req.from)?, path(&req.to)?);
    let revision = vfs.rename(&from, &to)?;
    Ok(json!({ "from": from.as_str(), "to": to.as_str(), "revision": revision }))
}

fn cp<S: Sql>(vfs: &Vfs<'_, S>, req: MoveReq) -> Result<Value, ApiError> {
    let (from, to) = (path(&req.from)?, path(&req.to)?);
    let revision = vfs.copy(&from, &to, req.recursive)?;
    Ok(json!({ "from": from.as_str(), "to": to.as_str(), "revision": revision }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SymlinkReq {
    target: String,
    path: String,
}

fn symlink<S: Sql>(vfs: &Vfs<'_, S>, req: SymlinkReq) -> Result<Value, ApiError> {
    let p = path(&req.path)?;
    let revision = vfs.symlink(&req.target, &p)?;
    Ok(json!({ "path": p.as_str(), "target": req.target, "revision": revision }))
}

fn readlink<S: Sql>(vfs: &Vfs<'_, S>, req: PathReq) -> Result<Value, ApiError> {
    let p = path(&req.path)?;
    let target = vfs.readlink(&p)?;
    Ok(json!({ "path": p.as_str(), "target": target }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChmodReq {
    path: String,
    mode: Mode,
}

fn chmod<S: Sql>(vfs: &Vfs<'_, S>, req: ChmodReq) -> Result<Value, ApiError> {
    let p = path(&req.path)?;
    let bits = req.mode.bits()?;
    let revision = vfs.chmod(&p, bits)?;
    Ok(json!({ "path": p.as_str(), "mode": format!("{bits:04o}"), "revision": revision }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GlobReq {
    /// Pattern relative to `path`: `*` and `?` within a name, `**` across
    /// directories, `[...]`, `{a,b}`; for example `**/*.rs`.
    pattern: String,
    /// Directory the pattern starts from (default `/`).
    #[serde(default = "root")]
    path: String,
    /// Paths to leave out with everything below them; a pattern without `/`
    /// matches names anywhere, as in `.gitignore`.
    #[serde(default)]
    exclude: Vec<String>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Matches per page (default 1000, at most 10,000).
    #[schemars(range(min = 1, max = glob::MAX_LIMIT))]
    limit: Option<usize>,
}

fn glob<S: Sql>(vfs: &Vfs<'_, S>, req: GlobReq) -> Result<Value, ApiError> {
    let after = req
        .cursor
        .as_deref()
        .map(|cursor| Cursor::decode(GLOB_CURSOR, cursor).and_then(|p| path(&p)))
        .transpose()?;
    let mut page = vfs.glob(&GlobRequest {
        pattern: req.pattern,
        base: path(&req.path)?,
        exclude: req.exclude,
        after,
        limit: within(
            "limit",
            req.limit.unwrap_or(glob::DEFAULT_LIMIT),
            1,
            glob::MAX_LIMIT,
        )?,
    })?;
    page.next_cursor = page
        .next_cursor
        .map(|position| Cursor::encode(GLOB_CURSOR, &position));
    to_json(page)
}

/// One glob or several.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum OneOrMany {
    /// One pattern.
    One(String),
    /// Several patterns.
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        }
    }
}

#[derive(Deserialize, Default, Clone, Copy, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GrepOutput {
    /// Matching lines with their context.
    #[default]
    Content,
    /// Only the paths of files that match.
    Files,
    /// Matching lines per file.
    Count,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrepReq {
    /// Text to search for (a regular expression with `regex`).
    #[schemars(length(min = 1))]
    pattern: String,
    /// File or directory to search (default `/`, the whole workspace).
    #[serde(default = "root")]
    path: String,
    /// Read `pattern` as a regular expression (Rust `regex` syntax).
    #[serde(default)]
    regex: bool,
    /// Match case-insensitively.
    #[serde(default)]
    ignore_case: bool,
    /// Only search files whose names match these globs (`*.rs`).
    include: Option<OneOrMany>,
    /// Skip files and directories matching these globs.
    exclude: Option<OneOrMany>,
    /// Lines of context on both sides; `before`/`after` override it per side.
    #[schemars(range(max = grep::MAX_CONTEXT))]
    context: Option<usize>,
    /// Lines of context before each match.
    #[schemars(range(max = grep::MAX_CONTEXT))]
    before: Option<usize>,
    /// Lines of context after each match.
    #[schemars(range(max = grep::MAX_CONTEXT))]
    after: Option<usize>,
    /// What to return for each match.
    #[serde(default)]
    output: GrepOutput,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Results per page.
    #[schemars(range(min = 1, max = grep::MAX_LIMIT))]
    limit: Option<usize>,
}

fn grep<S: Sql>(vfs: &Vfs<'_, S>, req: GrepReq) -> Result<Value, ApiError> {
    if req.pattern.is_empty() {
        return Err(ApiError::InvalidRequest("pattern must not be empty".into()));
    }
    let lines = |field: &str, value: Option<usize>| {
        value
            .map(|n| within(field, n, 0, grep::MAX_CONTEXT))
            .transpose()
    };
    let context = lines("context", req.context)?.unwrap_or(0);
    let page = vfs.grep(&GrepRequest {
        pattern: req.pattern,
        regex: req.regex,
        ignore_case: req.ignore_case,
        base: path(&req.path)?,
        include: req.include.map(OneOrMany::into_vec).unwrap_or_default(),
        exclude: req.exclude.map(OneOrMany::into_vec).unwrap_or_default(),
        before: lines("before", req.before)?.unwrap_or(context),
        after: lines("after", req.after)?.unwrap_or(context),
        mode: match req.output {
            GrepOutput::Content => GrepMode::Content,
            GrepOutput::Files => GrepMode::Files,
            GrepOutput::Count => GrepMode::Count,
        },
        cursor: req.cursor.as_deref().map(GrepCursor::parse).transpose()?,
        limit: within(
            "limit",
            req.limit.unwrap_or(grep::DEFAULT_LIMIT),
            1,
            grep::MAX_LIMIT,
        )?,
    })?;
    to_json(page)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangesReq {
    #[serde(default)]
    since: i64,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
    limit: Option<usize>,
}

/// Most changes one page holds.
const MAX_CHANGES_LIMIT: usize = 10_000;

fn changes<S: Sql>(vfs: &Vfs<'_, S>, req: ChangesReq) -> Result<Value, ApiError> {
    let limit = within("limit", req.limit.unwrap_or(1000), 1, MAX_CHANGES_LIMIT)?;
    let revision = vfs.revision()?;
    let after = req.cursor.as_deref().map(ChangeCursor::parse).transpose()?;
    let page = vfs
        .changes_page(req.since, after, limit)?
        .ok_or(ApiError::ChangesPruned { since: req.since })?;
    Ok(json!({
        "revision": revision,
        "changes": page.changes,
        "next_cursor": page.next.map(|cursor| cursor.to_string()),
    }))
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
