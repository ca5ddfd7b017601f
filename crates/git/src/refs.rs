//! References: `HEAD`, loose refs under `refs/`, and `packed-refs` (what
//! `git pack-refs` and a clone write: `<id> <name>` lines, a `^<id>` line
//! after an annotated tag giving what it points at). A loose ref overrides
//! a packed one of the same name; deleting a ref removes both.

use std::collections::BTreeMap;

use gix_hash::ObjectId;

use crate::error::{At, Error, Result};
use crate::files::{self, FileError, Files, Kind};

/// Where `HEAD` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// On a branch (`ref: refs/heads/main`), which may not exist yet.
    Branch(String),
    /// Detached at a commit.
    Detached(ObjectId),
}

impl Head {
    /// The branch's short name (`main`), when on one.
    pub fn branch(&self) -> Option<&str> {
        match self {
            Head::Branch(name) => Some(name.strip_prefix("refs/heads/").unwrap_or(name)),
            Head::Detached(_) => None,
        }
    }
}

/// The references of one repository.
pub struct Refs<'a> {
    files: &'a dyn Files,
    git_dir: String,
}

/// How deep symbolic refs are followed (git's own limit).
const MAX_SYMREF_DEPTH: usize = 5;

impl<'a> Refs<'a> {
    pub fn new(files: &'a dyn Files, git_dir: &str) -> Self {
        Refs {
            files,
            git_dir: git_dir.to_string(),
        }
    }

    fn path(&self, name: &str) -> String {
        files::join(&self.git_dir, name)
    }

    pub fn head(&self) -> Result<Head> {
        let path = self.path("HEAD");
        let text = self.files.read(&path).at(&path)?;
        let text = String::from_utf8_lossy(&text);
        let text = text.trim_end();
        if let Some(target) = text.strip_prefix("ref: ") {
            return Ok(Head::Branch(target.trim().to_string()));
        }
        ObjectId::from_hex(text.as_bytes())
            .map(Head::Detached)
            .map_err(|_| Error::Corrupt(format!("invalid HEAD: {text}")))
    }

    /// Points `HEAD` at a branch (`refs/heads/NAME`).
    pub fn set_head_branch(&self, full_name: &str) -> Result<()> {
        let path = self.path("HEAD");
        self.files
            .write(&path, format!("ref: {full_name}\n").as_bytes())
            .at(&path)
    }

    /// Detaches `HEAD` at `id`.
    pub fn set_head_detached(&self, id: &ObjectId) -> Result<()> {
        let path = self.path("HEAD");
        self.files
            .write(&path, format!("{id}\n").as_bytes())
            .at(&path)
    }

    /// The commit `HEAD` resolves to; `None` on a branch with no commits.
    pub fn head_id(&self) -> Result<Option<ObjectId>> {
        match self.head()? {
            Head::Detached(id) => Ok(Some(id)),
            Head::Branch(name) => self.resolve(&name),
        }
    }

    fn packed(&self) -> Result<BTreeMap<String, ObjectId>> {
        let path = self.path("packed-refs");
        let mut refs = BTreeMap::new();
        let Some(text) = files::read_optional(self.files, &path).at(&path)? else {
            return Ok(refs);
        };
        for line in String::from_utf8_lossy(&text).lines() {
            if line.starts_with('#') || line.starts_with('^') || line.is_empty() {
                continue;
            }
            let (hex, name) = line
                .split_once(' ')
                .ok_or_else(|| Error::Corrupt(format!("unexpected line in {path}: {line}")))?;
            let id = ObjectId::from_hex(hex.as_bytes())
                .map_err(|_| Error::Corrupt(format!("unexpected line in {path}: {line}")))?;
            refs.insert(name.to_string(), id);
        }
        Ok(refs)
    }

