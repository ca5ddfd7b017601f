//! `glob`: find paths by pattern, paged, in depth-first name order.
//!
//! Patterns use `*` and `?` (within one name), `**` (any depth), `[...]`
//! classes and `{a,b}` alternatives, matched against the path relative to the
//! base directory. Two cheap prunings keep a glob from walking the whole
//! workspace: the walk starts at the pattern's literal leading directories
//! (`src/**/*.rs` walks only `src`), and a pattern without `**` is not
//! followed deeper than its own number of components. The walk itself is
//! one statement per few hundred entries (`crate::tree`).

use globset::{GlobBuilder, GlobMatcher};
use serde::Serialize;
use stead_sql::Sql;

use crate::error::{Result, VfsError};
use crate::node::Kind;
use crate::path::VPath;
use crate::resolve::Resolved;
use crate::tree::Flow;
use crate::Vfs;

/// Default and largest page of glob matches.
pub const DEFAULT_LIMIT: usize = 1000;
pub const MAX_LIMIT: usize = 10_000;
/// Entries one page visits at most. `**` over a large tree with few
/// matches would otherwise walk the whole workspace (a million nodes) in
/// one request; past this the page ends early, truncated, with a cursor
/// at the last entry visited, and the next page goes on from there.
pub const MAX_VISITS: usize = 100_000;

/// A compiled path pattern.
pub struct Pattern {
    matcher: GlobMatcher,
    /// Whether the pattern is matched against a bare name (no `/` in it)
    /// rather than a relative path; used for exclude and include filters.
    by_name: bool,
}

impl Pattern {
    /// Compiles `pattern`; `*` never crosses a `/`.
    pub fn new(pattern: &str) -> Result<Self> {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|e| VfsError::InvalidPattern {
                pattern: pattern.to_string(),
                reason: e.kind().to_string(),
            })?;
        Ok(Pattern {
            matcher: glob.compile_matcher(),
            by_name: !pattern.contains('/'),
        })
    }

    /// Matches a relative path.
    pub fn matches(&self, relative: &str) -> bool {
        self.matcher.is_match(relative)
    }

    /// Matches as a filter: a pattern without `/` matches the last name (as
    /// in `.gitignore`), one with `/` the relative path.
    pub fn filter_matches(&self, relative: &str) -> bool {
        if self.by_name {
            let name = relative.rsplit('/').next().unwrap_or(relative);
            self.matcher.is_match(name)
        } else {
            self.matcher.is_match(relative)
        }
    }
}

/// Compiles a list of filter patterns.
pub fn patterns(list: &[String]) -> Result<Vec<Pattern>> {
    list.iter().map(|p| Pattern::new(p)).collect()
}

/// A glob query.
#[derive(Debug, Clone)]
pub struct GlobRequest {
    pub pattern: String,
    /// Directory the pattern is relative to.
    pub base: VPath,
    /// Paths to leave out, with everything below them.
    pub exclude: Vec<String>,
    /// Resume strictly after this path (the previous page's `next_cursor`).
    pub after: Option<VPath>,
    pub limit: usize,
}

/// One matching path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GlobMatch {
    pub path: String,
    #[serde(rename = "type")]
    pub kind: Kind,
    pub size: u64,
    pub mtime: i64,
}

/// A page of matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GlobPage {
    pub matches: Vec<GlobMatch>,
    pub truncated: bool,
    /// Pass as `cursor` to get the next page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

fn has_meta(component: &str) -> bool {
    component.contains(['*', '?', '[', '{', '\\'])
}

/// Splits a pattern into its literal leading directories (with `.` and `..`
/// resolved) and the rest, which is what gets matched. `src/**/*.rs` walks
/// only `src`; the last component always stays a pattern.
fn split_literal(pattern: &str) -> Result<(Vec<&str>, String)> {
    let components: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty()).collect();
    let mut literal: Vec<&str> = Vec::new();
    let mut i = 0;
    while i + 1 < components.len() && !has_meta(components[i]) {
        match components[i] {
            "." => {}
            ".." => {
                if literal.pop().is_none() {
                    return Err(VfsError::InvalidPattern {
                        pattern: pattern.to_string(),
                        reason: "the pattern climbs above its base directory".into(),
                    });
                }
            }
            name => literal.push(name),
        }
        i += 1;
    }
    Ok((literal, components[i.min(components.len())..].join("/")))
}

