//! `grep`: search file contents on a linear-time regex engine, paged.
//!
//! Files are searched a chunk at a time, cut at the last newline so no line
//! straddles two pieces. Most pieces contain no match, and for those one
//! whole-piece `is_match` (literal-accelerated by the `regex` crate) and a
//! newline count are all the work; only pieces that match are walked line by
//! line. Memory stays at one chunk plus the context lines kept.
//!
//! Results come in depth-first path order, then line order, so pages are
//! deterministic; a page ends at a cursor naming the last file and line.
//! Files that look binary (a NUL byte near the start) are skipped and
//! counted, as ripgrep does when searching a tree.

use std::collections::VecDeque;

use regex::bytes::{Regex, RegexBuilder};
use serde::Serialize;
use stead_sql::Sql;

use crate::content::{BATCH_BYTES, BATCH_FILES};
use crate::error::{Result, VfsError};
use crate::glob::patterns;
use crate::node::{Kind, Node};
use crate::path::VPath;
use crate::read::looks_binary;
use crate::search_cost::{SearchCost, MAX_SEARCH_WORK};
use crate::tree::Flow;
use crate::{Vfs, CHUNK_SIZE};

/// Default and largest page: matching lines, or files in the other modes.
pub const DEFAULT_LIMIT: usize = 1000;
pub const MAX_LIMIT: usize = 10_000;
/// Most context lines on either side of a match.
pub const MAX_CONTEXT: usize = 100;
/// Bytes one page reads at most: past them, the page ends before the next
/// file with a cursor, so a search of a large workspace for a rare pattern
/// answers in pieces instead of holding the agent for minutes.
pub const MAX_PAGE_SCAN_BYTES: u64 = 256 << 20;
/// Lines longer than this are cut in results (minified files would otherwise
/// flood an agent's context).
pub const MAX_LINE_BYTES: usize = 1024;
/// Largest compiled size of a regular expression given by a user (here and
/// in the shell's utilities). Matching cannot be interrupted, and its cost
/// grows with the compiled size (`a{1000}{1000}` compiles to a million
/// states, and one search over a large file then runs for minutes), so a
/// larger pattern is refused when given. 2 MiB keeps every ordinary
/// pattern (`\w{40}` included: Unicode classes are large) and refuses
/// counted repetitions nested into the millions.
pub const MAX_REGEX_BYTES: usize = 2 << 20;

/// The reason a pattern past [`MAX_REGEX_BYTES`] is refused.
pub fn regex_too_large() -> String {
    format!(
        "regular expression too large (compiled size over {} MiB)",
        MAX_REGEX_BYTES >> 20
    )
}

/// `error` as a user reads it: a pattern past the bound names the bound.
pub fn regex_error_reason(error: &regex::Error) -> String {
    match error {
        regex::Error::CompiledTooBig(_) => regex_too_large(),
        other => other.to_string(),
    }
}

/// What a search reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GrepMode {
    /// Each matching line, with context.
    #[default]
    Content,
    /// Each file with at least one match.
    Files,
    /// Each file with its number of matching lines.
    Count,
}

/// Where a page ended: after `line` of `path`, or after all of `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepCursor {
    pub path: VPath,
    pub line: Option<u64>,
}

impl GrepCursor {
    /// Parses `LINE:PATH`, or `*:PATH` for a finished file.
    pub fn parse(text: &str) -> Result<Self> {
        let invalid = || VfsError::InvalidPath {
            path: text.to_string(),
            reason: "cursor must be LINE:PATH as returned in next_cursor",
        };
        let (line, path) = text.split_once(':').ok_or_else(invalid)?;
        let line = match line {
            "*" => None,
            digits => Some(digits.parse().map_err(|_| invalid())?),
        };
        Ok(GrepCursor {
            path: VPath::parse(path)?,
            line,
        })
    }

    fn render(&self) -> String {
        match self.line {
            Some(line) => format!("{line}:{}", self.path),
            None => format!("*:{}", self.path),
        }
    }
}

