//! The light shell's network: an exec whose utilities ask for HTTP (git's
//! transport) runs as a replay (see `stead_shell::net`). Each run is
//! rolled back when it stops to wait for an answer; the agent then makes
//! the request through the host's outbound fetch, with the same target
//! checks as webhooks (`crate::outbound`: private addresses only where
//! the local-development setting allows them), records the answer and runs
//! the exec again. The run that finishes without waiting is the one kept,
//! with its automatic checkpoint; the runs before it leave nothing.
//!
//! A secret bound to the request's host (`crate::secrets`, git's
//! credentials included) is added to the request here, as it leaves, and
//! nowhere else: the journal, the shell and its output see the request git
//! made. Each use is audited under the exec's actor.
//!
//! Content kept in the object store (`stead_vfs::tier`) is met the same
//! way (see `stead_shell::content`): a run that read a tiered chunk is
//! rolled back, the chunks it named are brought back into the database,
//! verified, and the exec runs again. At most [`MAX_CONTENT_ROUNDS`] rounds
//! and `TierPolicy::exec_bytes` (64 MiB: as much as the light shell may
//! hold in memory at once, so an exec that needs more could not have held
//! it anyway) brought back per exec: past that the exec is
//! refused (`413 EXEC_CONTENT_TOO_LARGE`, nothing changed), since a `cat`
//! of a 10 GB file must not pull it all into SQLite (a streamed download or
//! the computer reads it from the bucket instead).
//!
//! The runs read the same clock: every reading the first run took is
//! given again in the same order (a commit made before a push has the same
//! id in every run, so the push the last run makes is the one the earlier
//! runs asked for).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use stead_shell::content::ContentWait;
use stead_shell::net::{Journal, Request, Response};
use stead_shell::{Clock, ExecRequest};
use stead_sql::Sql;
use stead_vfs::tier::Tier;
use stead_vfs::{Before, Operation, Scope, VfsError};

use crate::agent::{Agent, HostClock};
use crate::checkpoints;
use crate::error::ApiError;
use crate::exec;
use crate::host::Host;
use crate::outbound;
use crate::outcome::{ExecOutcome, OutputEncoding};
use crate::secrets;
use crate::settings;

/// Most network requests one exec may make (a clone makes three).
pub(crate) const MAX_REQUESTS: usize = 64;

/// Largest answer the agent reads into memory, in bytes: a pack is held
/// whole until it is indexed.
pub(crate) const MAX_ANSWER_BYTES: usize = 64 << 20;

/// Most rounds of bringing content back from the object store one exec
/// may take (each brings back every chunk its run named; a run stops at
/// the command after the one that met a tiered chunk, so a loop over
/// tiered files takes a round per file).
pub(crate) const MAX_CONTENT_ROUNDS: usize = 64;

/// The clock readings of an exec's first run, given again to later runs.
struct Replayed<'c, 'h, H: Host> {
    host: &'c HostClock<'h, H>,
    readings: &'c RefCell<Vec<u64>>,
    next: Cell<usize>,
}

impl<H: Host> Clock for Replayed<'_, '_, H> {
    fn now_ms(&self) -> u64 {
        let at = self.next.get();
        self.next.set(at + 1);
        if let Some(reading) = self.readings.borrow().get(at) {
            return *reading;
        }
        let now = self.host.now_ms();
        self.readings.borrow_mut().push(now);
        now
    }

    fn sleep_ms(&self, ms: u64) -> bool {
        self.host.sleep_ms(ms)
    }
}

/// What an exec has brought back from the object store so far.
#[derive(Default)]
pub(crate) struct Fetched {
    rounds: usize,
    bytes: u64,
}

/// How one run ended.
enum Run {
    /// It stopped for a request (its changes were rolled back).
    Waiting,
    /// It met these chunks kept in the object store (rolled back too).
    Content(Vec<i64>),
    Failed(ApiError),
}

impl From<VfsError> for Run {
    fn from(error: VfsError) -> Self {
        Run::Failed(error.into())
    }
}

impl From<stead_sql::SqlError> for Run {
    fn from(error: stead_sql::SqlError) -> Self {
        Run::Failed(error.into())
    }
}

