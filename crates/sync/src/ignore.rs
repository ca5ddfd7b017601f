//! Which paths stay container-side.
//!
//! Build output and dependency trees (`node_modules/`, `target/`) are large,
//! cheap to recreate and useless to the workspace's file tools; shipping them
//! back and forth would make every sync slow. Both ends filter with the same
//! rules: the workspace does not push ignored paths and the container does
//! not report them.
//!
//! The rules are a subset of gitignore, one pattern per line: `#` starts a
//! comment; a trailing `/` matches directories only; a pattern with a `/`
//! at the start or in the middle is anchored at the workspace root, any
//! other matches a name at any depth; `*` and `?` match within one name and
//! `**` matches any number of directories; `!pattern` re-includes what an
//! earlier rule ignored (the last rule that matches a path decides, as in
//! git); a leading `\` escapes a `#` or `!` that starts a name. Everything
//! under an ignored directory is ignored, and, as in git, cannot be
//! re-included by a rule about something inside it.
//!
//! The workspace's `/.steadignore` extends the defaults, as a repository's
//! `.gitignore` extends the global excludes: its lines come after
//! [`DEFAULT_RULES`] ([`workspace_rules`]), so `*.log` adds to them and
//! `!node_modules/` syncs a dependency tree the defaults keep container-side.

/// The workspace file holding the rules.
pub const IGNORE_FILE: &str = "/.steadignore";

/// The rules every workspace starts with; its [`IGNORE_FILE`] comes after.
pub const DEFAULT_RULES: &str = "node_modules/\ntarget/\n__pycache__/\n.venv/\n";

/// The rules of a workspace whose [`IGNORE_FILE`] holds `file` (`None`
/// when it has none), as text: the defaults, then the file's lines.
pub fn workspace_rules(file: Option<&str>) -> String {
    match file {
        Some(file) => format!("{DEFAULT_RULES}{file}"),
        None => DEFAULT_RULES.to_string(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    /// Components of the pattern (one for an unanchored pattern).
    parts: Vec<String>,
    anchored: bool,
    dir_only: bool,
    /// `!pattern`: what it matches is not ignored.
    negated: bool,
}

/// A parsed rule set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoreRules {
    rules: Vec<Rule>,
}

impl Default for IgnoreRules {
    fn default() -> Self {
        IgnoreRules::parse(DEFAULT_RULES)
    }
}

impl IgnoreRules {
    /// Parses rules; a line that can match nothing (such as `/`) is dropped.
    pub fn parse(text: &str) -> Self {
        let rules = text
            .lines()
            .map(str::trim_end)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .filter_map(|line| {
                let (negated, line) = match line.strip_prefix('!') {
                    Some(rest) => (true, rest),
                    None => (false, line.strip_prefix('\\').unwrap_or(line)),
                };
                let dir_only = line.ends_with('/');
                let body = line.trim_end_matches('/');
                let anchored = body.contains('/');
                let parts: Vec<String> = body
                    .split('/')
                    .filter(|part| !part.is_empty())
                    .map(str::to_string)
                    .collect();
                (!parts.is_empty()).then_some(Rule {
                    parts,
                    anchored,
                    dir_only,
                    negated,
                })
            })
            .collect();
        IgnoreRules { rules }
    }

    /// Whether the workspace path `path` (`/a/b`) is ignored; `is_dir` tells
    /// what is at the path itself (its ancestors are directories). It is
    /// when the last rule matching it, or one of its ancestors, ignores.
    pub fn is_ignored(&self, path: &str, is_dir: bool) -> bool {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        (1..=parts.len()).any(|depth| {
            let dir = depth < parts.len() || is_dir;
            self.rules
                .iter()
                .rev()
                .find(|rule| rule.matches(&parts[..depth], dir))
                .is_some_and(|rule| !rule.negated)
        })
    }
}

impl Rule {
    fn matches(&self, path: &[&str], is_dir: bool) -> bool {
        if self.dir_only && !is_dir {
            return false;
        }
        if self.anchored {
            match_parts(&self.parts, path)
        } else {
            path.last()
                .is_some_and(|name| wildcard(self.parts[0].as_bytes(), name.as_bytes()))
        }
    }
}

/// Matches pattern components against path components; `**` spans any run.
fn match_parts(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| match_parts(rest, &path[skip..]))
        }
        Some((first, rest)) => path.split_first().is_some_and(|(name, tail)| {
            wildcard(first.as_bytes(), name.as_bytes()) && match_parts(rest, tail)
        }),
    }
}

/// `*` and `?` within one name.
fn wildcard(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| wildcard(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && wildcard(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && wildcard(rest, &name[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_keep_build_trees_container_side() {
        let rules = IgnoreRules::default();
        assert!(rules.is_ignored("/node_modules", true));
        assert!(rules.is_ignored("/web/node_modules/x/index.js", false));
        assert!(rules.is_ignored("/target/debug/app", false));
        assert!(!rules.is_ignored("/target", false), "a file named target");
        assert!(!rules.is_ignored("/src/main.rs", false));
    }

    #[test]
    fn anchored_wildcard_and_comment_rules() {
        let rules = IgnoreRules::parse("# build\n/dist\n*.log\ndocs/**/gen/\n\n");
        assert!(rules.is_ignored("/dist", true));
        assert!(rules.is_ignored("/dist/a.js", false));
        assert!(!rules.is_ignored("/web/dist", true), "anchored at the root");
        assert!(rules.is_ignored("/a/b/run.log", false));
        assert!(!rules.is_ignored("/a/log", false));
        assert!(rules.is_ignored("/docs/gen/x", false));
        assert!(rules.is_ignored("/docs/a/b/gen", true));
        assert!(!rules.is_ignored("/docs/a/gen", false), "directories only");
        assert!(
            !rules.is_ignored("/node_modules", true),
            "parse reads only the text given"
        );
        assert!(IgnoreRules::parse("/\n#x\n!\n").rules.is_empty());
    }

    #[test]
    fn the_workspace_file_extends_the_defaults() {
        let rules = IgnoreRules::parse(&workspace_rules(Some("*.log\n")));
        assert!(rules.is_ignored("/a/run.log", false));
        assert!(
            rules.is_ignored("/app/__pycache__/m.pyc", false),
            "defaults kept"
        );
        assert!(rules.is_ignored("/web/node_modules", true));
        assert_eq!(
            IgnoreRules::parse(&workspace_rules(None)),
            IgnoreRules::default()
        );
    }

    #[test]
    fn negation_re_includes_and_the_last_matching_rule_decides() {
        let rules = IgnoreRules::parse(&workspace_rules(Some(
            "!node_modules/\n*.log\n!keep.log\n/build/\n!/build/out.txt\n\\!bang\n",
        )));
        assert!(!rules.is_ignored("/node_modules/x/index.js", false));
        assert!(
            rules.is_ignored("/target/debug/app", false),
            "other defaults stay"
        );
        assert!(rules.is_ignored("/a/run.log", false));
        assert!(!rules.is_ignored("/a/keep.log", false));
        // As in git: nothing under an ignored directory comes back.
        assert!(rules.is_ignored("/build/out.txt", false));
        assert!(rules.is_ignored("/!bang", false), "an escaped leading !");
        // A later rule ignores again what an earlier one re-included.
        let again = IgnoreRules::parse("*.log\n!keep.log\nkeep.log\n");
        assert!(again.is_ignored("/keep.log", false));
    }
}