/// A search.
#[derive(Debug, Clone)]
pub struct GrepRequest {
    pub pattern: String,
    /// Treat `pattern` as a regular expression (otherwise a literal string).
    pub regex: bool,
    pub ignore_case: bool,
    /// A file, or a directory to search below.
    pub base: VPath,
    /// Only files matching one of these (a bare name pattern like `*.rs`
    /// matches names; one with `/` matches the path below `base`).
    pub include: Vec<String>,
    /// Files and directories to leave out, same matching as `include`.
    pub exclude: Vec<String>,
    pub before: usize,
    pub after: usize,
    pub mode: GrepMode,
    pub cursor: Option<GrepCursor>,
    pub limit: usize,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrepMatch {
    pub path: String,
    /// 1-based line number.
    pub line: u64,
    pub text: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

/// A file and how many of its lines match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileCount {
    pub path: String,
    pub count: u64,
}

/// A page of results; the field for the request's mode is present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct GrepPage {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<GrepMatch>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<Vec<FileCount>>,
    pub files_searched: u64,
    pub binary_files_skipped: u64,
    /// Whether the page stopped at `limit`; more may follow from `next_cursor`.
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A search the page could not afford: a text of `bytes` that the fast
/// engine gave up on, for a pattern of `states` NFA states.
#[derive(Debug, Clone, Copy)]
struct TooCostly {
    bytes: u64,
    states: u64,
}

fn display(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let cut = &line[..line.len().min(MAX_LINE_BYTES)];
    String::from_utf8_lossy(cut).into_owned()
}

/// Searches one file's pieces for matching lines.
struct Scanner<'r> {
    re: &'r Regex,
    /// What each search will cost (see [`crate::search_cost`]), when the
    /// pattern could be measured.
    cost: Option<&'r SearchCost>,
    /// Slow-engine work left to the page; `Err` once a search needed more.
    work_left: std::result::Result<u64, TooCostly>,
    /// Whether a whole piece may be tested at once: true unless the pattern
    /// anchors to the start or end of the whole text (`\A`, `\z`), where
    /// a piece and a line differ.
    prefilter: bool,
    before: usize,
    after: usize,
    /// Lines up to this one are not reported (resuming mid-file).
    skip_through: u64,
    /// Number of the next line to be scanned.
    line: u64,
    /// The last `before` lines seen, with their numbers.
    ring: VecDeque<(u64, String)>,
    /// Context lines still owed to the last match.
    owed_after: usize,
    /// The last line already shown, as match or context.
    shown_through: u64,
    matches: Vec<GrepMatch>,
    count: u64,
    /// Stop at the first match (files mode).
    first_only: bool,
    /// Most matches to collect (content mode).
    room: usize,
    full: bool,
}

impl<'r> Scanner<'r> {
    fn feed(&mut self, piece: &[u8], path: &VPath) {
        if self.prefilter && self.owed_after == 0 && !self.is_match(piece) {
            self.skim(piece);
            return;
        }
        for line in piece.split_inclusive(|&b| b == b'\n') {
            if self.full || (self.first_only && self.count > 0) || self.work_left.is_err() {
                return;
            }
            self.scan_line(line, path);
        }
    }

    /// Whether `hay` matches, if its search fits in the work left; a search
    /// that does not is not run, and the scan ends.
    fn is_match(&mut self, hay: &[u8]) -> bool {
        let (Some(cost), Ok(left)) = (self.cost, self.work_left) else {
            return self.work_left.is_ok() && self.re.is_match(hay);
        };
        let work = cost.work(hay);
        if work > hay.len() as u64 {
            match left.checked_sub(work) {
                Some(left) => self.work_left = Ok(left),
                None => {
                    self.work_left = Err(TooCostly {
                        bytes: hay.len() as u64,
                        states: cost.states(),
                    });
                    return false;
                }
            }
        }
        self.re.is_match(hay)
    }

    /// Fast path for a piece with no match: count its lines, keep the last few.
    fn skim(&mut self, piece: &[u8]) {
        let body = piece.strip_suffix(b"\n").unwrap_or(piece);
        let total = if piece.is_empty() {
            0
        } else {
            body.iter().filter(|&&b| b == b'\n').count() as u64 + 1
        };
        let first = self.line;
        self.line += total;
        if self.before == 0 || total == 0 {
            return;
        }
        let kept: Vec<&[u8]> = body.rsplit(|&b| b == b'\n').take(self.before).collect();
        for (i, line) in kept.iter().rev().enumerate() {
            let number = first + total - kept.len() as u64 + i as u64;
            self.remember(number, display(line));
        }
    }

    fn remember(&mut self, number: u64, text: String) {
        if self.before == 0 {
            return;
        }
        if self.ring.len() == self.before {
            self.ring.pop_front();
        }
        self.ring.push_back((number, text));
    }

