//! stead-computer: the container side of stead's computer backend.
//!
//! It holds a disposable copy of one agent's workspace (or, in local runs,
//! one per container name), applies the changes the Worker pushes, runs
//! commands with their output streamed back, and reports what each command
//! changed. The protocol's types live in `stead-sync`; this program is the
//! disk-and-process half of it.

mod apply;
mod config;
mod disk;
mod error;
mod exec;
mod paths;
mod scan;
mod server;
mod staged;
mod state;

use std::process::ExitCode;
use std::sync::Arc;

use config::{Config, ConfigError, USAGE};

fn main() -> ExitCode {
    let config = match Config::load(std::env::args().skip(1)) {
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
    )?;
    let app = Arc::new(server::App {
        registry,
        expected_auth: format!("Bearer {}", config.secret).into_bytes(),
    });
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    eprintln!(
        "stead-computer: listening on {} (root {}, state {}{})",
        listener.local_addr()?,
        config.root.display(),
        config.state.display(),
        if config.per_container {
            ", per container"
        } else {
            ""
        }
    );
    // Output and the exit event go out as small writes on a long response:
    // without TCP_NODELAY, Nagle's algorithm holds each behind the peer's
    // delayed ACK (~40 ms a command).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            eprintln!("stead-computer: cannot set TCP_NODELAY: {error}");
        }
    });
    let serve = axum::serve(listener, server::router(app));
    tokio::select! {
        served = serve => served,
        _ = shutdown() => {
            eprintln!("stead-computer: stopping");
            Ok(())
        }
    }
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
