//! stead-computer: the container side of stead's computer backend.
//!
//! It holds a disposable copy of one agent's workspace (or, in local runs,
//! one per container name), applies the changes the Worker pushes, runs
//! commands with their output streamed back, and reports what each command
//! changed. The protocol's types live in `stead-sync`; this program is the
//! disk-and-process half of it.

mod apply;
mod beneath;
mod config;
mod confine;
mod disk;
mod environment;
mod error;
mod exec;
mod ids;
mod layout;
mod live;
mod outlog;
mod paths;
mod procs;
mod scan;
mod server;
mod staged;
mod state;
mod terminal;
mod terminal_ws;
mod trust;

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use config::{Config, ConfigError, USAGE};

/// After the drain, how long open connections get to finish.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == confine::HELPER_ARG) {
        // Before anything else: the helper must be single-threaded.
        confine::helper_main(&args[1..]);
    }
    let args = args.into_iter().map(|a| a.to_string_lossy().into_owned());
    let config = match Config::load(args) {
        Ok(config) => config,
        Err(ConfigError::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("stead-computer: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("stead-computer: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stead-computer: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: Config) -> std::io::Result<()> {
    let registry = state::Registry::start(
        config.root.clone(),
        config.state.clone(),
        config.per_container,
        config.confinement.clone(),
    )?;
    config
        .confinement
        .probe(&config.root, &config.state)
        .map_err(|e| std::io::Error::other(format!("commands cannot run as configured: {e}")))?;
    let app = Arc::new(server::App {
        registry,
        expected_auth: format!("Bearer {}", config.secret).into_bytes(),
        build: build_identity(),
    });
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let extra = app.registry.extra_system_names();
    eprintln!(
        "stead-computer: listening on {} (root {}, state {}{}, commands {}{})",
        listener.local_addr()?,
        config.root.display(),
        config.state.display(),
        if config.per_container {
            ", per container"
        } else {
            ""
        },
        config.confinement.describe(),
        if extra.is_empty() {
            String::new()
        } else {
            format!(", also the system's at the root: {}", extra.join(" "))
        },
    );
    // Output and the exit event go out as small writes on a long response:
    // without TCP_NODELAY, Nagle's algorithm holds each behind the peer's
    // delayed ACK (~40 ms a command).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            eprintln!("stead-computer: cannot set TCP_NODELAY: {error}");
        }
    });
    let drained = Arc::new(tokio::sync::Notify::new());
    let serve = axum::serve(listener, server::router(app.clone())).with_graceful_shutdown({
        let drained = drained.clone();
        async move { drained.notified().await }
    });
    let stop = async {
        shutdown().await;
        drain(&app.registry, config.drain).await;
        drained.notify_one();
        tokio::time::sleep(CLOSE_GRACE).await;
    };
    tokio::select! {
        served = serve => served,
        _ = stop => Ok(()),
    }
}

/// The program's version and the start of its executable's BLAKE3 hash:
/// which build a container runs, whatever its image was tagged.
fn build_identity() -> String {
    let version = env!("CARGO_PKG_VERSION");
    match std::env::current_exe().and_then(std::fs::read) {
        Ok(bytes) => {
            let hash = stead_sync::hash_chunk(&bytes).to_string();
            format!("stead-computer {version} ({})", &hash[..16])
        }
        Err(_) => format!("stead-computer {version}"),
    }
}

/// Stops what runs and keeps serving until the reports of the stopped
/// commands are acknowledged (or `patience` is up), so a command cut short
/// by the platform's SIGTERM still delivers its output and its changes.
async fn drain(registry: &state::Registry, patience: Duration) {
    eprintln!("stead-computer: stopping: ending running commands");
    registry.begin_shutdown();
    let deadline = Instant::now() + patience;
    while !registry.drained() {
        if Instant::now() >= deadline {
            eprintln!("stead-computer: stopping with reports not acknowledged");
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("stead-computer: stopped cleanly");
}

/// Resolves on SIGTERM or SIGINT (as PID 1 the default actions do not apply).
async fn shutdown() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