    fn scan_line(&mut self, line: &[u8], path: &VPath) {
        let number = self.line;
        self.line += 1;
        let content = line.strip_suffix(b"\n").unwrap_or(line);
        let reportable = number > self.skip_through;
        if reportable && self.is_match(content) {
            self.count += 1;
            if self.first_only || self.room == 0 {
                return;
            }
            if self.matches.len() == self.room {
                self.full = true;
                return;
            }
            let before = self
                .ring
                .drain(..)
                .filter(|(n, _)| *n > self.shown_through)
                .map(|(_, text)| text)
                .collect();
            self.matches.push(GrepMatch {
                path: path.to_string(),
                line: number,
                text: display(content),
                before,
                after: Vec::new(),
            });
            self.owed_after = self.after;
            self.shown_through = number;
            return;
        }
        if self.owed_after > 0 && reportable {
            if let Some(last) = self.matches.last_mut() {
                last.after.push(display(content));
            }
            self.owed_after -= 1;
            self.shown_through = number;
            return;
        }
        self.remember(number, display(content));
    }
}

impl<S: Sql> Vfs<'_, S> {
    /// Searches `request.base` for `request.pattern`.
    pub fn grep(&self, request: &GrepRequest) -> Result<GrepPage> {
        let source = if request.regex {
            request.pattern.clone()
        } else {
            regex::escape(&request.pattern)
        };
        let re = RegexBuilder::new(&source)
            .case_insensitive(request.ignore_case)
            .multi_line(true)
            .size_limit(MAX_REGEX_BYTES)
            .dfa_size_limit(MAX_REGEX_BYTES)
            .build()
            .map_err(|e| VfsError::InvalidPattern {
                pattern: request.pattern.clone(),
                reason: regex_error_reason(&e),
            })?;
        let cost = SearchCost::new(&source, request.ignore_case, true);
        let include = patterns(&request.include)?;
        let exclude = patterns(&request.exclude)?;
        let limit = request.limit.clamp(1, MAX_LIMIT);
        let mut search = Search {
            vfs: self,
            pending: Vec::new(),
            pending_bytes: 0,
            re: &re,
            cost: cost.as_ref(),
            work_left: MAX_SEARCH_WORK,
            scanned: 0,
            prefilter: !(source.contains("\\A") || source.contains("\\z") || source.contains("(?")),
            request,
            limit,
            page: GrepPage::default(),
            hits: 0,
        };
        match request.mode {
            GrepMode::Content => search.page.matches = Some(Vec::new()),
            GrepMode::Files => search.page.files = Some(Vec::new()),
            GrepMode::Count => search.page.counts = Some(Vec::new()),
        }

        let (base, node) = self.existing(&request.base, true)?;
        if node.kind == Kind::File {
            let skip = match &request.cursor {
                Some(c) if c.path == base => c.line.unwrap_or(u64::MAX),
                _ => 0,
            };
            search.file(&base, &node, skip)?;
            return Ok(search.page);
        }

        let after = request.cursor.as_ref().map(|c| &c.path);
        if let Some(after) = after {
            if !after.starts_with(&base) {
                return Err(VfsError::InvalidPath {
                    path: after.to_string(),
                    reason: "cursor is not below the searched directory",
                });
            }
        }
        // Resume inside the cursor's file first, then after it.
        if let Some(GrepCursor {
            path,
            line: Some(line),
        }) = &request.cursor
        {
            if let Ok((_, node)) = self.file(path) {
                if search.file(path, &node, *line)? == Flow::Stop {
                    return Ok(search.page);
                }
            }
        }
        self.walk(&base, after, |visit| {
            let relative = visit.path.strip_prefix(&base).unwrap_or_default();
            if exclude.iter().any(|p| p.filter_matches(relative)) {
                return Ok(Flow::SkipChildren);
            }
            if visit.node.kind != Kind::File
                || (!include.is_empty() && !include.iter().any(|p| p.filter_matches(relative)))
            {
                return Ok(Flow::Continue);
            }
            search.queue(&visit.path, &visit.node)
        })?;
        search.flush()?;
        Ok(search.page)
    }
}