    /// The id the ref `name` (`refs/heads/main`, `HEAD`) points at,
    /// symbolic refs followed; `None` if it does not exist.
    pub fn resolve(&self, name: &str) -> Result<Option<ObjectId>> {
        let mut name = name.to_string();
        for _ in 0..MAX_SYMREF_DEPTH {
            let path = self.path(&name);
            match self.files.read(&path) {
                Ok(text) => {
                    let text = String::from_utf8_lossy(&text);
                    let text = text.trim_end();
                    if let Some(target) = text.strip_prefix("ref: ") {
                        name = target.trim().to_string();
                        continue;
                    }
                    return ObjectId::from_hex(text.as_bytes())
                        .map(Some)
                        .map_err(|_| Error::Corrupt(format!("invalid ref {name}: {text}")));
                }
                Err(FileError::NotFound) => return Ok(self.packed()?.get(&name).copied()),
                // A directory where the ref would be (`refs/heads` itself).
                Err(_) if matches!(self.files.stat(&path), Ok(m) if m.kind == Kind::Dir) => {
                    return Ok(None)
                }
                Err(e) => return Err(e).at(&path),
            }
        }
        Err(Error::Corrupt(format!("symbolic ref loop at {name}")))
    }

    /// Sets the ref `name` to `id`.
    pub fn write(&self, name: &str, id: &ObjectId) -> Result<()> {
        let path = self.path(name);
        self.files
            .write(&path, format!("{id}\n").as_bytes())
            .at(&path)
    }

    /// Deletes the ref `name`, loose and packed.
    pub fn delete(&self, name: &str) -> Result<()> {
        let path = self.path(name);
        match self.files.remove(&path) {
            Ok(()) | Err(FileError::NotFound) => {}
            Err(e) => return Err(e).at(&path),
        }
        let packed_path = self.path("packed-refs");
        if let Some(text) = files::read_optional(self.files, &packed_path).at(&packed_path)? {
            let text = String::from_utf8_lossy(&text);
            let mut kept = String::new();
            let mut dropping = false;
            let mut changed = false;
            for line in text.lines() {
                if line.starts_with('^') && dropping {
                    continue;
                }
                dropping = line.split_once(' ').map(|(_, n)| n) == Some(name);
                if dropping {
                    changed = true;
                    continue;
                }
                kept.push_str(line);
                kept.push('\n');
            }
            if changed {
                self.files
                    .write(&packed_path, kept.as_bytes())
                    .at(&packed_path)?;
            }
        }
        Ok(())
    }

    /// Every ref under `prefix` (`refs/heads/`), by full name, loose and
    /// packed together.
    pub fn list(&self, prefix: &str) -> Result<BTreeMap<String, ObjectId>> {
        let mut refs: BTreeMap<String, ObjectId> = self
            .packed()?
            .into_iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .collect();
        let dir = prefix.trim_end_matches('/');
        self.walk(dir, &mut refs)?;
        Ok(refs)
    }

    fn walk(&self, dir: &str, refs: &mut BTreeMap<String, ObjectId>) -> Result<()> {
        let path = self.path(dir);
        let entries = match self.files.list(&path) {
            Ok(entries) => entries,
            Err(FileError::NotFound) => return Ok(()),
            Err(e) => return Err(e).at(&path),
        };
        for entry in entries {
            let name = format!("{dir}/{}", entry.name);
            match entry.meta.kind {
                Kind::Dir => self.walk(&name, refs)?,
                _ => {
                    if let Some(id) = self.resolve(&name)? {
                        refs.insert(name, id);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Whether `name` is a valid branch or tag name (`git check-ref-format`'s
/// rules, for one component path).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.starts_with('/')
        && !name.ends_with('/')
        && !name.ends_with('.')
        && !name.ends_with(".lock")
        && !name.contains("..")
        && !name.contains("//")
        && !name.contains("@{")
        && name != "@"
        && !name.split('/').any(|c| c.starts_with('.'))
        && !name
            .chars()
            .any(|c| c.is_ascii_control() || " ~^:?*[\\".contains(c))
}
