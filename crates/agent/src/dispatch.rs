//! Where a request is authorized, carried out and audited: the one entry
//! for every way in.
//!
//! An HTTP request, a tool call over a WebSocket and a hook call all become
//! a [`Request`] and go through [`Agent::dispatch`]: the caller is checked
//! against the action's [`Policy`] (and, for a token, against the agent's
//! revocations), the action runs, and if its policy says it can change
//! something, the outcome is recorded in the audit log. Nothing else in the
//! crate authorizes or audits, so an entry point added later cannot forget
//! to.

use serde_json::{json, Value};
use stead_scheduler::SchedError;
use stead_vfs::Node;

use crate::agent::Agent;
use crate::auth::{self, Caller};
use crate::breakdown::{Breakdown, Stage, Stopwatch};
use crate::error::ApiError;
use crate::handlers::{self, Call};
use crate::host::Host;
use crate::policy::{Access, Audit, Input, Policy};
use crate::range::Selected;
use crate::request::{read_body, Body, Request};
use crate::route::{Action, MAX_JSON_BODY};
use crate::{audit, tools};

/// Defined in `crate::request`; `crate::terminal` still names it here.
pub(crate) use crate::request::Reply;

impl<H: Host> Agent<H> {
    /// Serves a request from any entry point: authorize, carry out, audit.
    pub async fn dispatch<B: Body>(&self, request: Request<B>) -> Result<Reply, ApiError> {
        let mut stopwatch = Stopwatch::idle(&self.host);
        self.serve(request, &mut stopwatch).await
    }

    /// [`Self::dispatch`], measuring where the time and SQL statements go
    /// (what local development answers in `Server-Timing`).
    pub async fn dispatch_timed<B: Body>(
        &self,
        request: Request<B>,
    ) -> (Result<Reply, ApiError>, Breakdown) {
        let mut stopwatch = Stopwatch::start(&self.host);
        let outcome = self.serve(request, &mut stopwatch).await;
        (outcome, stopwatch.finish())
    }

    async fn serve<B: Body>(
        &self,
        mut request: Request<B>,
        stopwatch: &mut Stopwatch<'_, H>,
    ) -> Result<Reply, ApiError> {
        let redeemed = self.redeem_ticket(&mut request);
        let policy = request.action.policy();
        let mut note = audit::Note {
            target: policy.target.of(&request.agent, None),
            detail: None,
        };
        let recorded = policy.audit;
        // A refusal is recorded like any other outcome: who tried what.
        let outcome = match redeemed.and_then(|()| self.authorize(&request, policy)) {
            Ok(()) => self.perform(&mut request, &mut note, stopwatch).await,
            Err(refused) => Err(refused),
        };
        stopwatch.lap(Stage::Operation);
        // Only an action that can change something is recorded, and only
        // such an action can have moved the workspace: one that cannot pays
        // for neither the audit entry nor the live push.
        let revision = match recorded {
            Audit::Record(name) => self.audit(&request.caller, name, &note, &outcome),
            Audit::ReadOnly => None,
        };
        stopwatch.lap(Stage::Audit);
        if outcome.is_ok() {
            // Costs nothing with no socket or stream listening.
            crate::subscriptions::notify_changes(self);
            stopwatch.lap(Stage::Notify);
            if let Some(revision) = revision {
                // Best effort: the next tick pushes the edit anyway.
                let _ = self.hasten_live_push(revision).await;
                // Likewise: the alarm is re-armed on its next firing.
                let _ = self.hasten_tier().await;
            }
            stopwatch.lap(Stage::LiveSync);
        }
        // Nothing to do unless the request withdrew access to a port.
        self.tell_port_grants().await;
        outcome
    }

