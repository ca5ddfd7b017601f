//! Where a job runs: the alarm loop and the job runner.
//!
//! **The alarm drives everything.** A detached exec, a hook call and a
//! schedule's run all become a job row in state `queued`; the agent's one
//! alarm is then set to the earliest moment anything is due (now, for a
//! queued job) by [`Agent::arm`], after every change and on the first event
//! of every instance (so a restart re-arms it). The alarm runs queued jobs
//! and due schedule runs until none is left, then re-arms. Running jobs from
//! the alarm rather than from the request that queued them means a job
//! never depends on a connection, and a crash is recovered by the
//! platform's own alarm retry: a job found `running` when an instance starts
//! was cut off, so it is marked `failed` with that reason (never silently
//! re-run: it may have half-applied its writes), and a schedule run cut off
//! the same way is recorded `interrupted` and retried if its schedule
//! allows.
//!
//! Every run that was taken is finished in the ledger, whatever happened to
//! it: a run whose job could not even be recorded ends `failed` with the
//! reason, never `running` until the next restart.
//!
//! **Computer jobs longer than one alarm.** An alarm's handler has a
//! limited wall time, and a build may take hours. So a job's command runs
//! detached on the computer, and one alarm follows it for at most the
//! host's job slice ([`Host::job_slice_ms`]); then the alarm ends with the
//! command still running, and the next one (armed for now) reads its
//! output on from the offset where the job's log ends, until the command
//! exits and its changes are applied (see `crate::computer::detached`).
//! The computer runs one command at a time, so such a job goes first in
//! every alarm, and the jobs queued after it wait for it; a schedule's
//! run is followed to its end within its alarm.
//!
//! Output reaches the job log through `crate::joblog::JobSink`, which
//! appends each piece as the backend hands it over and pushes it to
//! subscribed WebSockets in the same synchronous step, so a subscriber
//! never misses or doubles a piece (see `crate::subscriptions`).

use serde_json::Value;
use stead_scheduler::{
    signing, Job, JobState, Jobs, RunOutcome, RunTicket, SchedError, ScheduleAction, Schedules,
};

use crate::agent::Agent;
use crate::computer::detached::{self, DetachedJob};
use crate::computer::Ran;
use crate::error::ApiError;
use crate::host::Host;
use crate::joblog::JobSink;
use crate::{checkpoints, outbound, scheduling, settings, subscriptions};

/// How long one alarm follows a computer job unless the host says
/// otherwise: inside the 15 minutes of wall time an alarm gets in
/// production.
pub const DEFAULT_JOB_SLICE_MS: u64 = 10 * 60_000;

/// Most runs one alarm carries out before re-arming for the rest.
const MAX_RUNS_PER_ALARM: usize = 50;

impl<H: Host> Agent<H> {
    /// Sets the alarm to the earliest due time (now if a job is queued), or
    /// clears it when nothing is due.
    pub(crate) async fn arm(&self) -> Result<(), ApiError> {
        let waiting = Jobs::new(self.db()).has_queued()?
            || detached::first(self.db())
                .map_err(SchedError::from)?
                .is_some();
        let queued = waiting.then(|| self.now_ms());
        let watch = self
            .processes_to_watch()?
            .then(|| self.now_ms() + crate::processes::serve::TICK_MS);
        let due = Schedules::new(self.db()).next_wake()?;
        let fork = checkpoints::import_deadline(self.db(), &self.vfs())?;
        let tier = self.tier_due()?;
        let save = crate::environment::store::save_due(self.db())?;
        let at = [queued, due, fork, watch, tier, save]
            .into_iter()
            .flatten()
            .min();
        self.host.set_alarm(at).await?;
        self.alarm_at.set(at);
        Ok(())
    }

    /// Queues a job for `request` and arms the alarm to run it.
    pub(crate) async fn start_job(&self, source: &str, request: Value) -> Result<Job, ApiError> {
        let job = scheduling::create_job(self.db(), source, request, self.now_ms())?;
        self.arm().await?;
        Ok(job)
    }

