//! Time travel: checkpoints, diff, restore, undo, and fork (both halves).

use serde_json::json;
use stead_vfs::{Before, Operation, Scope, VfsError};

use super::{answer, Call, Handled};
use crate::agent::Agent;
use crate::checkpoints;
use crate::error::ApiError;
use crate::host::Host;
use crate::request::{read_body, resource, Body, Reply};

/// `GET /checkpoints`.
pub(super) fn list<H: Host>(agent: &Agent<H>, call: &Call<'_>) -> Result<Handled, ApiError> {
    answer(checkpoints::list(&agent.vfs(), call.query)?)
}

/// `POST /checkpoints`: `201`, pointing at the new checkpoint.
pub(super) fn create<H: Host>(agent: &Agent<H>, call: &mut Call<'_>) -> Result<Handled, ApiError> {
    let created = checkpoints::create(&agent.vfs(), &call.caller.actor(), &call.json()?)?;
    let id = created["checkpoint"]["id"].to_string();
    let location = resource(call.agent, &["checkpoints", &id]);
    Ok(Reply::made(true, created, location).into())
}

/// `GET /checkpoints/{id|name}`.
pub(super) fn show<H: Host>(agent: &Agent<H>, key: &str) -> Result<Handled, ApiError> {
    answer(checkpoints::show(&agent.vfs(), key)?)
}

/// `DELETE /checkpoints/{id|name}`.
pub(super) fn delete<H: Host>(agent: &Agent<H>, key: &str) -> Result<Handled, ApiError> {
    answer(checkpoints::delete(&agent.vfs(), key)?)
}

/// `POST /diff`.
pub(super) fn diff<H: Host>(agent: &Agent<H>, call: &mut Call<'_>) -> Result<Handled, ApiError> {
    answer(checkpoints::diff(&agent.vfs(), &call.json()?)?)
}

/// `POST /restore`: itself undoable, behind the checkpoint it takes first.
pub(super) fn restore<H: Host>(agent: &Agent<H>, call: &mut Call<'_>) -> Result<Handled, ApiError> {
    let vfs = agent.vfs();
    let restore = checkpoints::restore_request(&vfs, &call.json()?)?;
    let scope = match &restore.paths {
        Some(paths) => Scope::Paths(paths),
        None => Scope::Whole,
    };
    let before = Before {
        actor: &call.caller.actor(),
        operation: &Operation::Restore,
        note: None,
        scope,
    };
    let (restored, before) = checkpoints::around(agent, &vfs, before, |id| {
        let restored = vfs.restore(restore.checkpoint, restore.paths.as_deref())?;
        Ok::<_, VfsError>((restored, id))
    })?;
    answer(json!({ "restored": restored, "checkpoint": before }))
}

/// `POST /undo`: takes back the last operation that changed files.
pub(super) fn undo<H: Host>(agent: &Agent<H>, call: &Call<'_>) -> Result<Handled, ApiError> {
    let vfs = agent.vfs();
    let before = Before {
        actor: &call.caller.actor(),
        operation: &Operation::Undo,
        note: None,
        scope: Scope::Whole,
    };
    let (undone, before) = checkpoints::around(agent, &vfs, before, |id| {
        Ok::<_, VfsError>((vfs.undo()?, id))
    })?;
    answer(json!({ "undone": undone, "checkpoint": before }))
}

/// `POST /fork`: streams a checkpoint into a new agent, which the answer
/// points at.
pub(super) async fn fork<H: Host>(
    agent: &Agent<H>,
    call: &mut Call<'_>,
) -> Result<Handled, ApiError> {
    let fork = checkpoints::fork_request(&agent.vfs(), call.agent, &call.json()?)?;
    let location = resource(&fork.to, &[]);
    let forked = agent
        .fork_out(call.agent, &call.caller.actor(), fork)
        .await?;
    Ok(Reply::made(true, forked, location).into())
}

/// `POST /fork/import[?status]`: one page of a fork stream into this
/// agent, or where the copy stands. A fork makes a new agent: one that
/// exists, and is not this fork's copy under way, is not overwritten (nor
/// merged into).
pub(super) async fn fork_import<H: Host>(
    agent: &Agent<H>,
    call: &Call<'_>,
    body: &mut impl Body,
) -> Result<Handled, ApiError> {
    // Asked of storage, not the cache: a request that came in while the
    // first page's body was read saw no copy yet and cached "not forking",
    // which would refuse every later page.
    agent.not_forking.set(false);
    if !call.created && !agent.forking()? {
        return Err(ApiError::AgentExists {
            id: call.agent.to_string(),
        });
    }
    let status_only = call.query.iter().any(|(key, _)| key == "status");
    let origin = crate::fork::ForkOrigin::from_query(call.query);
    let page = match status_only {
        true => Ok(Vec::new()),
        false => {
            agent.first_fork_page.set(call.created);
            let page = read_body(body, checkpoints::MAX_FORK_PAGE).await;
            agent.first_fork_page.set(false);
            page
        }
    };
    // A page that could not be read is a fork that never began, as one
    // that could not be staged is.
    let imported = match page {
        Ok(page) => agent.fork_in(status_only, &page, origin.as_ref()).await,
        Err(error) => Err(error),
    };
    // The copy may bring the source's revocations.
    agent.unrevoked.borrow_mut().clear();
    agent.withdraw_port_grants();
    if call.created && (status_only || imported.is_err()) {
        // Asking, or a fork that never began, leaves nothing (but the
        // markers of what it adopted, to release).
        agent.wipe_storage().await?;
        agent.release_deleted().await?;
        agent.closed();
    } else {
        // A page may move the import deadline (or end it).
        agent.arm().await?;
    }
    answer(imported?)
}
