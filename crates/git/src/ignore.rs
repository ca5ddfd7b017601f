//! gitignore: `.git/info/exclude` and each directory's `.gitignore`, with
//! git's precedence (a deeper file over a shallower one, the exclude file
//! last; within a file the last matching line) and git's wildmatch (`*`
//! and `?` within a name, `**` across directories, `[...]` classes).

/// One pattern line.
#[derive(Debug, Clone)]
struct Pattern {
    glob: Vec<u8>,
    negated: bool,
    dir_only: bool,
    /// Has a `/` before its end: matched against the path relative to the
    /// file's directory, not the name alone.
    anchored: bool,
}

/// The patterns of one file, relative to its directory.
#[derive(Debug, Clone)]
pub struct Patterns {
    /// Worktree-relative directory (`""` for the root).
    base: String,
    patterns: Vec<Pattern>,
}

impl Patterns {
    pub fn parse(base: &str, text: &[u8]) -> Patterns {
        let mut patterns = Vec::new();
        for line in text.split(|&b| b == b'\n') {
            let mut line = line.strip_suffix(b"\r").unwrap_or(line).to_vec();
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            // Trailing spaces go unless escaped.
            while line.last() == Some(&b' ') && !line.ends_with(b"\\ ") {
                line.pop();
            }
            let negated = line.first() == Some(&b'!');
            // `!` negates; a `\\` before a leading `!` or `#` escapes it.
            if negated || line.starts_with(b"\\!") || line.starts_with(b"\\#") {
                line.remove(0);
            }
            let dir_only = line.last() == Some(&b'/');
            if dir_only {
                line.pop();
            }
            if line.is_empty() {
                continue;
            }
            let anchored = line.contains(&b'/');
            if line.first() == Some(&b'/') {
                line.remove(0);
            }
            patterns.push(Pattern {
                glob: line,
                negated,
                dir_only,
                anchored,
            });
        }
        Patterns {
            base: base.to_string(),
            patterns,
        }
    }

    /// `Some(ignored)` when a line decides `path` (worktree-relative).
    fn decide(&self, path: &str, is_dir: bool) -> Option<bool> {
        let rel = if self.base.is_empty() {
            path
        } else {
            path.strip_prefix(&self.base)?.strip_prefix('/')?
        };
        let name = rel.rsplit('/').next().unwrap_or(rel);
        for p in self.patterns.iter().rev() {
            if p.dir_only && !is_dir {
                continue;
            }
            let subject = if p.anchored { rel } else { name };
            if wildmatch(&p.glob, subject.as_bytes()) {
                return Some(!p.negated);
            }
        }
        None
    }
}

/// The ignore files in force for a walk, deepest last.
#[derive(Debug, Clone, Default)]
pub struct Ignores {
    /// Per-directory files, in the order the walk entered them.
    stack: Vec<Patterns>,
    exclude: Option<Patterns>,
}

impl Ignores {
    pub fn new(exclude: Option<Patterns>) -> Self {
        Ignores {
            stack: Vec::new(),
            exclude,
        }
    }

    pub fn push(&mut self, patterns: Patterns) {
        self.stack.push(patterns);
    }

    pub fn pop(&mut self) {
        self.stack.pop();
    }

    /// Whether `path` (worktree-relative) is ignored.
    pub fn is_ignored(&self, path: &str, is_dir: bool) -> bool {
        self.stack
            .iter()
            .rev()
            .chain(self.exclude.iter())
            .find_map(|p| p.decide(path, is_dir))
            .unwrap_or(false)
    }
}

/// git's wildmatch with `WM_PATHNAME`: `*` and `?` do not match `/`, `**`
/// between slashes (or at either end) matches any number of directories.
pub fn wildmatch(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    while p < pattern.len() {
        match pattern[p] {
            b'*' => {
                let double = pattern.get(p + 1) == Some(&b'*');
                if double
                    && (p == 0 || pattern[p - 1] == b'/')
                    && (p + 2 == pattern.len() || pattern[p + 2] == b'/')
                {
                    // `**` at the end: everything; `**/`: zero or more dirs.
                    if p + 2 == pattern.len() {
                        return true;
                    }
                    let rest = &pattern[p + 3..];
                    let mut at = t;
                    loop {
                        if wildmatch(rest, &text[at..]) {
                            return true;
                        }
                        match text[at..].iter().position(|&b| b == b'/') {
                            Some(i) => at += i + 1,
                            None => return false,
                        }
                    }
                }
                let mut q = p;
                while q < pattern.len() && pattern[q] == b'*' {
                    q += 1;
                }
                let rest = &pattern[q..];
                let mut at = t;
                loop {
                    if wildmatch(rest, &text[at..]) {
                        return true;
                    }
                    if at >= text.len() || text[at] == b'/' {
                        return false;
                    }
                    at += 1;
                }
            }
            b'?' => {
                if t >= text.len() || text[t] == b'/' {
                    return false;
                }
                p += 1;
                t += 1;
            }
            b'[' => {
                let Some(&c) = text.get(t) else {
                    return false;
                };
                match class(&pattern[p..], c) {
                    Some((true, len)) => {
                        p += len;
                        t += 1;
                    }
                    Some((false, _)) => return false,
                    // An unclosed `[` is a literal.
                    None => {
                        if c != b'[' {
                            return false;
                        }
                        p += 1;
                        t += 1;
                    }
                }
            }
            b'\\' if p + 1 < pattern.len() => {
                if text.get(t) != Some(&pattern[p + 1]) {
                    return false;
                }
                p += 2;
                t += 1;
            }
            c => {
                if text.get(t) != Some(&c) {
                    return false;
                }
                p += 1;
                t += 1;
            }
        }
    }
    t == text.len()
}

/// Whether `c` is in the class opening `pattern`, and the class's length.
fn class(pattern: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negated = matches!(pattern.get(i), Some(b'!' | b'^'));
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < pattern.len() {
        let mut lo = pattern[i];
        if lo == b']' && !first {
            return Some((matched != negated && c != b'/', i + 1));
        }
        first = false;
        if lo == b'\\' && i + 1 < pattern.len() {
            i += 1;
            lo = pattern[i];
        }
        if pattern.get(i + 1) == Some(&b'-') && pattern.get(i + 2).is_some_and(|&h| h != b']') {
            let hi = pattern[i + 2];
            matched |= lo <= c && c <= hi;
            i += 3;
        } else {
            matched |= lo == c;
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildmatch_as_git() {
        for (p, t, want) in [
            ("*.log", "a.log", true),
            ("*.log", "d/a.log", false),
            ("a/**/b", "a/b", true),
            ("a/**/b", "a/x/y/b", true),
            ("**/b", "x/b", true),
            ("a/**", "a/x/y", true),
            ("a?c", "a/c", false),
            ("[a-c]x", "bx", true),
            ("[!a-c]x", "bx", false),
            ("\\*", "*", true),
        ] {
            assert_eq!(wildmatch(p.as_bytes(), t.as_bytes()), want, "{p} {t}");
        }
    }

    #[test]
    fn deeper_files_and_later_lines_win() {
        let mut ignores = Ignores::new(None);
        ignores.push(Patterns::parse("", b"*.log\nbuild/\n"));
        ignores.push(Patterns::parse("keep", b"!*.log\n"));
        assert!(ignores.is_ignored("a.log", false));
        assert!(!ignores.is_ignored("keep/a.log", false));
        assert!(ignores.is_ignored("build", true));
        assert!(!ignores.is_ignored("build", false));
    }
}