    /// Carries out an authorized request: admits it to the agent, reads its
    /// JSON body (once: the audit's target and the handler's typed decode
    /// both come from that parse), and hands it to its handler.
    async fn perform<B: Body>(
        &self,
        request: &mut Request<B>,
        note: &mut audit::Note,
        stopwatch: &mut Stopwatch<'_, H>,
    ) -> Result<Reply, ApiError> {
        let Request {
            entry,
            agent,
            action,
            caller,
            query,
            hook,
            range,
            upgrade,
            origin,
            body,
        } = request;
        let policy = action.policy();
        let created = self.admission(agent, action, caller).await?;
        stopwatch.lap(Stage::Admission);
        let json = match policy.input {
            Input::Json => crate::decode::parse(&read_body(body, MAX_JSON_BODY).await?),
            Input::Nothing | Input::Payload | Input::Stream => Ok(Value::Null),
        };
        if let Ok(value) = &json {
            note.target = policy.target.of(agent, Some(value));
            if policy.dry_run && tools::dry_run(value) {
                note.detail = Some(json!({ "dry_run": true }));
            }
        }
        let call = Call {
            entry: *entry,
            agent,
            caller,
            query,
            hook,
            range,
            upgrade: *upgrade,
            origin,
            created,
            json,
        };
        let handled = handlers::handle(self, action, call, body).await?;
        note.detail = handled.detail.or(note.detail.take());
        Ok(handled.reply)
    }

    /// Opens the agent for `action` (creating it, for an action that
    /// does, if `caller` may) and arms its alarm once per instance; a fork
    /// still being copied answers nothing but its copy (and a delete,
    /// which drops it). Returns whether the agent was created.
    async fn admission(
        &self,
        agent: &str,
        action: &Action,
        caller: &Caller,
    ) -> Result<bool, ApiError> {
        if action.creates() {
            self.may_create(agent, action, caller)?;
        }
        let created = match self.open(Some(agent), action.creates()) {
            // A hook caller learns nothing about which agents exist.
            Err(ApiError::AgentNotFound { .. }) if action.public() => {
                return Err(SchedError::HookRefused.into())
            }
            opened => opened?,
        };
        if !self.armed.replace(true) {
            self.arm().await?;
        }
        if !matches!(action, Action::ForkImport | Action::Delete) && self.forking()? {
            return Err(ApiError::Forking);
        }
        Ok(created)
    }

    /// A terminal upgrade that came with a ticket instead of a bearer
    /// credential is the ticket's minter's, once (`crate::terminal::tickets`).
    fn redeem_ticket<B>(&self, request: &mut Request<B>) -> Result<(), ApiError> {
        if !request.action.takes_ticket() || request.caller != Caller::Anonymous {
            return Ok(());
        }
        let Some(ticket) = crate::terminal::tickets::presented(&request.query) else {
            return Ok(());
        };
        self.open(Some(&request.agent), false)?;
        request.caller = crate::terminal::tickets::redeem(self.db(), ticket, self.now_ms())?;
        Ok(())
    }

    /// Checks the caller may perform the action: it holds the access the
    /// policy asks for, and its token (if any) is not revoked.
    fn authorize<B>(&self, request: &Request<B>, policy: Policy) -> Result<(), ApiError> {
        self.admit(&request.agent, &request.caller, policy.access)
    }

    /// Checks `caller` may act on agent `agent` with `access`: it holds the
    /// access, and its token (if any) is not revoked. (The MCP endpoint
    /// checks its callers here too, before any of its methods.)
    pub(crate) fn admit(
        &self,
        agent: &str,
        caller: &Caller,
        access: Access,
    ) -> Result<(), ApiError> {
        access.lets_in(caller)?;
        self.credential_holds(agent, caller)
    }

    /// Checks that `caller` may make agent `agent` by `action`, if it does
    /// not exist yet. Only the deployment's admin token creates an agent:
    /// an agent token's `admin` acts on its agent once it exists (a `PUT`
    /// of it answers it as it is). And a fork makes a new agent, never one
    /// under a deleted agent's id (see `crate::tombstone`).
    fn may_create(&self, agent: &str, action: &Action, caller: &Caller) -> Result<(), ApiError> {
        match self.open(Some(agent), false) {
            Err(ApiError::AgentNotFound { .. }) => {}
            opened => return opened.map(|_| ()),
        }
        Access::DeploymentAdmin.admits(caller)?;
        if *action == Action::ForkImport && crate::tombstone::deleted_at(self.db())?.is_some() {
            return Err(ApiError::AgentExisted {
                id: agent.to_string(),
            });
        }
        Ok(())
    }

