//! What the program remembers per container, and the registry of containers.
//!
//! In production one program serves one container; in local runs one
//! program serves many, each named by the `x-stead-container` header with its
//! own workspace directory, state directory and [`ContainerState`]. Nothing
//! here survives a restart: a container's disk is wiped when it sleeps, and
//! a new `instance` id tells the Worker so.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use stead_sync::{ChunkHash, IgnoreRules};
use tokio::sync::Notify;

use crate::disk::{random_hex, Baseline};
use crate::error::ApiError;
use crate::scan::Report;
use crate::staged::Staged;

/// One container: its directories and its state.
pub struct Container {
    pub workspace: PathBuf,
    pub staged: Staged,
    state: Mutex<ContainerState>,
}

/// The command running now.
pub struct Running {
    pub id: String,
    pub cancel: Arc<Notify>,
}

pub struct ContainerState {
    pub instance: String,
    pub baseline: Baseline,
    pub ignore: IgnoreRules,
    /// Every exec id ever started (an id never runs twice).
    pub seen: HashSet<String>,
    pub running: Option<Running>,
    /// Reports not yet acknowledged, by exec id.
    pub pending: HashMap<String, Report>,
    /// Reports acknowledged (a repeated ack is answered, not refused).
    pub acked: HashSet<String>,
    /// Counts applied pushes; a report remembers the count it was made at.
    pub epoch: u64,
    /// The epoch at which a push last wrote each path, so that a late ack
    /// of an older report does not undo what a newer push put there.
    pub pushed_at: HashMap<String, u64>,
    /// Counts scans (see `Report::seq`).
    pub scans: u64,
}

impl Container {
    /// Creates the (empty) workspace and state directories.
    pub fn create(workspace: PathBuf, state_dir: &Path) -> io::Result<Container> {
        fs::create_dir_all(&workspace)?;
        let staged = Staged::new(state_dir.join("chunks"))?;
        Ok(Container {
            workspace,
            staged,
            state: Mutex::new(ContainerState {
                instance: random_hex(16)?,
                baseline: Baseline::new(),
                ignore: IgnoreRules::default(),
                seen: HashSet::new(),
                running: None,
                pending: HashMap::new(),
                acked: HashSet::new(),
                epoch: 0,
                pushed_at: HashMap::new(),
                scans: 0,
            }),
        })
    }

    /// Locks the state; a panic elsewhere while holding it does not make
    /// the container unusable (every change to the state is whole).
    pub fn lock(&self) -> MutexGuard<'_, ContainerState> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

impl ContainerState {
    /// Makes the baseline the snapshot of `exec`'s report for the paths it
    /// covered, except paths a push wrote after the report was made.
    pub fn ack(&mut self, exec: &str) -> Result<(), ApiError> {
        let Some(report) = self.pending.remove(exec) else {
            return if self.acked.contains(exec) {
                Ok(())
            } else {
                Err(ApiError::UnknownExec(exec.to_string()))
            };
        };
        for change in &report.changes {
            let path = &change.path;
            let overtaken = std::iter::once(path.as_str())
                .chain(crate::paths::ancestors(path))
                .any(|p| self.pushed_at.get(p).is_some_and(|&at| at > report.epoch));
            if overtaken {
                continue;
            }
            match report.snapshot.get(path) {
                Some(known) => {
                    self.baseline.insert(path.clone(), known.clone());
                }
                None => {
                    self.baseline.remove(path);
                }
            }
        }
        self.acked.insert(exec.to_string());
        // Older reports are superseded: whatever they reported that still
        // differs was reported again by this later scan. Acking one of them
        // later is then a no-op, not an error.
        let older: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, other)| other.seq < report.seq)
            .map(|(id, _)| id.clone())
            .collect();
        for id in older {
            self.pending.remove(&id);
            self.acked.insert(id);
        }
        Ok(())
    }

    /// Where a pending report of `exec` says `hash` can be read.
    pub fn chunk_source(&self, exec: &str, hash: &ChunkHash) -> Option<(String, usize)> {
        self.pending.get(exec)?.index.get(hash).cloned()
    }
}

/// All containers this program serves.
pub struct Registry {
    root: PathBuf,
    state: PathBuf,
    per_container: bool,
    containers: Mutex<HashMap<String, Arc<Container>>>,
}

/// The key of the one container when not serving per container.
const SINGLE: &str = "";

impl Registry {
    /// Wipes the root's and the state directory's contents: a container is
    /// fresh at each start, exactly as in production.
    pub fn start(root: PathBuf, state: PathBuf, per_container: bool) -> io::Result<Registry> {
        for dir in [&root, &state] {
            fs::create_dir_all(dir)?;
            empty_dir(dir)?;
        }
        let registry = Registry {
            root,
            state,
            per_container,
            containers: Mutex::new(HashMap::new()),
        };
        if !per_container {
            let single = Container::create(registry.root.clone(), &registry.state.join("single"))?;
            registry.lock().insert(SINGLE.to_string(), Arc::new(single));
        }
        Ok(registry)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Container>>> {
        self.containers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The container a request is for, created on first use per name.
    pub fn get(&self, header: Option<&str>) -> Result<Arc<Container>, ApiError> {
        if !self.per_container {
            return Ok(self.lock()[SINGLE].clone());
        }
        let name = header.ok_or_else(|| {
            ApiError::InvalidRequest(format!(
                "the {} header is required",
                stead_sync::CONTAINER_HEADER
            ))
        })?;
        crate::paths::check_container(name)?;
        let mut containers = self.lock();
        if let Some(container) = containers.get(name) {
            return Ok(container.clone());
        }
        let container = Container::create(self.root.join(name), &self.state.join(name))
            .map_err(|e| ApiError::io(format!("creating container {name}"), e))?;
        let container = Arc::new(container);
        containers.insert(name.to_string(), container.clone());
        Ok(container)
    }
}

/// Removes everything inside `dir`, keeping `dir` (it may be a mount point).
fn empty_dir(dir: &Path) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            fs::remove_dir_all(entry.path())?;
        } else {
            fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}
