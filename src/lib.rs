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
//! - `src/workspace.rs`, `src/do_sql.rs`: the Durable Object glue.

pub mod api;
mod body;
mod do_sql;
mod workspace;

use serde_json::json;
use worker::{event, Context, Env, Request, Response, Result};

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
    // Everything else needs the credential, even to learn that a route is wrong.
    let token = env.secret("API_TOKEN").ok().map(|s| s.to_string());
    let header = req.headers().get("authorization")?;
    if let Err(error) = api::authorize(header.as_deref(), token.as_deref()) {
        return error_response(&error);
    }
    match route {
        Ok(Route::Agent { id, action }) => {
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
            stub.fetch_with_request(req).await
        }
        Ok(Route::Health) => unreachable!("answered above"),
        Err(error) => error_response(&error),
    }
}
