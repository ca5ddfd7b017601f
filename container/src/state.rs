//! What the program remembers per container, and the registry of containers.
//!
//! In production one program serves one container; in local runs one
//! program serves many, each named by the `x-stead-container` header with its
//! own workspace directory, state directory and [`ContainerState`]. Nothing
//! here survives a restart: a container's disk is wiped when it sleeps, and
//! a new `instance` id tells the Worker so.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use stead_sync::{ChunkHash, IgnoreRules};

use crate::beneath::Dir;
use crate::confine::{Confinement, Isolation};
use crate::disk::{random_hex, Baseline};
use crate::error::ApiError;
use crate::exec::StopSignal;
use crate::ids::ExecIds;
use crate::layout::Layout;
use crate::outlog::OutputLog;
use crate::procs::Processes;
use crate::scan::{Report, Workspace};
use crate::staged::Staged;
use crate::terminal::Terminals;
use crate::trust::Trust;

/// Reports kept unacknowledged at most: each scan reports everything that
/// still differs, so a newer report covers what an older one said.
const MAX_PENDING: usize = 8;

/// One container: its directories and its state.
pub struct Container {
    pub workspace: PathBuf,
    /// Which names at the workspace's root are the system's.
    pub layout: Arc<Layout>,
    pub staged: Staged,
    /// Outside the workspace: a confined command's `/tmp`, `/var/tmp` and
    /// `/run/lock`, kept while the container lives (see [`crate::confine`]).
    pub scratch: PathBuf,
    /// Where output logs live (see [`crate::outlog`]).
    pub logs: PathBuf,
    /// Long-running processes (see [`crate::procs`]).
    pub processes: Processes,
    /// Terminal sessions (see [`crate::terminal`]).
    pub terminals: Terminals,
    /// How commands are run, and who owns what the program writes.
    pub confinement: Arc<Confinement>,
    /// The machine's trust store, on the computer's own machine only.
    pub trust: Option<Trust>,
    /// Shared with the registry: set when the program began to shut down.
    stopping: Arc<AtomicBool>,
    state: Mutex<ContainerState>,
}

/// The command running now.
pub struct Running {
    pub id: String,
    pub stop: Arc<StopSignal>,
}

pub struct ContainerState {
    pub instance: String,
    pub baseline: Baseline,
    pub ignore: IgnoreRules,
    /// Exec ids started (an id never runs twice), bounded.
    pub seen: ExecIds,
    pub running: Option<Running>,
    /// Top-level workspace names the system's directories stand in for:
    /// the last pushes had entries there, which commands cannot see.
    pub hidden: std::collections::BTreeSet<String>,
    /// Reports not yet acknowledged, by exec id (at most [`MAX_PENDING`]).
    pub pending: HashMap<String, Report>,
    /// The output logs of the running exec and of those whose reports are
    /// pending: kept until acknowledged, so a client can read them again
    /// from any offset.
    pub logs: HashMap<String, Arc<OutputLog>>,
    /// Reports acknowledged or superseded (a repeated ack is answered, not
    /// refused), bounded.
    pub acked: ExecIds,
    /// Counts applied pushes; a report remembers the count it was made at.
    pub epoch: u64,
    /// The epoch at which a push last wrote each path, so that a late ack
    /// of an older report does not undo what a newer push put there.
    pub pushed_at: HashMap<String, u64>,
    /// Counts scans (see `Report::seq`).
    pub scans: u64,
    /// Set when the program began to shut down: the scan count then, so
    /// the reports made after it (of the commands the shutdown stopped)
    /// can be waited for.
    pub shutdown_at_scan: Option<u64>,
    /// The last environment pack, whose chunks can be fetched (see
    /// [`crate::environment`]).
    pub environment: Option<crate::environment::Pack>,
}