    /// The alarm: run every queued job and every due schedule run, then
    /// re-arm. An error makes the platform retry the alarm.
    pub async fn alarm(&self) -> Result<(), ApiError> {
        // A tick restarts, starts and stops processes.
        self.processes_idle.set(false);
        match self.open(None, false) {
            Ok(_) => {}
            // The agent was deleted: nothing to run but the release of
            // its markers in the object store.
            Err(ApiError::AgentNotFound { .. }) => return self.release_deleted().await,
            Err(error) => return Err(error),
        }
        if self.drop_stalled_fork().await? {
            return Ok(());
        }
        let until = self.now_ms() + i64::try_from(self.host.job_slice_ms()).unwrap_or(i64::MAX);
        let outcome = self.drain(until).await;
        // Live processes: their output and states, every tick.
        let watched = self.watch_processes().await;
        // Computer terminals: their streams kept open.
        let tended = self.tend_terminals().await;
        // Chunks to and from the object store, in bounded batches.
        let tiered = self.tend_tier().await;
        // The environment of a computer about to be released as idle.
        let saved = self.save_before_idle_release().await;
        let outcome = outcome.and(watched).and(tended).and(tiered).and(saved);
        // A process serving ports that ended closes them.
        self.tell_port_grants().await;
        // Re-arm whatever happened, so a failure is retried and nothing
        // stalls.
        let armed = self.arm().await;
        outcome.and(armed)
    }

