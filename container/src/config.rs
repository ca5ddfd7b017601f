//! Command-line flags, each with an environment fallback.
//!
//! The container platform sets environment variables more easily than
//! arguments, local runs prefer flags; both spell the same settings. The
//! secret is only ever read from the environment (never a flag, which `ps`
//! would show) and is removed from it right after, so no command the program
//! starts can inherit it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

use std::path::Path;

use crate::confine::{Confinement, Isolation, Owner, OwnerError};
use crate::layout::Layout;

pub const USAGE: &str = "\
stead-computer: the container side of stead's computer backend

  --listen ADDR       address to serve on (STEAD_COMPUTER_LISTEN, default 0.0.0.0:8080)
  --root DIR          where workspaces live (STEAD_COMPUTER_ROOT, default /workspace).
                      `/`: the machine's own root is the workspace, beside the
                      system's directories (only in the image, which marks the
                      machine as the program's; needs --run-as). Any
                      other directory: each command runs in its own user, mount,
                      PID and IPC namespaces whose `/` is its workspace directory.
  --state DIR         internal state, outside the workspace (STEAD_COMPUTER_STATE,
                      default a sibling of the root: <parent>/.<name>.stead-state;
                      with --root / it must lie under a system directory)
  --per-container     one workspace per x-stead-container header, <root>/<name>
                      (STEAD_COMPUTER_PER_CONTAINER=1)
  --run-as USER       run commands as USER (name or uid[:gid]), which owns
                      what the program writes into workspaces; the program
                      must run as root (STEAD_COMPUTER_RUN_AS). Required
                      when running as root: commands never run as root.
  --drain-ms N        after SIGTERM, how long to wait for the reports of the
                      commands it stopped to be acknowledged (default 5000)

  STEAD_COMPUTER_SECRET (required) is the bearer secret every request but
  GET /health must carry. The workspace and state directories are wiped at
  start (with --root /, nothing that was there before is ever touched).
";

/// The file the image holds to say the machine is the program's: its root
/// directory may become the workspace.
pub const MACHINE_MARKER: &str = "/etc/stead-computer/machine";

#[derive(Debug, Clone)]
pub struct Config {
    pub listen: SocketAddr,
    pub root: PathBuf,
    pub state: PathBuf,
    pub per_container: bool,
    pub confinement: Confinement,
    pub drain: Duration,
    pub secret: String,
}

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{0} needs a value")]
    MissingValue(String),
    #[error("unknown argument {0:?}")]
    Unknown(String),
    #[error("bad listen address {0:?}")]
    BadListen(String),
    #[error("STEAD_COMPUTER_SECRET must be set (and not empty)")]
    NoSecret,
    #[error("the root must be an absolute directory, got {0:?}")]
    BadRoot(PathBuf),
    #[error("the state directory {state:?} must be absolute and neither inside nor around the root {root:?}")]
    BadState { state: PathBuf, root: PathBuf },
    #[error("with --root /, the state directory {0:?} must lie under a system directory (such as /var), outside every workspace")]
    StateInWorkspace(PathBuf),
    #[error("--root / makes the machine's own root the workspace: {0}")]
    MachineRoot(&'static str),
    #[error(transparent)]
    Owner(#[from] OwnerError),
    #[error("the program runs as root: pass --run-as USER (commands never run as root)")]
    RootCommands,
    #[error("--drain-ms takes a number of milliseconds, not {0:?}")]
    BadDrain(String),
    #[error("help requested")]
    Help,
}

impl Config {
    /// Reads flags from `args` (without the program name) and the rest from
    /// the environment; takes the secret out of the environment.
    pub fn load(args: impl IntoIterator<Item = String>) -> Result<Config, ConfigError> {
        let env = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
        let mut listen = env("STEAD_COMPUTER_LISTEN").unwrap_or_else(|| "0.0.0.0:8080".into());
        let mut root = env("STEAD_COMPUTER_ROOT").unwrap_or_else(|| "/workspace".into());
        let mut state = env("STEAD_COMPUTER_STATE");
        let mut per_container = env("STEAD_COMPUTER_PER_CONTAINER")
            .is_some_and(|v| matches!(v.as_str(), "1" | "true" | "yes"));
        let mut run_as = env("STEAD_COMPUTER_RUN_AS");
        let mut drain = "5000".to_string();

        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
                None => (arg.clone(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| ConfigError::MissingValue(flag.clone()))
            };
            match flag.as_str() {
                "--listen" => listen = value()?,
                "--root" => root = value()?,
                "--state" => state = Some(value()?),
                "--per-container" if inline.is_none() => per_container = true,
                "--run-as" => run_as = Some(value()?),
                "--drain-ms" => drain = value()?,
                "-h" | "--help" => return Err(ConfigError::Help),
                _ => return Err(ConfigError::Unknown(arg)),
            }
        }

        let listen = listen
            .parse()
            .map_err(|_| ConfigError::BadListen(listen.clone()))?;
        let root = PathBuf::from(root);
        if !root.is_absolute() {
            return Err(ConfigError::BadRoot(root));
        }
        let machine = root == Path::new("/");
        let state = match state {
            Some(state) => PathBuf::from(state),
            None if machine => PathBuf::from("/var/lib/stead"),
            None => {
                let name = root.file_name().map(|n| n.to_string_lossy().into_owned());
                let parent = root.parent().expect("not the root");
                parent.join(format!(".{}.stead-state", name.unwrap_or_default()))
            }
        };
        if !state.is_absolute() {
            return Err(ConfigError::BadState { state, root });
        }
        if machine {
            // Strictly under one: the state directory is wiped at start.
            let under_system = state.to_str().is_some_and(|s| {
                Layout::standard().system_name(s).is_some() && s[1..].contains('/')
            });
            if !under_system {
                return Err(ConfigError::StateInWorkspace(state));
            }
        } else if state.starts_with(&root) || root.starts_with(&state) {
            return Err(ConfigError::BadState { state, root });
        }

        let owner = run_as.as_deref().map(Owner::lookup).transpose()?;
        // SAFETY: getuid(2) cannot fail and touches no memory.
        if owner.is_none() && unsafe { libc::getuid() } == 0 {
            return Err(ConfigError::RootCommands);
        }
        let isolation = if machine {
            if per_container {
                return Err(ConfigError::MachineRoot(
                    "it holds one workspace, not one per container",
                ));
            }
            if owner.is_none() {
                return Err(ConfigError::MachineRoot(
                    "the program must run as root with --run-as USER",
                ));
            }
            // The program makes `/` writable for commands: only where the
            // image says this machine is there for it, never on a host
            // by a slip of the flag.
            if !Path::new(MACHINE_MARKER).exists() {
                return Err(ConfigError::MachineRoot(
                    "only in the image, which marks the machine as its own with \
                     /etc/stead-computer/machine (see container/Dockerfile)",
                ));
            }
            Isolation::Container
        } else {
            Isolation::Namespaces
        };
        let confinement = Confinement::new(owner, isolation)?;
        let drain = drain
            .parse()
            .map(Duration::from_millis)
            .map_err(|_| ConfigError::BadDrain(drain.clone()))?;

        let secret = env("STEAD_COMPUTER_SECRET").ok_or(ConfigError::NoSecret)?;
        // Commands get a clean environment anyway; removing the secret from
        // ours as well means nothing that copies the environment (a library,
        // a future spawn) can pass it on by mistake.
        std::env::remove_var("STEAD_COMPUTER_SECRET");

        Ok(Config {
            listen,
            root,
            state,
            per_container,
            confinement,
            drain,
            secret,
        })
    }
}