    /// Checks that `caller`'s token, if any, has neither expired nor been
    /// revoked. Asked for every request, and again for every message and
    /// every push on what a request opened (a WebSocket, an MCP stream),
    /// which outlives the Worker's check of that request.
    fn credential_holds(&self, agent: &str, caller: &Caller) -> Result<(), ApiError> {
        if caller.token_id().is_some() {
            match self.open(Some(agent), false) {
                Ok(_) => {}
                // An agent not created yet has no revocations to check (and
                // the action then fails as it must, unless it creates the
                // agent): only the expiry is.
                Err(ApiError::AgentNotFound { .. }) => {
                    return caller.check_expiry(self.now_ms().div_euclid(1000))
                }
                Err(error) => return Err(error),
            }
        }
        self.token_holds(caller)
    }

    /// [`Self::credential_holds`] on an agent already open: what a message
    /// on a socket asks before it is served.
    pub(crate) fn token_holds(&self, caller: &Caller) -> Result<(), ApiError> {
        self.token_unexpired(caller)?;
        let Some(token) = caller.token_id() else {
            return Ok(());
        };
        if self.unrevoked.borrow().contains(token) {
            return Ok(());
        }
        match auth::standing(self.db(), token)? {
            auth::Standing::Revoked => return Err(ApiError::TokenRevoked),
            auth::Standing::Recorded | auth::Standing::Unrecorded => {}
            // A token this agent's ledger never recorded, on an agent made
            // again after a deletion, was minted for the agent before: it
            // must not open this one's files.
            auth::Standing::Predecessors => {
                let deleted_ms = crate::tombstone::deleted_at(self.db())?.unwrap_or_default();
                return Err(ApiError::TokenPredatesAgent { deleted_ms });
            }
        }
        let mut unrevoked = self.unrevoked.borrow_mut();
        if unrevoked.len() >= crate::agent::MAX_UNREVOKED {
            unrevoked.clear();
        }
        unrevoked.insert(token.to_string());
        Ok(())
    }

    /// Refuses a token past its expiry: what a push to a socket or a stream
    /// asks before it goes out. (A revocation closes them at once, so a
    /// push need not look the token up.)
    pub(crate) fn token_unexpired(&self, caller: &Caller) -> Result<(), ApiError> {
        caller.check_expiry(self.now_ms().div_euclid(1000))
    }

    /// Records a call that could change something in the audit log (unless
    /// the agent is gone). The call has happened: failing to record it must
    /// not fail it. Returns the workspace's revision it recorded (`None`
    /// for a deleted agent, or a revision that could not be read).
    fn audit<T>(
        &self,
        caller: &Caller,
        action: &str,
        note: &audit::Note,
        outcome: &Result<T, ApiError>,
    ) -> Option<i64> {
        if !self.is_open() {
            return None;
        }
        let result = match outcome {
            Ok(_) => "ok",
            Err(error) => error.code(),
        };
        audit::record(
            self.db(),
            self.now_ms(),
            &caller.actor(),
            action,
            note,
            result,
        )
        .ok()
        .flatten()
    }
}

/// The headers a file's download carries (a `HEAD` of it too): its type
/// (bytes), which of its bytes are sent ([`Selected::headers`]), its size,
/// mode and revision, and validators: an `ETag` that changes whenever the
/// file does ([`etag`]) and `Last-Modified` (its mtime).
pub fn file_headers(node: &Node, sent: Selected) -> Vec<(&'static str, String)> {
    let mut headers = vec![("content-type", "application/octet-stream".into())];
    headers.extend(sent.headers(node.size));
    headers.extend([
        ("etag", etag(node)),
        ("last-modified", http_date(node.mtime)),
        ("x-file-size", node.size.to_string()),
        ("x-file-mode", format!("{:04o}", node.mode)),
        ("x-revision", node.rev.to_string()),
    ]);
    headers
}

/// A file's strong entity tag: its inode and the revision of its last
/// change, so it changes whenever the file does.
pub fn etag(node: &Node) -> String {
    format!("\"{}-{}\"", node.ino, node.rev)
}

/// `ms` (since the Unix epoch) as an HTTP date (RFC 9110, 5.6.7:
/// `Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn http_date(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}
