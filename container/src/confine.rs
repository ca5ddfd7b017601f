//! How a command runs: as whom, and seeing what.
//!
//! Every command sees its workspace as `/` (see [`crate::layout`]), with
//! the system's directories at the system names. Two boundaries, for the
//! two ways the program is deployed:
//!
//! - **In the image** ([`Isolation::Container`]) the container's own root
//!   directory is the workspace. A container usually cannot create
//!   namespaces or mount anything (Docker's default capabilities and
//!   seccomp profile forbid `unshare` and `mount`, and Cloudflare's
//!   containers are alike), so the workspace is materialised where the
//!   command looks: the program writes `/notes/plan.md` at `/notes/plan.md`.
//!   The program runs as root and every command as the unprivileged
//!   `agent` user ([`Owner`]), which keeps the program's environment (and
//!   that of PID 1, which the platform starts with the secret) unreadable,
//!   and the system's directories unwritable. At start the program makes
//!   `/` root's, writable by the agent's group and sticky
//!   ([`Confinement::prepare_machine_root`]; an image cannot set the mode
//!   of a container's root), so commands create and remove their own
//!   entries there but not the system's. Writes elsewhere (`/tmp`, or
//!   anything a command could change under a system name) stay in the
//!   container and are never synced.
//! - **As a local process** ([`Isolation::Namespaces`]) one program serves
//!   many agents, one directory each, on a host it shares with everything
//!   else. Each command runs in its own user, mount, PID and IPC
//!   namespaces whose root is its workspace's directory, with what
//!   [`crate::layout::provided`] says mounted on the system names: the
//!   host's `/usr`, `/etc`, ... read-only, a fresh `/proc`, a few devices,
//!   and the container's own scratch directories as `/tmp`, `/var/tmp` and
//!   `/run/lock`. Nothing else of the host exists for it: not the other
//!   agents' workspaces, not the program's state, not the host's home
//!   directories, and not the program's process (so not its environment).
//!   When the command's shell exits, everything it started ends with its
//!   PID namespace. Each system name gets an empty directory in the
//!   workspace's directory to mount on; those are the system's, so sync
//!   never sees them.
//!
//! The namespaces are set up by this same binary, started as a helper
//! (`stead-computer __confine ...`) before it runs any other code: it
//! unshares the namespaces, and its child, PID 1 of the new namespace,
//! assembles the root, pivots into it and runs bash ([`Shell`]), forwarding
//! SIGTERM to everything in the namespace and reaping orphans. The helper
//! itself waits and exits the way the command did. Nothing it started
//! outlives the program: every helper holds the read end of one
//! **lifeline** pipe whose write end only the program holds, and its
//! init ends everything in the namespace when that end closes, however the program went away, `SIGKILL` included.
//!
//! Not isolated in the local mode: the network (commands share the host's,
//! including abstract Unix sockets), CPU, memory and disk use, and what
//! the read-only system directories show (e.g. `/etc/passwd`, but not
//! `/etc/shadow`: commands never run as root).

use std::ffi::{CString, OsString};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use thiserror::Error;

use crate::beneath::Dir;
use crate::layout::{provided, Provided};
use crate::paths::on_disk;

/// The first argument that makes the binary the confinement helper.
pub const HELPER_ARG: &str = "__confine";

/// What the confined bash runs.
#[derive(Debug, Clone, Copy)]
pub enum Shell<'a> {
    /// `bash -lc <script>`: a command or a process.
    Script(&'a str),
    /// `bash -l`: a login shell, interactive on a terminal's input (see
    /// [`crate::terminal`]).
    Login,
}

impl Shell<'_> {
    /// bash's arguments.
    fn args(self) -> Vec<OsString> {
        match self {
            Shell::Script(script) => vec!["-lc".into(), script.into()],
            Shell::Login => vec!["-l".into()],
        }
    }
}

/// Devices a confined command sees.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// The user commands run as, and who owns what the program writes into a
/// workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