impl<H: Host> Agent<H> {
    /// Runs `request` in the light shell, making the network requests it
    /// asks for between runs; the outcome and the sleep time it owes.
    pub(crate) async fn run_shell_exec(
        &self,
        actor: &str,
        request: ExecRequest,
        encoding: OutputEncoding,
    ) -> Result<(ExecOutcome, u64), ApiError> {
        let vfs = self.vfs();
        let journal = Rc::new(Journal::default());
        let content = Rc::new(ContentWait::default());
        let readings = RefCell::new(Vec::new());
        let mut fetched = Fetched::default();
        loop {
            let host_clock = HostClock::new(&self.host);
            let clock = Replayed {
                host: &host_clock,
                readings: &readings,
                next: Cell::new(0),
            };
            journal.begin_run();
            let before = Before {
                actor,
                operation: &Operation::Exec,
                note: Some(&request.command),
                scope: Scope::Whole,
            };
            let ran = checkpoints::around(self, &vfs, before, |checkpoint| {
                self.db().transaction(|| {
                    let outcome = stead_shell::content::with_wait(&content, || {
                        stead_shell::net::with_journal(&journal, || {
                            exec::run_shell(&vfs, &clock, request.clone(), encoding, checkpoint)
                        })
                    });
                    if content.waiting() {
                        // Rolled back: a run that met a tiered chunk is never kept.
                        return Err(Run::Content(content.take()));
                    }
                    let outcome = outcome.map_err(Run::Failed)?;
                    if journal.waiting() {
                        // Rolled back: the next run does it all again.
                        return Err(Run::Waiting);
                    }
                    Ok(outcome)
                })
            });
            match ran {
                Ok(outcome) => return Ok((outcome, host_clock.owed_ms.get())),
                Err(Run::Failed(error)) => return Err(error),
                Err(Run::Content(chunks)) => {
                    self.bring_back_for_exec(&chunks, &mut fetched).await?;
                    continue;
                }
                Err(Run::Waiting) => {}
            }
            let pending = journal
                .take_pending()
                .expect("a waiting run names its request");
            let answer = if journal.len() >= MAX_REQUESTS {
                Err(format!(
                    "the exec made {MAX_REQUESTS} network requests, the most one may"
                ))
            } else {
                self.outbound_fetch(actor, &pending).await
            };
            journal.record(pending, answer);
        }
    }

    /// Brings back the chunks a run of an exec met in the object store,
    /// within the exec's bounds (see the module docs).
    pub(crate) async fn bring_back_for_exec(
        &self,
        chunks: &[i64],
        fetched: &mut Fetched,
    ) -> Result<(), ApiError> {
        let Some(store) = self.host.chunk_store() else {
            // Tiered once, and the deployment's binding is gone since: the
            // file tools' answer too.
            return Err(VfsError::Tiered {
                chunks: chunks.to_vec(),
            }
            .into());
        };
        let vfs = self.vfs();
        let policy = self.host.tier_policy();
        let needed = fetched.bytes + vfs.tiered_bytes(chunks)?;
        fetched.rounds += 1;
        if needed > policy.exec_bytes || fetched.rounds > MAX_CONTENT_ROUNDS {
            return Err(ApiError::ExecContentTooLarge {
                needed,
                rounds: fetched.rounds,
                limit: policy.exec_bytes,
            });
        }
        fetched.bytes = needed;
        let name = self.name()?;
        Tier::new(&vfs, store, &name).bring_back(chunks).await?;
        Ok(())
    }

    /// Makes one of the light shell's requests, if its target may be
    /// reached, with the secret bound to its host (added here, so the
    /// journal and everything the shell sees hold the request without it;
    /// its use audited under `actor`); `Err` says why not, or why it failed.
    async fn outbound_fetch(&self, actor: &str, request: &Request) -> Result<Response, String> {
        let allow_private = settings::webhooks(self.db())
            .map_err(|e| e.to_string())?
            .allow_private_targets;
        let pending =
            outbound::check_url(&request.url, allow_private).map_err(|e| e.to_string())?;
        if let outbound::Pending::Resolve(name) = pending {
            let resolved = self.host.resolve(&name).await;
            outbound::check_resolved(&name, resolved).map_err(|e| e.to_string())?;
        }
        let secret = secrets::for_request(self.db(), &request.url, allow_private)
            .map_err(|e| e.to_string())?;
        match secret {
            Some(used) => {
                let mut request = request.clone();
                request
                    .headers
                    .retain(|(name, _)| !name.eq_ignore_ascii_case("authorization"));
                request
                    .headers
                    .push(("Authorization".to_string(), used.authorization.clone()));
                secrets::record_use(self.db(), self.now_ms(), actor, &used);
                self.host.fetch(&request, MAX_ANSWER_BYTES).await
            }
            None => self.host.fetch(request, MAX_ANSWER_BYTES).await,
        }
    }
}
