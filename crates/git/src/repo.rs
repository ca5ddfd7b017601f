//! One repository: its worktree, its `.git`, and what git derives from
//! them (the index, HEAD's tree, revisions).

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashSet};

use gix_hash::ObjectId;
use gix_object::Kind;

use crate::config::{Config, Key};
use crate::error::{At, Error, Result};
use crate::files::{self, FileError, Files};
use crate::index::Index;
use crate::objects::{parse_tree, tree_bytes, Commit, Tag, TreeEntry, MODE_TREE};
use crate::odb::Odb;
use crate::refs::Refs;

/// A repository with a worktree.
pub struct Repo<'a> {
    pub files: &'a dyn Files,
    /// The worktree's root (`/` or `/project`).
    pub worktree: String,
    /// Its `.git` directory.
    pub git_dir: String,
    pub odb: Odb<'a>,
    pub refs: Refs<'a>,
    /// The commits `.git/shallow` names (a shallow clone's boundary),
    /// read when a commit is first asked for.
    shallow: OnceCell<HashSet<ObjectId>>,
}

/// A flattened tree: path → (mode, blob id).
pub type Flat = BTreeMap<String, (u32, ObjectId)>;

/// The parent directory of an absolute path (`/` for `/a`).
pub fn parent(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

impl<'a> Repo<'a> {
    pub fn open(files: &'a dyn Files, worktree: &str) -> Repo<'a> {
        let git_dir = files::join(worktree, ".git");
        Repo {
            files,
            worktree: worktree.to_string(),
            odb: Odb::new(files, &git_dir),
            refs: Refs::new(files, &git_dir),
            git_dir,
            shallow: OnceCell::new(),
        }
    }

    /// The repository `cwd` is in: the nearest directory up from it with a
    /// `.git` directory holding `HEAD`.
    pub fn discover(files: &'a dyn Files, cwd: &str) -> Option<Repo<'a>> {
        let mut dir = Some(cwd);
        while let Some(d) = dir {
            let head = files::join(&files::join(d, ".git"), "HEAD");
            if files.stat(&head).is_ok() {
                return Some(Repo::open(files, d));
            }
            dir = parent(d);
        }
        None
    }

    /// Makes the skeleton `git init` makes in `dir`; true when a
    /// repository was there already (then only missing parts are added).
    pub fn init(files: &'a dyn Files, dir: &str, branch: &str) -> Result<bool> {
        let git_dir = files::join(dir, ".git");
        let head = files::join(&git_dir, "HEAD");
        let existed = files.stat(&head).is_ok();
        for sub in [
            "objects/info",
            "objects/pack",
            "refs/heads",
            "refs/tags",
            "info",
            "hooks",
        ] {
            let path = files::join(&git_dir, sub);
            files.mkdir_all(&path).at(&path)?;
        }
        let seed = |name: &str, text: String| -> Result<()> {
            let path = files::join(&git_dir, name);
            match files.stat(&path) {
                Ok(_) => Ok(()),
                Err(FileError::NotFound) => files.write(&path, text.as_bytes()).at(&path),
                Err(e) => Err(e).at(&path),
            }
        };
        seed("HEAD", format!("ref: refs/heads/{branch}\n"))?;
        seed(
            "config",
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n".to_string(),
        )?;
        seed(
            "description",
            "Unnamed repository; edit this file 'description' to name the repository.\n"
                .to_string(),
        )?;
        seed(
            "info/exclude",
            "# git ls-files --others --exclude-from=.git/info/exclude\n# Lines that start with '#' are comments.\n# For a project mostly in C, the following would be a good set of\n# exclude patterns (uncomment them if you want to use them):\n# *.[oa]\n# *~\n".to_string(),
        )?;
        Ok(existed)
    }

    /// The absolute path of a worktree-relative one.
    pub fn abs(&self, rel: &str) -> String {
        if rel.is_empty() {
            self.worktree.clone()
        } else {
            files::join(&self.worktree, rel)
        }
    }

    fn git_path(&self, name: &str) -> String {
        files::join(&self.git_dir, name)
    }

    pub fn config(&self) -> Result<Config> {
        let path = self.git_path("config");
        let text = files::read_optional(self.files, &path).at(&path)?;
        Ok(Config::parse(&String::from_utf8_lossy(
            &text.unwrap_or_default(),
        )))
    }

    pub fn save_config(&self, config: &Config) -> Result<()> {
        let path = self.git_path("config");
        self.files.write(&path, config.text().as_bytes()).at(&path)
    }

    /// A config value from the repository's file.
    pub fn config_value(&self, key: &str) -> Result<Option<String>> {
        Ok(self.config()?.get(&Key::parse(key)?))
    }

    /// The index, and when it was written (for racy entries); an empty
    /// one when there is no index yet.
    pub fn index(&self) -> Result<(Index, Option<i64>)> {
        let path = self.git_path("index");
        match self.files.read(&path) {
            Ok(data) => {
                let written = self.files.stat(&path).ok().map(|m| m.mtime_ms);
                Ok((Index::parse(&data)?, written))
            }
            Err(FileError::NotFound) => Ok((Index::default(), None)),
            Err(e) => Err(e).at(&path),
        }
    }

    pub fn save_index(&self, index: &Index) -> Result<()> {
        let path = self.git_path("index");
        self.files.write(&path, &index.to_bytes()).at(&path)
    }

    /// Commit `id`; one on the shallow boundary has no parents here, as
    /// git grafts it (its parents were never fetched).
    pub fn commit(&self, id: &ObjectId) -> Result<Commit> {
        let mut commit = Commit::parse(&self.odb.read_kind(id, Kind::Commit)?)?;
        if self.shallow()?.contains(id) {
            commit.parents.clear();
        }
        Ok(commit)
    }

    /// The shallow boundary (empty for a full clone).
    pub fn shallow(&self) -> Result<&HashSet<ObjectId>> {
        if let Some(set) = self.shallow.get() {
            return Ok(set);
        }
        let path = self.git_path("shallow");
        let text = files::read_optional(self.files, &path).at(&path)?;
        let set = String::from_utf8_lossy(&text.unwrap_or_default())
            .lines()
            .filter_map(|line| ObjectId::from_hex(line.trim().as_bytes()).ok())
            .collect();
        Ok(self.shallow.get_or_init(|| set))
    }

    pub fn tree(&self, id: &ObjectId) -> Result<Vec<TreeEntry>> {
        parse_tree(&self.odb.read_kind(id, Kind::Tree)?)
    }

    /// Every blob (and submodule) under tree `id`, by path.
    pub fn flatten(&self, id: &ObjectId) -> Result<Flat> {
        let mut out = Flat::new();
        self.flatten_into(id, "", &mut out)?;
        Ok(out)
    }

    fn flatten_into(&self, id: &ObjectId, prefix: &str, out: &mut Flat) -> Result<()> {
        for entry in self.tree(id)? {
            let path = format!("{prefix}{}", entry.name);
            if entry.is_tree() {
                self.flatten_into(&entry.id, &format!("{path}/"), out)?;
            } else {
                out.insert(path, (entry.mode, entry.id));
            }
        }
        Ok(())
    }

    /// The tree of commit `id`, flattened.
    pub fn commit_files(&self, id: Option<&ObjectId>) -> Result<Flat> {
        match id {
            Some(id) => self.flatten(&self.commit(id)?.tree),
            None => Ok(Flat::new()),
        }
    }

    /// Writes the trees for a set of paths (an index's stage 0) and
    /// returns the root's id.
    pub fn write_tree(&self, files: &Flat) -> Result<ObjectId> {
        // Group by directory, deepest first, so each subtree's id is known
        // before its parent is written.
        let mut dirs: BTreeMap<String, Vec<TreeEntry>> = BTreeMap::new();
        dirs.insert(String::new(), Vec::new());
        for (path, (mode, id)) in files {
            let (dir, name) = match path.rfind('/') {
                Some(i) => (&path[..i], &path[i + 1..]),
                None => ("", path.as_str()),
            };
            let mut d = dir;
            while !d.is_empty() {
                dirs.entry(d.to_string()).or_default();
                d = d.rfind('/').map_or("", |i| &d[..i]);
            }
            dirs.entry(dir.to_string()).or_default().push(TreeEntry {
                mode: *mode,
                name: name.to_string(),
                id: *id,
            });
        }
        let mut order: Vec<String> = dirs.keys().cloned().collect();
        order.sort_by_key(|d| {
            std::cmp::Reverse(if d.is_empty() {
                0
            } else {
                d.matches('/').count() + 1
            })
        });
        let mut root = None;
        for dir in order {
            let mut entries = dirs.remove(&dir).unwrap_or_default();
            let id = self.odb.write(Kind::Tree, &tree_bytes(&mut entries))?;
            if dir.is_empty() {
                root = Some(id);
            } else {
                let (parent, name) = match dir.rfind('/') {
                    Some(i) => (dir[..i].to_string(), dir[i + 1..].to_string()),
                    None => (String::new(), dir.clone()),
                };
                dirs.entry(parent).or_default().push(TreeEntry {
                    mode: MODE_TREE,
                    name,
                    id,
                });
            }
        }
        Ok(root.expect("the root is written last"))
    }

    /// The index's stage-0 entries as a flat tree.
    pub fn index_files(index: &Index) -> Flat {
        index
            .entries
            .iter()
            .filter(|e| e.stage == 0)
            .map(|e| (e.path.clone(), (e.mode, e.id)))
            .collect()
    }

    /// Follows tags to the object they name.
    pub fn peel(&self, id: ObjectId) -> Result<(Kind, ObjectId)> {
        let mut id = id;
        for _ in 0..16 {
            let (kind, data) = self.odb.read(&id)?;
            if kind != Kind::Tag {
                return Ok((kind, id));
            }
            id = Tag::parse(&data)?.target;
        }
        Err(Error::Corrupt(format!("tag chain too long at {id}")))
    }

    /// Resolves a name git would take for an object: a full or abbreviated
    /// id, `HEAD`/`@`, a ref, branch, tag or remote-tracking branch, with
    /// `~N`, `^N` and `^{commit}`/`^{tree}` suffixes.
    pub fn rev_parse(&self, spec: &str) -> Result<Option<ObjectId>> {
        let bad = || {
            Error::Fatal(format!("ambiguous argument '{spec}': unknown revision or path not in the working tree.\nUse '--' to separate paths from revisions, like this:\n'git <command> [<revision>...] -- [<file>...]'"))
        };
        // Split off the suffixes, innermost first.
        let base_end = spec.find(['~', '^']).unwrap_or(spec.len());
        let (base, mut rest) = spec.split_at(base_end);
        let Some(mut id) = self.resolve_name(base)? else {
            return Ok(None);
        };
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("^{") {
                let end = after.find('}').ok_or_else(bad)?;
                let want = &after[..end];
                rest = &after[end + 1..];
                let (kind, peeled) = self.peel(id)?;
                id = match want {
                    "" => peeled,
                    "commit" if kind == Kind::Commit => peeled,
                    "tree" => match kind {
                        Kind::Commit => self.commit(&peeled)?.tree,
                        Kind::Tree => peeled,
                        _ => return Err(bad()),
                    },
                    _ => return Err(bad()),
                };
                continue;
            }
            let op = rest.as_bytes()[0];
            let digits: String = rest[1..].chars().take_while(char::is_ascii_digit).collect();
            rest = &rest[1 + digits.len()..];
            let n: usize = if digits.is_empty() {
                1
            } else {
                digits.parse().map_err(|_| bad())?
            };
            let (_, commit_id) = self.peel(id)?;
            id = commit_id;
            if op == b'~' {
                for _ in 0..n {
                    let Some(parent) = self.commit(&id)?.parents.first().copied() else {
                        return Ok(None);
                    };
                    id = parent;
                }
            } else if n > 0 {
                let Some(parent) = self.commit(&id)?.parents.get(n - 1).copied() else {
                    return Ok(None);
                };
                id = parent;
            }
        }
        Ok(Some(id))
    }

    fn resolve_name(&self, name: &str) -> Result<Option<ObjectId>> {
        if name == "HEAD" || name == "@" || name.is_empty() {
            return self.refs.head_id();
        }
        for candidate in [
            name.to_string(),
            format!("refs/{name}"),
            format!("refs/tags/{name}"),
            format!("refs/heads/{name}"),
            format!("refs/remotes/{name}"),
            format!("refs/remotes/{name}/HEAD"),
        ] {
            if candidate.starts_with("refs/")
                || candidate == name && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            {
                if let Some(id) = self.refs.resolve(&candidate)? {
                    return Ok(Some(id));
                }
            }
        }
        if name.len() >= 4 && name.len() <= 40 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
            let prefix = name.to_ascii_lowercase();
            let found = self.odb.ids_with_prefix(&prefix, 2)?;
            return match found.as_slice() {
                [one] => Ok(Some(*one)),
                [] => Ok(None),
                _ => Err(Error::Fatal(format!(
                    "ambiguous argument '{name}': short object ID {name} is ambiguous"
                ))),
            };
        }
        Ok(None)
    }

    /// The commit a revision names (a tag peeled); git's message when it
    /// names none.
    pub fn commit_of(&self, spec: &str) -> Result<ObjectId> {
        let id = self.rev_parse(spec)?.ok_or_else(|| {
            Error::Fatal(format!("ambiguous argument '{spec}': unknown revision or path not in the working tree.\nUse '--' to separate paths from revisions, like this:\n'git <command> [<revision>...] -- [<file>...]'"))
        })?;
        match self.peel(id)? {
            (Kind::Commit, id) => Ok(id),
            _ => Err(Error::Fatal(format!("{spec}: not a commit"))),
        }
    }
}
