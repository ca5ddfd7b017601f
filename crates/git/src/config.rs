//! `.git/config`: git's INI dialect. `[section]` and `[section "sub"]`
//! headers, `key = value` lines (a bare `key` is true), `#`/`;` comments,
//! double quotes and `\"`, `\\`, `\n`, `\t` escapes, a trailing `\`
//! continuing a value. Sections and keys are case-insensitive,
//! subsections are not. Changes keep every other line as written.

use crate::error::{Error, Result};

/// A config file's text, line by line, read for lookups.
#[derive(Debug, Clone, Default)]
pub struct Config {
    lines: Vec<String>,
}

/// A key split as git names it: `section[.subsection].name`. Section and
/// name are matched in lower case; a line or header this writes spells
/// them as they were typed, as git does (`git config core.FileMode x`
/// writes `FileMode = x`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    section: String,
    subsection: Option<String>,
    name: String,
    typed_section: String,
    typed_name: String,
}

impl Key {
    /// Parses `remote.origin.url`; git's message when it is no key.
    pub fn parse(text: &str) -> Result<Key> {
        let (first, rest) = text
            .split_once('.')
            .ok_or_else(|| Error::Fatal(format!("key does not contain a section: {text}")))?;
        let (subsection, name) = match rest.rsplit_once('.') {
            Some((sub, name)) => (Some(sub.to_string()), name),
            None => (None, rest),
        };
        let ok =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !ok(first) || !ok(name) || !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(Error::Fatal(format!("invalid key: {text}")));
        }
        Ok(Key {
            section: first.to_ascii_lowercase(),
            subsection,
            name: name.to_ascii_lowercase(),
            typed_section: first.to_string(),
            typed_name: name.to_string(),
        })
    }

    fn header(&self) -> String {
        match &self.subsection {
            Some(sub) => format!(
                "[{} \"{}\"]",
                self.typed_section,
                sub.replace('\\', "\\\\").replace('"', "\\\"")
            ),
            None => format!("[{}]", self.typed_section),
        }
    }

    /// `section.sub.name`, as `git config --list` prints it.
    fn text(&self) -> String {
        match &self.subsection {
            Some(sub) => format!("{}.{sub}.{}", self.section, self.name),
            None => format!("{}.{}", self.section, self.name),
        }
    }
}

/// What one line of the file is.
enum Line {
    Header {
        section: String,
        subsection: Option<String>,
    },
    Entry {
        name: String,
        value: String,
    },
    Other,
}

fn parse_header(line: &str) -> Option<(String, Option<String>)> {
    let inner = line.trim().strip_prefix('[')?;
    let end = inner.rfind(']')?;
    let inner = &inner[..end];
    match inner.split_once(|c: char| c.is_whitespace()) {
        Some((section, sub)) => {
            let sub = sub.trim().strip_prefix('"')?.strip_suffix('"')?;
            let mut out = String::new();
            let mut chars = sub.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    out.extend(chars.next());
                } else {
                    out.push(c);
                }
            }
            Some((section.to_ascii_lowercase(), Some(out)))
        }
        // `[section.sub]`: the old form, subsection lowercased.
        None => match inner.split_once('.') {
            Some((section, sub)) => {
                Some((section.to_ascii_lowercase(), Some(sub.to_ascii_lowercase())))
            }
            None => Some((inner.to_ascii_lowercase(), None)),
        },
    }
}

/// A value's text after `=`: quotes removed, escapes read, comments cut.
fn parse_value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.trim_start().chars().peekable();
    let mut pending_space = String::new();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => {
                out.push_str(&pending_space);
                pending_space.clear();
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('b') => {
                        out.pop();
                    }
                    Some(other) => out.push(other),
                    None => {}
                }
            }
            '#' | ';' if !quoted => break,
            c if c.is_whitespace() && !quoted => pending_space.push(c),
            c => {
                out.push_str(&pending_space);
                pending_space.clear();
                out.push(c);
            }
        }
    }
    out
}

fn classify(line: &str) -> Line {
    let trimmed = line.trim_start();
    if trimmed.starts_with('[') {
        if let Some((section, subsection)) = parse_header(trimmed) {
            return Line::Header {
                section,
                subsection,
            };
        }
    }
    if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
        return Line::Other;
    }
    match trimmed.split_once('=') {
        Some((name, value)) => Line::Entry {
            name: name.trim().to_ascii_lowercase(),
            value: parse_value(value),
        },
        None => Line::Entry {
            name: trimmed.trim().to_ascii_lowercase(),
            value: "true".to_string(),
        },
    }
}

/// Quotes a value for writing when git would.
fn quote(value: &str) -> String {
    let escaped = value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\t', "\\t");
    if value.starts_with(' ') || value.ends_with(' ') || value.contains('#') || value.contains(';')
    {
        format!("\"{escaped}\"")
    } else {
        escaped
    }
}