impl Container {
    /// Creates the (empty) workspace and state directories; the workspace
    /// belongs to the user commands run as.
    pub fn create(
        workspace: PathBuf,
        layout: Arc<Layout>,
        state_dir: &Path,
        confinement: Arc<Confinement>,
        stopping: Arc<AtomicBool>,
    ) -> io::Result<Container> {
        let staged = Staged::new(state_dir.join("chunks"))?;
        let scratch = state_dir.join("scratch");
        if confinement.isolation == Isolation::Namespaces {
            fs::create_dir_all(&workspace)?;
            confinement.own(&workspace)?;
            // Like a machine's: anyone may write, only the owner removes.
            for dir in ["tmp", "var/tmp", "run/lock"] {
                let dir = scratch.join(dir);
                fs::create_dir_all(&dir)?;
                fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777))?;
            }
        }
        seed_user_dir(&user_dir(confinement.isolation, &scratch), &confinement)?;
        let logs = state_dir.join("logs");
        fs::create_dir_all(&logs)?;
        Ok(Container {
            workspace,
            layout,
            staged,
            scratch,
            logs,
            processes: Processes::default(),
            terminals: Terminals::default(),
            trust: (confinement.isolation == Isolation::Container).then(Trust::machine),
            confinement,
            stopping,
            state: Mutex::new(ContainerState {
                instance: random_hex(16)?,
                baseline: Baseline::new(),
                ignore: IgnoreRules::default(),
                seen: ExecIds::new(),
                running: None,
                hidden: Default::default(),
                pending: HashMap::new(),
                logs: HashMap::new(),
                acked: ExecIds::new(),
                epoch: 0,
                pushed_at: HashMap::new(),
                scans: 0,
                shutdown_at_scan: None,
                environment: None,
            }),
        })
    }

    /// Where the commands' per-user directory is on this program's disk.
    pub fn user_dir(&self) -> PathBuf {
        user_dir(self.confinement.isolation, &self.scratch)
    }

    /// Whether the program is shutting down: nothing new may start.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// The workspace's root directory, opened (see [`crate::beneath`]).
    pub fn open_root(&self) -> io::Result<Dir> {
        Dir::root(
            &self.workspace,
            self.confinement.owner.map(|owner| owner.uid),
        )
    }

    /// Scans the workspace against the baseline now (see [`crate::scan`]),
    /// numbering the report after the scans before it.
    pub fn scan(&self, state: &mut ContainerState) -> io::Result<Report> {
        // A command may have removed the workspace directory itself.
        if !self.workspace.exists() && fs::create_dir_all(&self.workspace).is_ok() {
            let _ = self.confinement.own(&self.workspace);
        }
        state.scans += 1;
        let workspace = Workspace {
            root: self.open_root()?,
            layout: &self.layout,
            hidden: &state.hidden,
        };
        crate::scan::scan(
            workspace,
            &mut state.baseline,
            &state.ignore,
            state.epoch,
            state.scans,
        )
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
    /// Refuses what was sent for another instance of this computer (the
    /// workspace's view of it is stale: it must push the full manifest).
    pub fn check_instance(&self, sent: &str) -> Result<(), ApiError> {
        if sent == self.instance {
            return Ok(());
        }
        Err(ApiError::StaleInstance {
            pushed: sent.to_string(),
            current: self.instance.clone(),
        })
    }

    /// Keeps `report` as exec `id`'s, dropping the oldest pending reports
    /// beyond [`MAX_PENDING`] (acking one of those later is a no-op).
    pub fn keep_report(&mut self, id: &str, report: Report) {
        self.pending.insert(id.to_string(), report);
        while self.pending.len() > MAX_PENDING {
            let oldest = self
                .pending
                .iter()
                .min_by_key(|(_, report)| report.seq)
                .map(|(id, _)| id.clone())
                .expect("not empty");
            self.pending.remove(&oldest);
            self.logs.remove(&oldest);
            self.acked.insert(&oldest);
        }
    }

    /// Makes the baseline the snapshot of `exec`'s report for the paths it
    /// covered, except paths a push wrote after the report was made and
    /// those the workspace `left_out` (see `stead_sync::live`).
    pub fn ack(&mut self, exec: &str, left_out: &[String]) -> Result<(), ApiError> {
        let Some(report) = self.pending.remove(exec) else {
            self.logs.remove(exec);
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
            if overtaken || left_out.contains(path) {
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
        self.acked.insert(exec);
        self.logs.remove(exec);
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
            self.logs.remove(&id);
            self.acked.insert(&id);
        }
        Ok(())
    }

    /// Whether the file at workspace path `path` (below `root`) still has
    /// the stat data `exec`'s report saw.
    pub fn unchanged_since_report(&self, exec: &str, path: &str, root: &Dir) -> bool {
        let seen = self
            .pending
            .get(exec)
            .and_then(|report| report.snapshot.get(path))
            .and_then(|known| known.stat);
        let now = root.parent(path).and_then(|(dir, name)| dir.meta(name));
        match (seen, now) {
            (Some(seen), Ok(Some(meta))) => meta.stat == seen,
            _ => false,
        }
    }

    /// Where a pending report of `exec` says `hash` can be read.
    pub fn chunk_source(&self, exec: &str, hash: &ChunkHash) -> Option<(String, usize)> {
        self.pending.get(exec)?.index.get(hash).cloned()
    }
}

/// All containers this program serves.
pub struct Registry {
    root: PathBuf,
    layout: Arc<Layout>,
    state: PathBuf,
    per_container: bool,
    confinement: Arc<Confinement>,
    containers: Mutex<HashMap<String, Arc<Container>>>,
    stopping: Arc<AtomicBool>,
}

/// The key of the one container when not serving per container.
const SINGLE: &str = "";

impl Registry {
    /// Wipes the root's and the state directory's contents: a container is
    /// fresh at each start, exactly as in production. When the root is the
    /// machine's own, nothing there is touched: all it holds now is the
    /// system's (see [`Layout::machine`]).
    pub fn start(
        root: PathBuf,
        state: PathBuf,
        per_container: bool,
        confinement: Confinement,
    ) -> io::Result<Registry> {
        fs::create_dir_all(&state)?;
        empty_dir(&state)?;
        let layout = match confinement.isolation {
            Isolation::Container => {
                confinement.prepare_machine_root(&root)?;
                Layout::machine(&root)?
            }
            Isolation::Namespaces => {
                fs::create_dir_all(&root)?;
                empty_dir(&root)?;
                Layout::standard()
            }
        };
        let registry = Registry {
            root,
            layout: Arc::new(layout),
            state,
            per_container,
            confinement: Arc::new(confinement),
            containers: Mutex::new(HashMap::new()),
            stopping: Arc::new(AtomicBool::new(false)),
        };
        if !per_container {
            let single = Container::create(
                registry.root.clone(),
                registry.layout.clone(),
                &registry.state.join("single"),
                registry.confinement.clone(),
                registry.stopping.clone(),
            )?;
            registry.lock().insert(SINGLE.to_string(), Arc::new(single));
        }
        Ok(registry)
    }

    /// Begins the shutdown: refuses new commands and pushes from now on
    /// and stops every running command (its output and report still go
    /// out, see [`crate::exec`]).
    pub fn begin_shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for container in self.lock().values() {
            let mut state = container.lock();
            state.shutdown_at_scan = Some(state.scans);
            if let Some(running) = &state.running {
                running.stop.shutdown();
            }
            drop(state);
            container.processes.stop_all();
            container.terminals.close_all();
        }
    }

    /// Whether every command the shutdown stopped has ended and its report
    /// has been acknowledged.
    pub fn drained(&self) -> bool {
        self.lock().values().all(|container| {
            let state = container.lock();
            let since = state.shutdown_at_scan.unwrap_or(u64::MAX);
            state.running.is_none() && state.pending.values().all(|r| r.seq <= since)
        })
    }

    /// The system names beyond the fixed ones (for the start-up line).
    pub fn extra_system_names(&self) -> Vec<String> {
        self.layout.extra()
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
        let container = Container::create(
            self.root.join(name),
            self.layout.clone(),
            &self.state.join(name),
            self.confinement.clone(),
            self.stopping.clone(),
        )
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

/// The commands' per-user directory, as they see it: in the computer's
/// scratch, not the workspace. Their home is the workspace's root (`~` is
/// `/` on both backends), so what programs keep per user (`pip install
/// --user` into `~/.local`, pip's and npm's caches, `git config --global`)
/// would land at the workspace's root, be synced into the agent's database
/// with every command and fill its quota; the environment sends it here
/// instead (see `exec::command`). It is the computer's, so it goes with it
/// when the computer is released.
pub const USER_DIR: &str = stead_sync::environment::USER_DIR;

/// Where [`USER_DIR`] is on the program's disk: the machine's own, or in
/// the scratch directory that confined commands see as `/var/tmp`.
fn user_dir(isolation: Isolation, scratch: &Path) -> PathBuf {
    match isolation {
        Isolation::Container => PathBuf::from(USER_DIR),
        Isolation::Namespaces => scratch.join(&USER_DIR[1..]),
    }
}

/// What a fresh computer's global git configuration (in [`USER_DIR`])
/// says: an identity, so `git commit` works without set-up (a
/// repository's own config, `git config user.name ...` kept in the
/// workspace's `.git/config`, overrides it); and that every repository is
/// safe: the workspace's files belong to the computer, not to the
/// commands' user, and git's ownership check (for machines that users
/// share) would refuse every repository in it as "dubious".
const GIT_CONFIG: &str =
    "[user]\n\tname = stead agent\n\temail = agent@stead.invalid\n[safe]\n\tdirectory = *\n";

/// Makes the commands' per-user directory at `dir` (see [`USER_DIR`]),
/// owned by their user and private to it, with its global git
/// configuration. Runs before any
/// command does, so nothing a command planted is in the way; a home that
/// is there already (the program restarted in a live container) is kept
/// as it is.
fn seed_user_dir(dir: &Path, confinement: &Confinement) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => confinement.own(dir)?,
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            if !fs::symlink_metadata(dir)?.is_dir() {
                return Err(io::Error::other(format!(
                    "{} is there and is not a directory",
                    dir.display()
                )));
            }
        }
        Err(error) => return Err(error),
    }
    seed_git_config(&dir.join(".gitconfig"), confinement)
}

/// Writes the global git configuration at `path` for the commands' user,
/// unless something is there already: never through a link a command
/// planted, and owned by that user (as a home's dotfile is), so `git config
/// --global` can rewrite it.
fn seed_git_config(path: &Path, confinement: &Confinement) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let created = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o644)
        .open(path);
    let mut file = match created {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => return Ok(()),
        Err(error) => return Err(error),
    };
    file.write_all(GIT_CONFIG.as_bytes())?;
    confinement.own_file(&file)
}