#[derive(Debug, Error)]
pub enum OwnerError {
    #[error("no user {0:?} (give a name from /etc/passwd or uid[:gid])")]
    Unknown(String),
    #[error("--run-as needs the program to run as root (it changes user for every command)")]
    NotRoot,
}

impl Owner {
    /// Parses `uid[:gid]` or looks a user name up.
    pub fn lookup(spec: &str) -> Result<Owner, OwnerError> {
        if let Some((uid, gid)) = spec.split_once(':') {
            if let (Ok(uid), Ok(gid)) = (uid.parse(), gid.parse()) {
                return Ok(Owner { uid, gid });
            }
        } else if let Ok(uid) = spec.parse() {
            return Ok(Owner { uid, gid: uid });
        }
        let name = CString::new(spec).map_err(|_| OwnerError::Unknown(spec.into()))?;
        // SAFETY: getpwnam is given a valid C string; its result is read at
        // once, before any other call could reuse its static buffer (this
        // runs at start-up, before any other thread exists).
        let entry = unsafe { libc::getpwnam(name.as_ptr()) };
        if entry.is_null() {
            return Err(OwnerError::Unknown(spec.into()));
        }
        // SAFETY: non-null, so it points at a valid passwd record.
        let entry = unsafe { &*entry };
        Ok(Owner {
            uid: entry.pw_uid,
            gid: entry.pw_gid,
        })
    }

    /// In the child, before `exec`: gives the standard streams that are
    /// pipes to this user, then becomes it (no supplementary groups). The
    /// pipes are the program's, so root's and mode 0600, and a command
    /// opening `/dev/stdout` (`/proc/self/fd/1`) would be refused where any
    /// other process is not; both ends of a pipe are one inode, so the
    /// program's end changes owner too, which it never checks. Only pipes:
    /// a stream that is `/dev/null` must stay root's.
    fn become_in_child(self) -> io::Result<()> {
        let failed = |result: libc::c_int| {
            // No allocation here: the error is the bare errno.
            if result == -1 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        for fd in 0..=2 {
            // SAFETY: fstat fills a zeroed struct; fd is ours.
            let mut stat: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::fstat(fd, &mut stat) } == 0
                && stat.st_mode & libc::S_IFMT == libc::S_IFIFO
            {
                // SAFETY: plain system calls on our own descriptor.
                failed(unsafe { libc::fchown(fd, self.uid, self.gid) })?;
            }
        }
        // SAFETY: plain system calls; the order (groups, group, user) is
        // the one that leaves no privilege behind.
        unsafe {
            failed(libc::setgroups(0, std::ptr::null()))?;
            failed(libc::setgid(self.gid))?;
            failed(libc::setuid(self.uid))
        }
    }
}

/// How a command comes to see its workspace as `/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// The workspace is the machine's own root; the container is the
    /// boundary (the image).
    Container,
    /// Each command gets user, mount, PID and IPC namespaces whose root is
    /// its workspace's directory (the local process serving many agents).
    Namespaces,
}

/// How commands run.
#[derive(Debug, Clone)]
pub struct Confinement {
    pub owner: Option<Owner>,
    pub isolation: Isolation,
}

impl Confinement {
    /// Checks the combination can work here: a program running as root
    /// must run commands as someone else.
    pub fn new(owner: Option<Owner>, isolation: Isolation) -> Result<Confinement, OwnerError> {
        // SAFETY: getuid(2) cannot fail and touches no memory.
        let root = unsafe { libc::getuid() } == 0;
        if owner.is_some() && !root {
            return Err(OwnerError::NotRoot);
        }
        Ok(Confinement { owner, isolation })
    }

    /// In words, for the start-up line.
    pub fn describe(&self) -> String {
        let isolation = match self.isolation {
            Isolation::Container => "in the container, its root the workspace",
            Isolation::Namespaces => "in their own namespaces, the workspace their root",
        };
        match self.owner {
            Some(Owner { uid, gid }) => format!("{isolation}, as {uid}:{gid}"),
            None => format!("{isolation}, as the program's user"),
        }
    }

