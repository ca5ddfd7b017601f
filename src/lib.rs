//! stead: a durable workspace for AI agents on Cloudflare Workers.
//!
//! The Worker authenticates each request and routes `/agents/{id}/...` to
//! that agent's Durable Object ([`workspace::Workspace`]), whose SQLite
//! database holds the agent's whole filesystem. The layout follows the
//! architecture:
//!
//! - `crates/sql`: the synchronous SQL interface and the schema migrations;
//! - `crates/vfs`: the filesystem (paths, nodes, chunks, tools);
//! - `src/api`: the HTTP API as plain Rust (routes, auth, tools, errors);
//! - `crates/sync`: the computer sync protocol, shared with `container/`;
//! - `src/computer`: the computer backend (driver, link, container owner);
//! - `crates/scheduler`: jobs, schedules, cron, the run ledger, hooks;
//! - `src/jobs.rs`, `src/socket.rs`: the alarm, jobs and hooks glue, and
//!   the hibernatable WebSocket;
//! - `src/workspace.rs`, `src/do_sql.rs`: the Durable Object glue.

pub mod api;
mod body;
pub mod computer;
mod do_sql;
mod jobs;
mod random;
mod socket;
mod workspace;

use serde_json::json;
use worker::{event, Context, Env, Headers, Request, RequestInit, Response, Result};

use api::auth::{self, Caller, Principal};
use api::{ApiError, Route, MAX_JSON_BODY};
use workspace::{error_response, json_response};

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    console_error_panic_hook::set_once();
    let url = req.url()?;
    let route = api::route(req.method().as_ref(), url.path());
    if let Ok(Route::Health) = route {
        return json_response(200, &json!({ "ok": true }));
    }
    // Everything else needs a credential, even to learn that a route is
    // wrong; but a hook call carries the hook's own secret, which the agent
    // checks.
    let public = matches!(&route, Ok(Route::Agent { action, .. }) if action.public());
    let admin_token = env.secret("API_TOKEN").ok().map(|s| s.to_string());
    let header = req.headers().get("authorization")?;
    let now_s = (js_sys::Date::now() / 1000.0) as i64;
    let principal = match auth::authenticate(header.as_deref(), admin_token.as_deref(), now_s) {
        Ok(principal) => Some(principal),
        Err(_) if public => None,
        Err(error) => return error_response(&error),
    };
    match route {
        Ok(Route::MintToken) => match mint_token(req, principal, admin_token, now_s).await {
            Ok(response) => Ok(response),
            Err(error) => error_response(&error),
        },
        Ok(Route::Agent { id, action }) => {
            if let Some(principal) = &principal {
                if let Err(error) = principal.require(&id, auth::required_scope(&action)) {
                    return error_response(&error);
                }
            }
            // Refuse an oversized JSON body here, before it travels on: an
            // answer sent while a large body is still arriving can be lost.
            if action.takes_json() {
                let declared = req.headers().get("content-length")?;
                if declared
                    .and_then(|v| v.parse::<usize>().ok())
                    .is_some_and(|len| len > MAX_JSON_BODY)
                {
                    return error_response(&ApiError::BodyTooLarge {
                        limit: MAX_JSON_BODY,
                    });
                }
            }
            let stub = env
                .durable_object("WORKSPACE")?
                .id_from_name(&id)?
                .get_stub()?;
            stub.fetch_with_request(with_caller(req, &Caller::of(principal.as_ref()))?)
                .await
        }
        Ok(Route::Health) => unreachable!("answered above"),
        Err(error) => error_response(&error),
    }
}

/// The request as the agent gets it: the caller in headers the Worker sets,
/// replacing any a client sent.
fn with_caller(req: Request, caller: &Caller) -> Result<Request> {
    let headers = Headers::new();
    for (name, value) in req.headers().entries() {
        if !name.starts_with("x-stead-actor") && !name.starts_with("x-stead-scopes") {
            headers.append(&name, &value)?;
        }
    }
    for (name, value) in caller.headers() {
        headers.set(name, &value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(req.method()).with_headers(headers);
    if let Some(body) = req.inner().body() {
        init.with_body(Some(body.into()));
    }
    Request::new_with_init(req.url()?.as_ref(), &init)
}

/// `POST /tokens`: the admin token mints an agent token.
async fn mint_token(
    mut req: Request,
    principal: Option<Principal>,
    admin_token: Option<String>,
    now_s: i64,
) -> std::result::Result<Response, ApiError> {
    if principal != Some(Principal::Admin) {
        return Err(ApiError::Forbidden {
            reason: "only the admin token mints tokens".into(),
        });
    }
    let key = admin_token.ok_or(ApiError::NotConfigured)?;
    let body = req.bytes().await?;
    if body.len() > MAX_JSON_BODY {
        return Err(ApiError::BodyTooLarge {
            limit: MAX_JSON_BODY,
        });
    }
    let request: auth::MintRequest = api::tools::decode(&body)?;
    let id = random::random_hex(32)?;
    let claims = request.claims(id, now_s)?;
    let token = auth::mint(&key, &claims);
    Ok(json_response(
        201,
        &json!({ "token": token, "id": claims.id, "agent": claims.agent,
                 "scopes": claims.scopes, "expires_at": claims.exp }),
    )?)
}
