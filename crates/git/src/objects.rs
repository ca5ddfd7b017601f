//! Commits, trees and tags as values: parsed with `gix-object`, written in
//! git's canonical form (a tree's entries sorted as git sorts them, a
//! commit's headers in git's order), so the ids match what git computes.

use gix_hash::ObjectId;
use gix_object::bstr::ByteSlice;

use crate::error::{Error, Result};
use crate::index::{MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_SYMLINK};

/// Who made a change, and when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    pub name: String,
    pub email: String,
    /// Seconds since the Unix epoch.
    pub seconds: i64,
    /// The author's time zone, minutes east of UTC.
    pub offset_minutes: i32,
}

impl Signature {
    /// `+0100`, as git writes and prints a zone.
    pub fn zone(&self) -> String {
        let sign = if self.offset_minutes < 0 { '-' } else { '+' };
        let minutes = self.offset_minutes.abs();
        format!("{sign}{:02}{:02}", minutes / 60, minutes % 60)
    }

    /// The header's value: `Name <email> 1700000000 +0000`.
    pub fn to_raw(&self) -> String {
        format!(
            "{} <{}> {} {}",
            self.name,
            self.email,
            self.seconds,
            self.zone()
        )
    }

    /// Reads a header's value; `None` when it is not one.
    pub fn parse(raw: &str) -> Option<Signature> {
        let (name, rest) = raw.split_once('<')?;
        let (email, time) = rest.rsplit_once('>')?;
        let mut time = time.split_whitespace();
        let seconds = time.next()?.parse().ok()?;
        let zone = time.next().unwrap_or("+0000");
        Some(Signature {
            name: name.trim_end().to_string(),
            email: email.to_string(),
            seconds,
            offset_minutes: parse_zone(zone)?,
        })
    }
}

/// `+0130` as minutes east of UTC.
pub fn parse_zone(zone: &str) -> Option<i32> {
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i32 = digits[..2].parse().ok()?;
    let minutes: i32 = digits[2..].parse().ok()?;
    Some(sign * (hours * 60 + minutes))
}

/// A commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub tree: ObjectId,
    pub parents: Vec<ObjectId>,
    pub author: Signature,
    pub committer: Signature,
    /// Headers past the committer (`encoding`, `gpgsig`), kept as read.
    pub extra: Vec<(String, String)>,
    pub message: String,
}

fn corrupt(what: &str) -> Error {
    Error::Corrupt(format!("corrupt {what}"))
}

impl Commit {
    pub fn parse(data: &[u8]) -> Result<Commit> {
        let parsed = gix_object::CommitRef::from_bytes(data, gix_hash::Kind::Sha1)
            .map_err(|_| corrupt("commit"))?;
        let signature = |raw: &[u8]| {
            Signature::parse(&String::from_utf8_lossy(raw)).ok_or_else(|| corrupt("commit"))
        };
        // The signatures as written, for their raw time and zone.
        let mut author = None;
        let mut committer = None;
        for line in data.lines() {
            if line.is_empty() {
                break;
            }
            if let Some(raw) = line.strip_prefix(b"author ") {
                author = Some(signature(raw)?);
            } else if let Some(raw) = line.strip_prefix(b"committer ") {
                committer = Some(signature(raw)?);
            }
        }
        let mut extra: Vec<(String, String)> = parsed
            .extra_headers
            .iter()
            .map(|(k, v)| (k.to_str_lossy().into_owned(), v.to_str_lossy().into_owned()))
            .collect();
        if let Some(encoding) = parsed.encoding {
            extra.insert(
                0,
                ("encoding".to_string(), encoding.to_str_lossy().into_owned()),
            );
        }
        Ok(Commit {
            tree: parsed.tree(),
            parents: parsed.parents().collect(),
            author: author.ok_or_else(|| corrupt("commit"))?,
            committer: committer.ok_or_else(|| corrupt("commit"))?,
            extra,
            message: parsed.message.to_str_lossy().into_owned(),
        })
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!("tree {}\n", self.tree);
        for parent in &self.parents {
            out.push_str(&format!("parent {parent}\n"));
        }
        out.push_str(&format!("author {}\n", self.author.to_raw()));
        out.push_str(&format!("committer {}\n", self.committer.to_raw()));
        for (key, value) in &self.extra {
            // Multi-line values continue with a leading space.
            out.push_str(&format!("{key} {}\n", value.replace('\n', "\n ")));
        }
        out.push('\n');
        out.push_str(&self.message);
        out.into_bytes()
    }