    /// Readies the machine's root directory to be the workspace: root's,
    /// writable by the commands' group and sticky, so commands create and
    /// remove their own entries there and cannot remove the system's.
    pub fn prepare_machine_root(&self, root: &Path) -> io::Result<()> {
        let gid = self.owner.map(|owner| owner.gid);
        std::os::unix::fs::lchown(root, Some(0), gid)?;
        fs::set_permissions(root, fs::Permissions::from_mode(0o1775))
    }

    /// Gives `path` (not following a symlink) to the user commands run as.
    pub fn own(&self, path: &Path) -> io::Result<()> {
        match self.owner {
            Some(Owner { uid, gid }) => std::os::unix::fs::lchown(path, Some(uid), Some(gid)),
            None => Ok(()),
        }
    }

    /// Gives `name` in workspace directory `dir` (a symlink itself, never
    /// its target) to the commands' user.
    pub fn own_at(&self, dir: &Dir, name: &str) -> io::Result<()> {
        match self.owner {
            Some(Owner { uid, gid }) => dir.chown(name, uid, gid),
            None => Ok(()),
        }
    }

    /// Gives the opened `file` to the commands' user, by its descriptor
    /// (no path a command could swap in between).
    pub fn own_file(&self, file: &fs::File) -> io::Result<()> {
        match self.owner {
            Some(Owner { uid, gid }) => std::os::unix::fs::fchown(file, Some(uid), Some(gid)),
            None => Ok(()),
        }
    }

    /// The process that runs `shell` in workspace path `cwd` of the
    /// workspace at `workspace` (`scratch` holds a confined command's
    /// scratch directories). The caller adds the environment and the
    /// standard streams.
    pub fn command(
        &self,
        workspace: &Path,
        scratch: &Path,
        cwd: &str,
        shell: Shell,
    ) -> io::Result<tokio::process::Command> {
        let mut command = match self.isolation {
            Isolation::Container => {
                let mut command = tokio::process::Command::new("bash");
                command
                    .args(shell.args())
                    .current_dir(on_disk(workspace, cwd));
                command
            }
            Isolation::Namespaces => {
                let mut command = tokio::process::Command::new(std::env::current_exe()?);
                command
                    .arg(HELPER_ARG)
                    .arg(workspace)
                    .arg(scratch)
                    .arg(cwd)
                    .arg(lifeline()?.to_string())
                    .args(shell.args())
                    // The helper starts here and moves into the workspace.
                    .current_dir("/");
                command
            }
        };
        if let Some(owner) = self.owner {
            // SAFETY: `become_in_child` makes only async-signal-safe system calls
            // and allocates nothing, as the child of a fork must.
            unsafe { command.pre_exec(move || owner.become_in_child()) };
        }
        Ok(command)
    }

    /// Checks that commands can run as configured, by running one the way
    /// a command runs: at `root` itself when it is the machine's root, else
    /// in a throwaway workspace `<root>/~probe` (a name no container can
    /// have) with its scratch under `state`.
    pub fn probe(&self, root: &Path, state: &Path) -> Result<(), String> {
        let (workspace, scratch) = match self.isolation {
            Isolation::Container => (root.to_path_buf(), state.join("~probe-scratch")),
            Isolation::Namespaces => (root.join("~probe"), state.join("~probe-scratch")),
        };
        let prepared = (|| {
            fs::create_dir_all(&workspace)?;
            fs::create_dir_all(&scratch)?;
            self.own(&scratch)?;
            match self.isolation {
                Isolation::Container => Ok(()),
                Isolation::Namespaces => self.own(&workspace),
            }
        })();
        prepared.map_err(|e| format!("preparing {}: {e}", workspace.display()))?;
        let mut command = self
            .command(&workspace, &scratch, "/", Shell::Script("exit 0"))
            .map_err(|e| e.to_string())?
            .into_std();
        let output = command
            .env_clear()
            .env("PATH", crate::exec::PATH)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("starting a command: {e}"));
        if self.isolation == Isolation::Namespaces {
            let _ = fs::remove_dir_all(&workspace);
        }
        let _ = fs::remove_dir_all(&scratch);
        let output = output?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "a command could not run ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    }
}