/// One search in progress.
struct Search<'a, 'db, S: Sql> {
    vfs: &'a Vfs<'db, S>,
    /// Small files queued for one batched fetch, in walk order.
    pending: Vec<(VPath, Node)>,
    pending_bytes: u64,
    re: &'a Regex,
    cost: Option<&'a SearchCost>,
    /// Slow-engine work left to the page (see [`crate::search_cost`]).
    work_left: u64,
    /// Bytes of content read so far (see [`MAX_PAGE_SCAN_BYTES`]).
    scanned: u64,
    prefilter: bool,
    request: &'a GrepRequest,
    limit: usize,
    page: GrepPage,
    /// Results so far: lines in content mode, files otherwise.
    hits: usize,
}

impl<S: Sql> Search<'_, '_, S> {
    /// Queues a file met by the walk. Small files are searched in batches,
    /// their contents fetched with one query per batch: per-statement cost,
    /// not bytes, dominates a search over many small files. A large file is
    /// streamed chunk by chunk, after the batch before it.
    fn queue(&mut self, path: &VPath, node: &Node) -> Result<Flow> {
        if node.size > CHUNK_SIZE as u64 {
            if self.flush()? == Flow::Stop {
                return Ok(Flow::Stop);
            }
            return self.file(path, node, 0);
        }
        self.pending_bytes += node.size;
        self.pending.push((path.clone(), node.clone()));
        if self.pending.len() >= BATCH_FILES || self.pending_bytes >= BATCH_BYTES {
            return self.flush();
        }
        Ok(Flow::Continue)
    }