    /// The message's first paragraph joined into one line, as `--oneline`
    /// and `[branch id] subject` print it.
    pub fn subject(&self) -> String {
        self.message
            .trim_start_matches('\n')
            .split("\n\n")
            .next()
            .unwrap_or("")
            .lines()
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// An annotated tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub target: ObjectId,
    pub target_kind: gix_object::Kind,
    pub name: String,
    pub tagger: Option<Signature>,
    pub message: String,
}

impl Tag {
    pub fn parse(data: &[u8]) -> Result<Tag> {
        let parsed = gix_object::TagRef::from_bytes(data, gix_hash::Kind::Sha1)
            .map_err(|_| corrupt("tag"))?;
        let tagger = data
            .lines()
            .take_while(|l| !l.is_empty())
            .find_map(|l| l.strip_prefix(b"tagger "))
            .and_then(|raw| Signature::parse(&String::from_utf8_lossy(raw)));
        Ok(Tag {
            target: parsed.target(),
            target_kind: parsed.target_kind,
            name: parsed.name.to_str_lossy().into_owned(),
            tagger,
            message: parsed.message.to_str_lossy().into_owned(),
        })
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!(
            "object {}\ntype {}\ntag {}\n",
            self.target, self.target_kind, self.name
        );
        if let Some(tagger) = &self.tagger {
            out.push_str(&format!("tagger {}\n", tagger.to_raw()));
        }
        out.push('\n');
        out.push_str(&self.message);
        out.into_bytes()
    }
}

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// `0o100644`, `0o100755`, `0o120000`, `0o160000` or `0o40000`.
    pub mode: u32,
    pub name: String,
    pub id: ObjectId,
}

/// The mode of a subtree.
pub const MODE_TREE: u32 = 0o40000;

impl TreeEntry {
    pub fn is_tree(&self) -> bool {
        self.mode == MODE_TREE
    }
}

pub fn parse_tree(data: &[u8]) -> Result<Vec<TreeEntry>> {
    let tree =
        gix_object::TreeRef::from_bytes(data, gix_hash::Kind::Sha1).map_err(|_| corrupt("tree"))?;
    tree.entries
        .iter()
        .map(|e| {
            let mode = u32::from(e.mode.value());
            let mode = match mode {
                MODE_TREE | MODE_FILE | MODE_EXEC | MODE_SYMLINK | MODE_GITLINK => mode,
                // Old git wrote 100664 and the like: a regular file.
                m if m & 0o170000 == 0o100000 => MODE_FILE,
                _ => return Err(corrupt("tree entry mode")),
            };
            Ok(TreeEntry {
                mode,
                name: e.filename.to_str_lossy().into_owned(),
                id: e.oid.to_owned(),
            })
        })
        .collect()
}

/// A tree's bytes, its entries sorted as git sorts them (a subtree as if
/// its name ended in `/`).
pub fn tree_bytes(entries: &mut [TreeEntry]) -> Vec<u8> {
    let key = |e: &TreeEntry| {
        let mut k = e.name.as_bytes().to_vec();
        if e.is_tree() {
            k.push(b'/');
        }
        k
    };
    entries.sort_by_key(key);
    let mut out = Vec::new();
    for e in entries.iter() {
        out.extend_from_slice(format!("{:o} {}\0", e.mode, e.name).as_bytes());
        out.extend_from_slice(e.id.as_slice());
    }
    out
}