/// The read end of the program's lifeline (see the module docs), made on
/// first use: inherited by every helper, while the write end, kept open
/// for the program's whole life, is closed on exec, so the program holds
/// the only one.
fn lifeline() -> io::Result<RawFd> {
    static LIFELINE: OnceLock<RawFd> = OnceLock::new();
    if let Some(&read) = LIFELINE.get() {
        return Ok(read);
    }
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array.
    check(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) },
        "lifeline pipe",
    )?;
    // SAFETY: clearing close-on-exec on the read end just made.
    check(
        unsafe { libc::fcntl(fds[0], libc::F_SETFD, 0) },
        "lifeline pipe",
    )?;
    // A second caller racing here keeps the first pipe; this one's ends
    // stay unused.
    Ok(*LIFELINE.get_or_init(|| fds[0]))
}

/// Runs the helper (the binary was started with [`HELPER_ARG`] first);
/// never returns. `args` are the ones after [`HELPER_ARG`]: workspace,
/// scratch, cwd, script, and the lifeline's descriptor.
pub fn helper_main(args: &[OsString]) -> ! {
    let [workspace, scratch, cwd, lifeline, bash_args @ ..] = args else {
        eprintln!(
            "stead-computer: {HELPER_ARG} takes: workspace scratch cwd lifeline bash-args..."
        );
        std::process::exit(125);
    };
    let Some(lifeline) = lifeline.to_str().and_then(|fd| fd.parse::<RawFd>().ok()) else {
        eprintln!("stead-computer: {HELPER_ARG}: the lifeline is a descriptor number");
        std::process::exit(125);
    };
    let spec = Spec {
        workspace: PathBuf::from(workspace),
        scratch: PathBuf::from(scratch),
        cwd: PathBuf::from(cwd),
        bash_args: bash_args.to_vec(),
        lifeline,
    };
    match run_helper(&spec) {
        Ok(end) => end.mirror(),
        Err(error) => {
            eprintln!("stead-computer: cannot confine the command: {error}");
            std::process::exit(125);
        }
    }
}

/// What the helper was asked to run.
struct Spec {
    /// The workspace's directory: the command's `/`.
    workspace: PathBuf,
    /// The container's scratch directories (`tmp`, `var/tmp`, `run/lock`).
    scratch: PathBuf,
    /// A workspace path: where the command starts, once `/` is the workspace.
    cwd: PathBuf,
    /// bash's arguments (see [`Shell::args`]).
    bash_args: Vec<OsString>,
    /// The read end of the program's lifeline.
    lifeline: RawFd,
}

/// How the confined shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Exited(i32),
    Signalled(i32),
}

impl End {
    fn from_status(status: libc::c_int) -> End {
        if libc::WIFSIGNALED(status) {
            End::Signalled(libc::WTERMSIG(status))
        } else {
            End::Exited(libc::WEXITSTATUS(status))
        }
    }

    fn encode(self) -> [u8; 5] {
        let (kind, value) = match self {
            End::Exited(code) => (0, code),
            End::Signalled(signal) => (1, signal),
        };
        let mut out = [kind, 0, 0, 0, 0];
        out[1..].copy_from_slice(&value.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Option<End> {
        let value = i32::from_le_bytes(bytes.get(1..5)?.try_into().ok()?);
        match bytes.first()? {
            0 => Some(End::Exited(value)),
            1 => Some(End::Signalled(value)),
            _ => None,
        }
    }

    /// Ends this process the way the shell ended.
    fn mirror(self) -> ! {
        match self {
            End::Exited(code) => std::process::exit(code),
            End::Signalled(signal) => {
                // SAFETY: resetting a handler and signalling ourselves.
                unsafe {
                    libc::signal(signal, libc::SIG_DFL);
                    libc::kill(libc::getpid(), signal);
                }
                std::process::exit(128 + signal)
            }
        }
    }
}

fn check(result: libc::c_int, what: &str) -> io::Result<()> {
    if result == -1 {
        let error = io::Error::last_os_error();
        Err(io::Error::new(error.kind(), format!("{what}: {error}")))
    } else {
        Ok(())
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds NUL"))
}

/// The helper's own part: new namespaces, then a child to be their init.
fn run_helper(spec: &Spec) -> io::Result<End> {
    // SAFETY: plain syscalls on this (single-threaded) process.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    check(
        // SAFETY: as above.
        unsafe {
            libc::unshare(
                libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC,
            )
        },
        "unshare (user namespaces may be disabled here)",
    )?;
    // The same ids inside as outside: the command stays unprivileged.
    fs::write("/proc/self/setgroups", "deny")?;
    fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;

    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array.
    check(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) },
        "pipe",
    )?;
    // SAFETY: both descriptors were just created and are owned here only.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };

    // The shell must not inherit the lifeline.
    // SAFETY: setting close-on-exec on a descriptor this process holds.
    check(
        unsafe { libc::fcntl(spec.lifeline, libc::F_SETFD, libc::FD_CLOEXEC) },
        "the lifeline",
    )?;
    // SAFETY: the process is single-threaded, so the child may run
    // arbitrary code.
    let init = unsafe { libc::fork() };
    if init == -1 {
        return Err(io::Error::last_os_error());
    }
    if init == 0 {
        drop(reader);
        run_init(spec, writer);
    }
    drop(writer);
    // The group's SIGTERM reaches init, which passes it on, and any signal
    // sent to the group (a process's `signal` route) reaches the shell
    // directly: this process only waits, and must not die of one first.
    // SAFETY: setting dispositions of this process (after the fork, so
    // init and the shell start with the defaults).
    unsafe {
        for &(_, signal) in stead_sync::process::SIGNALS {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_IGN);
            }
        }
    }
    let status = wait_for(init)?;
    let mut report = Vec::new();
    let _ = File::from(reader).read_to_end(&mut report);
    Ok(End::decode(&report).unwrap_or(End::from_status(status)))
}

/// Ends this namespace (init calls it, once the shell runs and nothing
/// more is forked) when the program's end of the lifeline closes: nobody
/// writes to it, so a read returns only then. The watch is a thread of
/// init's, as only init can have one: the helper, having unshared the PID
/// namespace, cannot start threads.
fn watch_lifeline(lifeline: RawFd) {
    // SAFETY: init owns its inherited copy of the descriptor.
    let mut lifeline = File::from(unsafe { OwnedFd::from_raw_fd(lifeline) });
    std::thread::spawn(move || loop {
        match lifeline.read(&mut [0u8; 1]) {
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            // Not a lifeline after all: nothing to watch.
            Err(_) => return,
            Ok(_) => {
                // SAFETY: from init, kill(-1) signals every other process
                // of this PID namespace; init's own exit ends the rest.
                unsafe { libc::kill(-1, libc::SIGKILL) };
                std::process::exit(128 + libc::SIGKILL);
            }
        }
    });
}