impl Config {
    pub fn parse(text: &str) -> Config {
        // A value continued with a trailing `\` joins the next line.
        let mut lines: Vec<String> = Vec::new();
        let mut continued = false;
        for line in text.lines() {
            if continued {
                let last = lines.last_mut().expect("a line continues another");
                last.pop();
                last.push_str(line);
            } else {
                lines.push(line.to_string());
            }
            continued = line.ends_with('\\') && !line.ends_with("\\\\");
        }
        Config { lines }
    }

    pub fn text(&self) -> String {
        let mut text = self.lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        text
    }

    /// Every `(key, value)` in file order, keys as `--list` prints them.
    pub fn entries(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut current: Option<Key> = None;
        for line in &self.lines {
            match classify(line) {
                Line::Header {
                    section,
                    subsection,
                } => {
                    current = Some(Key {
                        typed_section: section.clone(),
                        section,
                        subsection,
                        name: String::new(),
                        typed_name: String::new(),
                    })
                }
                Line::Entry { name, value } => {
                    if let Some(section) = &current {
                        let key = Key {
                            typed_name: name.clone(),
                            name,
                            ..section.clone()
                        };
                        out.push((key.text(), value));
                    }
                }
                Line::Other => {}
            }
        }
        out
    }

    /// Every value of `key`, in order.
    pub fn get_all(&self, key: &Key) -> Vec<String> {
        let text = key.text();
        self.entries()
            .into_iter()
            .filter(|(k, _)| *k == text)
            .map(|(_, v)| v)
            .collect()
    }

    /// The last value of `key`.
    pub fn get(&self, key: &Key) -> Option<String> {
        self.get_all(key).pop()
    }

    /// Whether `key` is true (git's boolean spellings).
    pub fn get_bool(&self, key: &Key) -> Option<bool> {
        self.get(key)
            .map(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1"))
    }

    /// Lines of the section `key` is in, with whether each holds `key`.
    fn positions(&self, key: &Key) -> (Option<usize>, Vec<usize>) {
        let mut in_section = false;
        let mut section_end = None;
        let mut matches = Vec::new();
        for (i, line) in self.lines.iter().enumerate() {
            match classify(line) {
                Line::Header {
                    section,
                    subsection,
                } => {
                    in_section = section == key.section && subsection == key.subsection;
                    if in_section {
                        section_end = Some(i);
                    }
                }
                Line::Entry { name, .. } => {
                    if in_section {
                        section_end = Some(i);
                        if name == key.name {
                            matches.push(i);
                        }
                    }
                }
                Line::Other => {
                    if in_section {
                        section_end = Some(i);
                    }
                }
            }
        }
        (section_end, matches)
    }

    /// Sets `key` to `value`: the last line holding it is replaced, else
    /// the line goes at the end of its section (made if missing).
    pub fn set(&mut self, key: &Key, value: &str) {
        let line = format!("\t{} = {}", key.typed_name, quote(value));
        let (section_end, matches) = self.positions(key);
        match (matches.last(), section_end) {
            (Some(&i), _) => self.lines[i] = line,
            (None, Some(end)) => self.lines.insert(end + 1, line),
            (None, None) => {
                self.lines.push(key.header());
                self.lines.push(line);
            }
        }
    }

    /// Adds a line for `key` after its section's last (`--add`: the old
    /// values stay).
    pub fn add(&mut self, key: &Key, value: &str) {
        let line = format!("\t{} = {}", key.typed_name, quote(value));
        match self.positions(key).0 {
            Some(end) => self.lines.insert(end + 1, line),
            None => {
                self.lines.push(key.header());
                self.lines.push(line);
            }
        }
    }

    /// Removes every line holding `key` (the section's header stays, as
    /// git leaves it); false when there was none.
    pub fn unset(&mut self, key: &Key) -> bool {
        let (_, matches) = self.positions(key);
        for &i in matches.iter().rev() {
            self.lines.remove(i);
        }
        !matches.is_empty()
    }

    /// Removes a whole section (`remote "origin"`); false when missing.
    pub fn remove_section(&mut self, section: &str, subsection: Option<&str>) -> bool {
        let mut keep = Vec::new();
        let mut in_section = false;
        let mut found = false;
        for line in self.lines.drain(..) {
            if let Line::Header {
                section: s,
                subsection: sub,
            } = classify(&line)
            {
                in_section = s == section && sub.as_deref() == subsection;
                found |= in_section;
            }
            if !in_section {
                keep.push(line);
            }
        }
        self.lines = keep;
        found
    }
}

/// A value in git's boolean spellings (`true`/`yes`/`on`/`1`,
/// `false`/`no`/`off`/`0`/empty); `None` for anything else.
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" | "" => Some(false),
        _ => None,
    }
}