    /// Runs what is due until `until`: first the job whose command runs on
    /// the computer from an earlier alarm, then queued jobs and due
    /// schedule runs. Returns early when a computer job is still running
    /// at `until`.
    async fn drain(&self, until: i64) -> Result<(), ApiError> {
        if let Some(waiting) = detached::first(self.db()).map_err(SchedError::from)? {
            if self.resume_job(waiting, until).await?.is_none() {
                return Ok(());
            }
        }
        for _ in 0..MAX_RUNS_PER_ALARM {
            if let Some(job) = Jobs::new(self.db()).claim_next(self.now_ms())? {
                if self.run_job(job, Some(until)).await?.is_none() {
                    return Ok(());
                }
                continue;
            }
            let Some(ticket) = Schedules::new(self.db()).take_due(self.now_ms())? else {
                return Ok(());
            };
            let outcome = match ticket.schedule.action {
                ScheduleAction::Webhook => self.call_webhook(&ticket).await,
                ScheduleAction::Exec => self
                    .run_scheduled_exec(&ticket)
                    .await
                    .unwrap_or_else(|error| RunOutcome::failed(error.to_string())),
            };
            match Schedules::new(self.db()).finish_run(&ticket, &outcome, self.now_ms()) {
                // Deleted while it ran: nothing left to record.
                Ok(_) | Err(SchedError::ScheduleNotFound { .. }) => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }

    /// Runs the claimed job `job` and tells subscribers how it ended; `None`
    /// when its computer command is still running at `until` (a later
    /// alarm picks it up). Without `until` it runs to its end.
    async fn run_job(&self, job: Job, until: Option<i64>) -> Result<Option<Job>, ApiError> {
        let sink = JobSink::new(self, job.id);
        let actor = format!("job:{}", job.id);
        let result = self.exec(&actor, &job.request, &sink, until).await;
        self.end_job(job.id, result)
    }

    /// Follows job `waiting`'s detached command on from where its log ends,
    /// until it ends or `until`; as [`Agent::run_job`].
    async fn resume_job(&self, waiting: DetachedJob, until: i64) -> Result<Option<Job>, ApiError> {
        let job = match self.jobs().get(waiting.job) {
            Ok(job) if job.state == JobState::Running => job,
            // It ended some other way: nothing runs any more.
            Ok(_) | Err(SchedError::JobNotFound { .. }) => {
                detached::finished(self.db(), waiting.job).map_err(SchedError::from)?;
                return Ok(self.jobs().get(waiting.job).ok());
            }
            Err(error) => return Err(error.into()),
        };
        detached::next_slice(self.db(), job.id).map_err(SchedError::from)?;
        let sink = JobSink::new(self, job.id);
        let offset = u64::try_from(job.output_bytes).unwrap_or(0) + waiting.dropped;
        let result = self
            .resume_computer(&waiting, offset, job.cancel_requested, &sink, until)
            .await;
        self.end_job(job.id, result)
    }

    /// Records how job `id` ended, if it did, and tells subscribers.
    fn end_job(&self, id: i64, result: Result<Ran, ApiError>) -> Result<Option<Job>, ApiError> {
        let result = match result {
            Ok(Ran::Suspended(_)) => return Ok(None),
            Ok(Ran::Finished(outcome)) => Ok(outcome),
            Err(error) => Err(error),
        };
        let outcome = scheduling::outcome_of(&result);
        let job = self.jobs().finish(id, &outcome, self.now_ms())?;
        detached::finished(self.db(), id).map_err(SchedError::from)?;
        subscriptions::broadcast_job_end(self, &job);
        subscriptions::notify_changes(self);
        Ok(Some(job))
    }

    /// A schedule's exec run: a job, recorded in the ledger before it
    /// starts.
    async fn run_scheduled_exec(&self, ticket: &RunTicket) -> Result<RunOutcome, ApiError> {
        let request = ticket.schedule.exec.clone().unwrap_or(Value::Null);
        let source = format!("schedule:{}", ticket.schedule.id);
        let job = match scheduling::create_job(self.db(), &source, request, self.now_ms()) {
            Ok(job) => job,
            Err(error) => return Ok(RunOutcome::failed(error.to_string())),
        };
        Schedules::new(self.db()).set_job(ticket, job.id)?;
        let Some(job) = Jobs::new(self.db()).claim(job.id, self.now_ms())? else {
            return Ok(RunOutcome {
                job_id: Some(job.id),
                ..RunOutcome::failed("the job was cancelled before it started".into())
            });
        };
        let Some(job) = self.run_job(job, None).await? else {
            return Err(ApiError::Internal(
                "a scheduled run followed to its end was left running".into(),
            ));
        };
        let error = match (job.state, &job.error, job.exit_code) {
            (JobState::Succeeded, _, _) => None,
            (_, Some(error), _) => Some(error.clone()),
            (state, None, Some(code)) => Some(format!("job {state} with exit code {code}")),
            (state, None, None) => Some(format!("job {state}")),
        };
        Ok(RunOutcome {
            ok: job.state == JobState::Succeeded,
            job_id: Some(job.id),
            status: None,
            error,
        })
    }

    /// Checks that a webhook target may be called (see `crate::outbound`).
    pub(crate) async fn check_webhook_target(&self, url: &str) -> Result<(), ApiError> {
        let allow_private = settings::webhooks(self.db())?.allow_private_targets;
        let pending = outbound::check_url(url, allow_private).map_err(ApiError::WebhookRefused)?;
        if let outbound::Pending::Resolve(name) = pending {
            let resolved = self.host.resolve(&name).await;
            outbound::check_resolved(&name, resolved).map_err(ApiError::WebhookRefused)?;
        }
        Ok(())
    }

    /// A schedule's webhook call: a signed POST; 2xx is success.
    async fn call_webhook(&self, ticket: &RunTicket) -> RunOutcome {
        let (Some(url), Some(secret)) = (&ticket.schedule.url, &ticket.schedule.secret) else {
            return RunOutcome::failed("the schedule has no webhook url".into());
        };
        if let Err(refused) = self.check_webhook_target(url).await {
            return RunOutcome::failed(format!("the webhook target was refused: {refused}"));
        }
        let body = ticket.webhook_body();
        let timestamp = self.now_ms();
        let headers = [
            ("content-type", "application/json".to_string()),
            ("x-stead-timestamp", timestamp.to_string()),
            (
                "x-stead-signature",
                signing::signature(secret, timestamp, body.as_bytes()),
            ),
            ("x-stead-schedule", ticket.schedule.id.clone()),
        ];
        match self.host.post(url, &headers, body).await {
            Ok(status) if (200..300).contains(&status) => RunOutcome {
                ok: true,
                status: Some(i64::from(status)),
                ..RunOutcome::default()
            },
            Ok(status) if (300..400).contains(&status) => RunOutcome {
                status: Some(i64::from(status)),
                ..RunOutcome::failed(format!(
                    "the webhook answered {status}: redirects are not followed"
                ))
            },
            Ok(status) => RunOutcome {
                status: Some(i64::from(status)),
                ..RunOutcome::failed(format!("the webhook answered {status}"))
            },
            Err(error) => RunOutcome::failed(format!("the webhook call failed: {error}")),
        }
    }
}