/// Waits for `pid`, through interruptions; its wait status.
fn wait_for(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes the status into a local.
        if unsafe { libc::waitpid(pid, &mut status, 0) } == pid {
            return Ok(status);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Set by init's signal handler: pass a stop on to the namespace.
static STOP_ASKED: AtomicBool = AtomicBool::new(false);

extern "C" fn ask_stop(_: libc::c_int) {
    STOP_ASKED.store(true, Ordering::SeqCst);
}

/// PID 1 of the new namespaces: assembles the root, runs the shell, passes
/// stops on, reaps, and reports how the shell ended on `report`.
fn run_init(spec: &Spec, report: OwnedFd) -> ! {
    if let Err(error) = assemble_root(spec) {
        eprintln!("stead-computer: cannot confine the command: {error}");
        let _ = File::from(report).write_all(&End::Exited(125).encode());
        std::process::exit(125);
    }
    // SAFETY: installing a handler that only stores to an atomic; no
    // SA_RESTART, so waitpid returns on a signal. SIGTERM is how the
    // program stops a command; any other signal sent to the group (a
    // process's `signal` route: HUP to reload, INT) is the shell's, which
    // the group's signal reaches directly, so init must not die of it.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ask_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
        for &(_, signal) in stead_sync::process::SIGNALS {
            if ![libc::SIGTERM, libc::SIGKILL, libc::SIGSTOP].contains(&signal) {
                libc::signal(signal, libc::SIG_IGN);
            }
        }
    }
    let shell = spawn_shell(spec);
    watch_lifeline(spec.lifeline);
    let mut end = End::Exited(127);
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == shell {
            end = End::from_status(status);
            break;
        }
        if pid == -1 {
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) if STOP_ASKED.swap(false, Ordering::SeqCst) => {
                    // SAFETY: kill(-1) from init signals every other
                    // process of this PID namespace.
                    unsafe { libc::kill(-1, libc::SIGTERM) };
                }
                Some(libc::EINTR) => {}
                _ => break,
            }
        }
    }
    let _ = File::from(report).write_all(&end.encode());
    // Leaving ends every process still in the namespace.
    std::process::exit(match end {
        End::Exited(code) => code,
        End::Signalled(signal) => 128 + signal,
    })
}

/// Starts bash with the spec's arguments as a child; its pid.
fn spawn_shell(spec: &Spec) -> libc::pid_t {
    // SAFETY: single-threaded; the child only resets signals and execs.
    let pid = unsafe { libc::fork() };
    if pid != 0 {
        return pid;
    }
    // SAFETY: restoring default dispositions before exec (an ignored
    // signal would stay ignored across it).
    unsafe {
        for &(_, signal) in stead_sync::process::SIGNALS {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
    let error = std::os::unix::process::CommandExt::exec(
        std::process::Command::new("bash")
            .args(&spec.bash_args)
            .current_dir(&spec.cwd),
    );
    eprintln!("stead-computer: starting bash: {error}");
    std::process::exit(127);
}

fn mount(
    source: Option<&Path>,
    target: &Path,
    kind: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> io::Result<()> {
    let source = source.map(c_path).transpose()?;
    let target_c = c_path(target)?;
    let kind = kind.map(|k| CString::new(k).expect("no NUL"));
    let data = data.map(|d| CString::new(d).expect("no NUL"));
    let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is a valid C string or null, as mount(2) takes.
    let result = unsafe {
        libc::mount(
            ptr(&source),
            target_c.as_ptr(),
            ptr(&kind),
            flags,
            ptr(&data).cast(),
        )
    };
    check(result, &format!("mounting {}", target.display()))
}

/// Binds `source` at `target` (and whatever is mounted beneath it).
fn bind(source: &Path, target: &Path) -> io::Result<()> {
    mount(
        Some(source),
        target,
        None,
        libc::MS_BIND | libc::MS_REC,
        None,
    )
}

/// Remounts the bind mount at `target` with `flags` added, keeping the
/// flags it has (a user namespace may not drop them).
fn remount_bind(target: &Path, flags: libc::c_ulong) -> io::Result<()> {
    let target_c = c_path(target)?;
    // SAFETY: statvfs fills a zeroed struct for a valid path.
    let mut info: libc::statvfs = unsafe { std::mem::zeroed() };
    check(
        // SAFETY: as above.
        unsafe { libc::statvfs(target_c.as_ptr(), &mut info) },
        "statvfs",
    )?;
    let mut flags = libc::MS_REMOUNT | libc::MS_BIND | flags;
    for (has, keep) in [
        (libc::ST_RDONLY, libc::MS_RDONLY),
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if info.f_flag & has != 0 {
            flags |= keep;
        }
    }
    mount(None, target, None, flags, None)
}

fn tmpfs(target: &Path, mode: &str) -> io::Result<()> {
    mount(
        Some(Path::new("tmpfs")),
        target,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&format!("mode={mode}")),
    )
}

/// Makes `at` an (empty, unless left from an earlier command) directory to
/// mount on, replacing anything else standing there.
fn mount_point(at: &Path) -> io::Result<()> {
    match fs::symlink_metadata(at) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => fs::remove_file(at)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // The workspace is shared: a process starting at the same moment may
    // have made this mount point just now.
    match fs::create_dir(at) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && at.is_dir() => Ok(()),
        made => made,
    }
}

/// Makes the workspace the root, with the system names provided, and moves
/// into it.
fn assemble_root(spec: &Spec) -> io::Result<()> {
    let root = spec.workspace.as_path();
    // Nothing mounted here may leak back to the host.
    mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    // pivot_root needs the new root to be a mount point.
    bind(root, root)?;
    for name in stead_sync::SYSTEM_NAMES {
        provide(
            &root.join(name),
            name,
            provided(name),
            &spec.scratch.join(name),
        )?;
    }

    std::env::set_current_dir(root)?;
    let dot = c_path(Path::new("."))?;
    check(
        // SAFETY: pivot_root(".", ".") stacks the old root under the new
        // one; both arguments are valid C strings.
        unsafe { libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()) as libc::c_int },
        "pivot_root",
    )?;
    check(
        // SAFETY: detaching the old root, now mounted at ".".
        unsafe { libc::umount2(dot.as_ptr(), libc::MNT_DETACH) },
        "detaching the host's root",
    )?;
    std::env::set_current_dir("/")?;
    // Set-id programs and device files in a workspace mean nothing.
    remount_bind(Path::new("/"), libc::MS_NOSUID | libc::MS_NODEV)
}