impl<S: Sql> Vfs<'_, S> {
    /// Finds the paths below `request.base` matching `request.pattern`.
    /// Matches are reported by their path through `base` as written (a
    /// symlinked directory in the pattern stays in the reported path).
    pub fn glob(&self, request: &GlobRequest) -> Result<GlobPage> {
        let exclude = patterns(&request.exclude)?;
        let mut page = GlobPage {
            matches: Vec::new(),
            truncated: false,
            next_cursor: None,
        };
        let (literal, rest) = split_literal(&request.pattern)?;
        let pattern = Pattern::new(&rest)?;
        let max_depth = if rest.contains("**") {
            usize::MAX
        } else {
            rest.split('/').count()
        };
        // An excluded directory on the literal prefix excludes everything.
        for depth in 1..=literal.len() {
            let prefix = literal[..depth].join("/");
            if exclude.iter().any(|p| p.filter_matches(&prefix)) {
                return Ok(page);
            }
        }
        self.existing_dir(&request.base)?;
        let mut start = request.base.clone();
        for name in &literal {
            start = VPath::parse_from(name, &start)?;
        }
        let real_start = match self.resolve(&start, true)? {
            Resolved::Found { path, node, .. } if node.kind == Kind::Dir => path,
            _ => return Ok(page),
        };
        let after = match &request.after {
            None => None,
            Some(after) => {
                let below = after
                    .strip_prefix(&start)
                    .ok_or_else(|| VfsError::InvalidPath {
                        path: after.to_string(),
                        reason: "cursor is not below the searched directory",
                    })?;
                Some(VPath::parse_from(below, &real_start)?)
            }
        };
        let limit = request.limit.clamp(1, MAX_LIMIT);
        let prefix = literal.join("/");
        let from_base = |relative: &str| {
            if prefix.is_empty() {
                relative.to_string()
            } else {
                format!("{prefix}/{relative}")
            }
        };
        // A page can end at an excluded directory (see MAX_VISITS): the
        // next one resumes after it, and must not enter it.
        let skip_below = after
            .as_ref()
            .and_then(|after| after.strip_prefix(&real_start))
            .filter(|relative| {
                exclude
                    .iter()
                    .any(|p| p.filter_matches(&from_base(relative)))
            })
            .map(|relative| format!("{relative}/"));
        let mut visits = 0usize;
        let mut last_visited: Option<String> = None;
        self.walk_to_depth(&real_start, after.as_ref(), max_depth, |visit| {
            let relative = visit.path.strip_prefix(&real_start).unwrap_or_default();
            if skip_below
                .as_deref()
                .is_some_and(|skip| relative.starts_with(skip))
            {
                return Ok(Flow::SkipChildren);
            }
            visits += 1;
            if visits > MAX_VISITS {
                page.truncated = true;
                page.next_cursor = last_visited.take();
                return Ok(Flow::Stop);
            }
            last_visited = Some(start.join_relative(relative).to_string());
            if exclude
                .iter()
                .any(|p| p.filter_matches(&from_base(relative)))
            {
                return Ok(Flow::SkipChildren);
            }
            if pattern.matches(relative) {
                if page.matches.len() == limit {
                    page.truncated = true;
                    page.next_cursor = page.matches.last().map(|m| m.path.clone());
                    return Ok(Flow::Stop);
                }
                page.matches.push(GlobMatch {
                    path: start.join_relative(relative).to_string(),
                    kind: visit.node.kind,
                    size: visit.node.size,
                    mtime: visit.node.mtime,
                });
            }
            Ok(Flow::Continue)
        })?;
        Ok(page)
    }
}