    /// Searches the queued small files, in order.
    fn flush(&mut self) -> Result<Flow> {
        let batch = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        if batch.is_empty() {
            return Ok(Flow::Continue);
        }
        let inos: Vec<i64> = batch.iter().map(|(_, node)| node.ino).collect();
        let mut contents = self.vfs.small_contents(&inos)?;
        for (path, node) in &batch {
            let data = contents.remove(&node.ino).unwrap_or_default();
            if self.scan(path, 0, std::iter::once(Ok(data)))? == Flow::Stop {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    }

    /// Searches one file, streaming its chunks, skipping lines through
    /// `skip_through`.
    fn file(&mut self, path: &VPath, node: &Node, skip_through: u64) -> Result<Flow> {
        let vfs = self.vfs;
        let chunks = vfs.chunks_of(node.ino)?;
        let pieces = chunks.iter().map(|chunk| vfs.chunk_data(chunk.id));
        self.scan(path, skip_through, pieces)
    }

    /// Searches the pieces of one file (in order), skipping lines through
    /// `skip_through`.
    fn scan(
        &mut self,
        path: &VPath,
        skip_through: u64,
        pieces: impl Iterator<Item = Result<Vec<u8>>>,
    ) -> Result<Flow> {
        if self.hits == self.limit || self.scanned >= MAX_PAGE_SCAN_BYTES {
            self.stop_before(path, skip_through);
            return Ok(Flow::Stop);
        }
        let mode = self.request.mode;
        let content_mode = mode == GrepMode::Content;
        let mut scanner = Scanner {
            re: self.re,
            cost: self.cost,
            work_left: Ok(self.work_left),
            prefilter: self.prefilter,
            before: self.request.before.min(MAX_CONTEXT),
            after: self.request.after.min(MAX_CONTEXT),
            skip_through,
            line: 1,
            ring: VecDeque::new(),
            owed_after: 0,
            shown_through: 0,
            matches: Vec::new(),
            count: 0,
            first_only: mode == GrepMode::Files,
            room: if content_mode {
                self.limit - self.hits
            } else {
                0
            },
            full: false,
        };
        let mut carry: Vec<u8> = Vec::new();
        for (i, data) in pieces.enumerate() {
            let data = data?;
            self.scanned += data.len() as u64;
            if i == 0 && looks_binary(&data) {
                self.page.binary_files_skipped += 1;
                return Ok(Flow::Continue);
            }
            // Only the new bytes can hold the last newline: a long line
            // is not searched again for each piece it spans.
            let known = carry.len();
            carry.extend_from_slice(&data);
            let Some(cut) = carry[known..].iter().rposition(|&b| b == b'\n') else {
                continue;
            };
            let cut = known + cut;
            let rest = carry.split_off(cut + 1);
            scanner.feed(&carry, path);
            carry = rest;
            if scanner.full || (scanner.first_only && scanner.count > 0) {
                break;
            }
        }
        if !carry.is_empty() && !scanner.full {
            scanner.feed(&carry, path);
        }
        match scanner.work_left {
            Ok(left) => self.work_left = left,
            Err(TooCostly { bytes, states }) => {
                return Err(VfsError::PatternTooCostly {
                    pattern: self.request.pattern.clone(),
                    path: path.to_string(),
                    bytes,
                    states,
                    bound: MAX_SEARCH_WORK,
                })
            }
        }
        self.page.files_searched += 1;

        if scanner.full {
            let last = scanner.matches.last().map_or(skip_through, |m| m.line);
            self.take(scanner.matches);
            self.stop_at(path, Some(last));
            return Ok(Flow::Stop);
        }
        match mode {
            GrepMode::Content => self.take(scanner.matches),
            GrepMode::Files if scanner.count > 0 => {
                self.hits += 1;
                self.page
                    .files
                    .get_or_insert_with(Vec::new)
                    .push(path.to_string());
            }
            GrepMode::Count if scanner.count > 0 => {
                self.hits += 1;
                self.page
                    .counts
                    .get_or_insert_with(Vec::new)
                    .push(FileCount {
                        path: path.to_string(),
                        count: scanner.count,
                    });
            }
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn take(&mut self, matches: Vec<GrepMatch>) {
        self.hits += matches.len();
        self.page
            .matches
            .get_or_insert_with(Vec::new)
            .extend(matches);
    }

    /// The page is full; the next one starts at `path`, after `line` (or
    /// after the whole file when `None`).
    fn stop_at(&mut self, path: &VPath, line: Option<u64>) {
        self.page.truncated = true;
        self.page.next_cursor = Some(
            GrepCursor {
                path: path.clone(),
                line,
            }
            .render(),
        );
    }

    /// The page filled before `path` was searched: resume at its start.
    fn stop_before(&mut self, path: &VPath, skip_through: u64) {
        self.stop_at(path, Some(skip_through));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str, pattern: &str, before: usize, after: usize) -> Vec<GrepMatch> {
        let re = RegexBuilder::new(pattern).multi_line(true).build().unwrap();
        let cost = SearchCost::new(pattern, false, true).unwrap();
        let mut s = Scanner {
            re: &re,
            cost: Some(&cost),
            work_left: Ok(MAX_SEARCH_WORK),
            prefilter: true,
            before,
            after,
            skip_through: 0,
            line: 1,
            ring: VecDeque::new(),
            owed_after: 0,
            shown_through: 0,
            matches: Vec::new(),
            count: 0,
            first_only: false,
            room: 100,
            full: false,
        };
        let path = VPath::parse("/f").unwrap();
        // Two pieces, cut at a newline, to exercise the skim path.
        let cut = text.len() / 2;
        let cut = text[..cut].rfind('\n').map_or(0, |i| i + 1);
        s.feed(&text.as_bytes()[..cut], &path);
        s.feed(&text.as_bytes()[cut..], &path);
        s.matches
    }

    #[test]
    fn line_numbers_across_pieces() {
        let text: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let got = scan(&text, "^l1[57]$", 0, 0);
        assert_eq!(got.iter().map(|m| m.line).collect::<Vec<_>>(), vec![15, 17]);
        assert_eq!(got[0].text, "l15");
    }

    #[test]
    fn context_is_not_repeated() {
        let text: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let got = scan(&text, "^l1[24]$", 2, 1);
        assert_eq!(got[0].before, vec!["l10", "l11"]);
        assert_eq!(got[0].after, vec!["l13"]);
        // l13 was shown as context already; only nothing new precedes l14.
        assert!(got[1].before.is_empty());
        assert_eq!(got[1].after, vec!["l15"]);
    }

    #[test]
    fn before_context_from_skimmed_piece() {
        let text: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        // The match is in the second piece; its context comes from the first.
        let got = scan(&text, "^l11$", 2, 0);
        assert_eq!(got[0].before, vec!["l9", "l10"]);
    }

    #[test]
    fn cursor_round_trip() {
        let c = GrepCursor::parse("12:/a/b:c").unwrap();
        assert_eq!(c.line, Some(12));
        assert_eq!(c.path.as_str(), "/a/b:c");
        assert_eq!(GrepCursor::parse("*:/x").unwrap().line, None);
        assert!(GrepCursor::parse("x:/a").is_err());
        assert_eq!(c.render(), "12:/a/b:c");
    }
}