/// Mounts at `at` (system name `name`) what `provided` says; `scratch` is
/// the container's scratch directory of that name.
fn provide(at: &Path, name: &str, provided: Provided, scratch: &Path) -> io::Result<()> {
    match provided {
        Provided::Host => {
            let host = Path::new("/").join(name);
            // A merged-/usr host's /bin is a symlink: its target is bound.
            if host.is_dir() {
                mount_point(at)?;
                bind(&host, at)?;
                remount_bind(at, libc::MS_RDONLY)?;
            }
        }
        Provided::Devices => {
            mount_point(at)?;
            tmpfs(at, "0755")?;
            for device in DEVICES {
                let host = Path::new("/dev").join(device);
                if host.exists() {
                    File::create(at.join(device))?;
                    mount(Some(&host), &at.join(device), None, libc::MS_BIND, None)?;
                }
            }
            for (link, target) in [
                ("fd", "/proc/self/fd"),
                ("stdin", "/proc/self/fd/0"),
                ("stdout", "/proc/self/fd/1"),
                ("stderr", "/proc/self/fd/2"),
            ] {
                symlink(target, at.join(link))?;
            }
            fs::create_dir(at.join("shm"))?;
            tmpfs(&at.join("shm"), "1777")?;
        }
        Provided::Processes => {
            mount_point(at)?;
            mount(
                Some(Path::new("proc")),
                at,
                Some("proc"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                None,
            )?;
        }
        Provided::Scratch => {
            mount_point(at)?;
            fs::create_dir_all(scratch)?;
            bind(scratch, at)?;
        }
        Provided::Empty { scratch: inner } => {
            mount_point(at)?;
            tmpfs(at, "0755")?;
            for dir in inner {
                let source = scratch.join(dir);
                fs::create_dir_all(&source)?;
                fs::create_dir(at.join(dir))?;
                bind(&source, &at.join(dir))?;
            }
            mount(
                None,
                at,
                None,
                libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
                Some("mode=0755"),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::End;

    #[test]
    fn ends_travel_through_the_report_pipe() {
        for end in [End::Exited(0), End::Exited(3), End::Signalled(9)] {
            assert_eq!(End::decode(&end.encode()), Some(end));
        }
        assert_eq!(End::decode(&[]), None);
        assert_eq!(End::decode(&[7, 0, 0, 0, 0]), None);
    }
}
