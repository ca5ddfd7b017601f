//! stead: a durable workspace for AI agents on Cloudflare Workers.
//!
//! This crate is the platform glue; the agent's behaviour is plain Rust in
//! `crates/agent` ([`stead_agent`]), which knows nothing of Workers. Here:
//!
//! - the Worker's fetch handler (below): routes, authenticates the bearer
//!   credential and refuses what the caller may not do before any Durable
//!   Object wakes, then forwards `/agents/{id}/...` to that agent's Durable
//!   Object with the caller in headers only the Worker sets (a port's
//!   requests to its `Computer` object instead: `port_route`);
//! - [`workspace`]: the per-agent Durable Object, one call on the agent per
//!   event;
//! - [`platform`]: the agent's host (`stead_agent::Host`, `Socket`,
//!   `Transport`) over `worker` types;
//! - [`computer`]: the `Computer` Durable Object that owns the agent's
//!   container;
//! - `inspector`: the inspector page's files and its browser sessions;
//! - `do_sql`, `body`, `random`: SQLite, request bodies and randomness from
//!   the runtime.

#![deny(unreachable_pub)]

mod body;
mod chunk_store;
#[path = "computer/object.rs"]
pub mod computer;
mod do_sql;
mod egress;
mod inspector;
mod platform;
mod port_route;
mod random;
mod registry;
mod workspace;

use serde_json::json;
use stead_agent::auth::{self, Caller, Principal};
use stead_agent::catalog::formats::{render, Format};
use stead_agent::mcp::gate::{self, Origins};
use stead_agent::mcp::http::too_large;
use stead_agent::route::Front;
use stead_agent::shares;
use stead_agent::{Action, ApiError, Route, MAX_JSON_BODY};
use worker::{event, Context, Env, Headers, Method, Request, RequestInit, Response, Result};

use workspace::{error_response, json_response, respond_mcp};

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    console_error_panic_hook::set_once();
    // A request a container made, handed here by the platform's egress
    // interception (only that loopback carries props).
    if let Ok(props) = ctx.props::<egress::EgressProps>() {
        return egress::hand_to_agent(req, &env, props).await;
    }
    let started = platform::performance_now();
    let url = req.url()?;
    // Local development's baseline for the benchmark: a request that
    // reaches agent `{id}`'s object and does nothing there (no credential,
    // no routing, no agent), the floor under the ping.
    if let Some(id) = url.path().strip_prefix(workspace::BARE_ROUND_TRIP) {
        if platform::local_development(&env) {
            let stub = env
                .durable_object(platform::WORKSPACE_BINDING)?
                .id_from_name(id)?
                .get_stub()?;
            return stub.fetch_with_request(req).await;
        }
    }
    // A host under PORTS_HOST is a port's own origin: every path there is
    // the dev server's, and no API answers (`stead_agent::front`).
    let route = workspace::route_on_front(&env, &req.method(), &url);
    let on_port_origin = match &route {
        Ok(Route::Agent {
            action: Action::Port { front, .. },
            ..
        }) => *front == Front::Port,
        // A host there that names no port has nothing behind it to hide.
        Err(error @ ApiError::NotAPortOrigin { .. }) => return error_response(error),
        _ => false,
    };
    if let Ok(Route::Health) = route {
        return json_response(200, &json!({ "ok": true }));
    }
    // No discovery documents (OAuth metadata and the like) are published,
    // and saying so needs no credential: an MCP client looking for an
    // authorization server learns there is none instead of a 401.
    if !on_port_origin && url.path().starts_with("/.well-known/") {
        return error_response(&ApiError::NoRoute {
            method: req.method().to_string(),
            path: url.path().to_string(),
        });
    }
    // The MCP endpoint answers a browser's preflight (which carries no
    // credential) and methods it does not serve before any credential.
    let mcp = (!on_port_origin && gate::is_endpoint(url.path()))
        .then(|| workspace::mcp_origins(&env, &url));
    if let Some(origins) = &mcp {
        let origin = req.headers().get("origin")?;
        match req.method() {
            Method::Options => return respond_mcp(origins.preflight(origin.as_deref())),
            Method::Get | Method::Post | Method::Delete => {}
            other => {
                let refused = gate::method_not_allowed(other.as_ref());
                return respond_mcp(origins.cors(refused, origin.as_deref()));
            }
        }
    }
    let admin_token = env.secret("API_TOKEN").ok().map(|s| s.to_string());
    let now_s = (js_sys::Date::now() / 1000.0) as i64;
    // The inspector's page holds no data, so it needs no credential; its
    // session routes take a token or the session itself.
    match &route {
        Ok(Route::Inspector) => return inspector::serve_page(req, &env).await,
        Ok(Route::Session(step)) => {
            return inspector::session_route(*step, req, &env, admin_token.as_deref(), now_s).await
        }
        _ => {}
    }
    // Everything else needs a credential, even to learn that a route is
    // wrong; but a hook call carries the hook's own secret, which the agent
    // checks.
    // So does a terminal upgrade with a ticket and no bearer credential
    // (a browser's): the agent redeems the ticket.
    let header = req.headers().get("authorization")?;
    let ticketed = header.is_none()
        && url
            .query_pairs()
            .any(|(key, _)| key == stead_agent::terminal::tickets::QUERY_PARAM);
    let public = matches!(&route, Ok(Route::Agent { action, .. })
        if action.public() || (ticketed && action.takes_ticket()));
    // A browser signed in to the inspector presents its session cookie
    // instead (never on a port's origin, where it is never sent).
    let from_cookie = match (&header, on_port_origin) {
        (None, false) => inspector::cookie_principal(&req, &url, admin_token.as_deref(), now_s)?,
        _ => None,
    };
    let by_cookie = from_cookie.is_some();
    // A port may be reached on its own origin with a share link instead
    // (see `stead_agent::shares`): checked here as a token is, revocation
    // by the agent.
    let shared = match &route {
        Ok(Route::Agent { action, .. }) if action.takes_share_link() => {
            let cookies = req.headers().get("cookie")?;
            shares::presented(url.query(), cookies.as_deref()).map(str::to_string)
        }
        _ => None,
    };
    let bearer = match from_cookie {
        Some(Ok(principal)) => Ok(principal),
        Some(Err(error)) => return error_response(&error),
        None => auth::authenticate(header.as_deref(), admin_token.as_deref(), now_s),
    };
    let principal = match bearer {
        Ok(principal) => Some(principal),
        Err(_) if public => None,
        Err(error) => match (shared, &admin_token) {
            (Some(capability), Some(key)) => match shares::verify(&capability, key, now_s) {
                Ok(claims) => Some(Principal::Share(claims)),
                Err(refused) => return error_response(&refused),
            },
            _ => return refuse(req, &error, header.is_some(), mcp.as_ref()).await,
        },
    };
    match route {
        Ok(Route::Tools) => {
            // Any valid credential: what it may call decides what it sees.
            let query: Vec<(String, String)> = url
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let caller = Caller::of(principal.as_ref());
            match Format::from_query(&query).and_then(|format| render(format, &caller)) {
                Ok(tools) => json_response(200, &tools),
                Err(error) => error_response(&error),
            }
        }
        Ok(Route::MintToken) => match mint_token(req, principal, admin_token, now_s, &env).await {
            Ok(response) => Ok(response),
            Err(error) => error_response(&error),
        },
        Ok(Route::Agents) => match principal {
            Some(Principal::Admin) => registry::list(&env, &url).await,
            _ => error_response(&ApiError::Forbidden {
                reason: "only the admin token lists agents".into(),
            }),
        },
        Ok(Route::RevokeToken) => match revoke_token(req, principal, &env).await {
            Ok(response) => Ok(response),
            Err(error) => error_response(&error),
        },
        Ok(Route::Agent { id, action }) => {
            if let Some(principal) = &principal {
                if let Err(error) = principal.admit(&id, action.policy().access) {
                    return refuse(req, &error, true, mcp.as_ref()).await;
                }
            }
            // A port is reached through its computer's owner, which asks
            // the agent only what it does not know (`port_route`).
            if let Action::Port { port, front, .. } = action {
                let at = (id.as_str(), port, front);
                let answer = port_route::forward(req, &env, at, principal.as_ref()).await?;
                return match by_cookie {
                    true => inspector::guarded(answer),
                    false => Ok(answer),
                };
            }
            // Refuse an oversized JSON body here, before it travels on: an
            // answer sent while a large body is still arriving can be lost.
            if action.takes_json() {
                let declared = req.headers().get("content-length")?;
                if declared
                    .and_then(|v| v.parse::<usize>().ok())
                    .is_some_and(|len| len > MAX_JSON_BODY)
                {
                    if action == Action::Mcp {
                        let refusal = too_large(MAX_JSON_BODY);
                        return json_response(refusal.status, &refusal.to_response(None));
                    }
                    return error_response(&ApiError::BodyTooLarge {
                        limit: MAX_JSON_BODY,
                    });
                }
            }
            let stub = env
                .durable_object(platform::WORKSPACE_BINDING)?
                .id_from_name(&id)?
                .get_stub()?;
            let forwarded = with_caller(req, &Caller::of(principal.as_ref()))?;
            let sent = platform::performance_now();
            let answer = stub.fetch_with_request(forwarded).await?;
            let round_trip = platform::performance_now() - sent;
            registry::note(&env, &id, &action, &answer).await;
            let answer = match by_cookie {
                true => inspector::guarded(answer)?,
                false => answer,
            };
            if !platform::local_development(&env) {
                return Ok(answer);
            }
            // Local development: the front's time (authentication,
            // routing) and the hop to the object (the round trip less what
            // the object spent) join the object's breakdown.
            let timing = answer.headers().get("server-timing")?.unwrap_or_default();
            let hop = (round_trip - agent_time(&timing)).max(0.0);
            let front = format!("front;dur={:.3}, hop;dur={hop:.3}", sent - started);
            workspace::with_server_timing(answer, &front)
        }
        Ok(Route::Health | Route::Inspector | Route::Session(_)) => {
            unreachable!("answered above")
        }
        Err(error) => error_response(&error),
    }
}

/// The object's whole time (`agent;dur=`) in a `Server-Timing` value; 0
/// when it has none (its answer was not timed).
fn agent_time(timing: &str) -> f64 {
    timing
        .split(',')
        .find_map(|entry| entry.trim().strip_prefix("agent;dur="))
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(0.0)
}

/// The answer to a refused credential; on the MCP endpoint (`mcp`), as MCP
/// clients read one: a JSON-RPC error with the request's id (from a small
/// body) and a `WWW-Authenticate` challenge (`stead_agent::mcp::gate`).
async fn refuse(
    mut req: Request,
    error: &ApiError,
    presented: bool,
    mcp: Option<&Origins>,
) -> Result<Response> {
    let Some(origins) = mcp else {
        return error_response(error);
    };
    let declared = req.headers().get("content-length")?;
    let small = declared
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|len| len <= gate::ID_PROBE_BYTES);
    let body = match small {
        true => req.bytes().await.unwrap_or_default(),
        false => Vec::new(),
    };
    let origin = req.headers().get("origin")?;
    let refused = gate::refused(error, presented, &body);
    respond_mcp(origins.cors(refused, origin.as_deref()))
}

/// The request as the agent gets it: the caller in headers the Worker sets,
/// replacing any a client sent.
fn with_caller(req: Request, caller: &Caller) -> Result<Request> {
    let headers = Headers::new();
    for (name, value) in req.headers().entries() {
        if ![
            auth::ACTOR_HEADER,
            auth::SCOPES_HEADER,
            auth::EXPIRES_HEADER,
        ]
        .contains(&name.as_str())
        {
            headers.append(&name, &value)?;
        }
    }
    for (name, value) in caller.headers() {
        headers.set(name, &value)?;
    }
    // A redirect the agent answers (a dev server's, through the port
    // route) is the client's to follow: a request made here would follow
    // it by default.
    let init = platform::passed_on(&req, headers);
    Request::new_with_init(req.url()?.as_ref(), &init)
}

/// `POST /tokens`: the admin token mints an agent token. The agent records
/// it (`crate::minted` in the agent crate: its admin lists its tokens)
/// before it is handed out, so the agent must exist.
async fn mint_token(
    mut req: Request,
    principal: Option<Principal>,
    admin_token: Option<String>,
    now_s: i64,
    env: &Env,
) -> std::result::Result<Response, ApiError> {
    let platform = |e: worker::Error| ApiError::Internal(e.to_string());
    if principal != Some(Principal::Admin) {
        return Err(ApiError::Forbidden {
            reason: "only the admin token mints tokens".into(),
        });
    }
    let key = admin_token.ok_or(ApiError::NotConfigured)?;
    let body = req.bytes().await.map_err(platform)?;
    if body.len() > MAX_JSON_BODY {
        return Err(ApiError::BodyTooLarge {
            limit: MAX_JSON_BODY,
        });
    }
    let request: auth::MintRequest = stead_agent::decode::decode(&body)?;
    let id = random::random_hex(32).map_err(|e| ApiError::Internal(format!("{e:?}")))?;
    let claims = request.claims(id, now_s)?;
    let record = stead_agent::minted::Minted {
        id: claims.id.clone(),
        scopes: claims.scopes.clone(),
        minted_at: now_s,
        expires_at: claims.exp,
    };
    let record = serde_json::to_vec(&record).map_err(|e| ApiError::Internal(e.to_string()))?;
    let recorded = to_agent_as_admin(env, &req, &claims.agent, "tokens/minted", &record).await?;
    if recorded.status_code() != 200 {
        // The agent's refusal as it is (an agent that does not exist).
        return Ok(recorded);
    }
    let token = auth::mint(&key, &claims);
    json_response(
        201,
        &json!({ "token": token, "id": claims.id, "agent": claims.agent,
                 "scopes": claims.scopes, "expires_at": claims.exp }),
    )
    .map_err(platform)
}

/// `POST /tokens/revoke`: the admin token revokes a token named by its
/// agent and id; the revocation is kept by that agent, so the request goes
/// on to it as `POST /agents/{agent}/tokens/revoke`.
async fn revoke_token(
    mut req: Request,
    principal: Option<Principal>,
    env: &Env,
) -> std::result::Result<Response, ApiError> {
    let platform = |e: worker::Error| ApiError::Internal(e.to_string());
    if principal != Some(Principal::Admin) {
        return Err(ApiError::Forbidden {
            reason: "only the admin token revokes tokens".into(),
        });
    }
    let body = req.bytes().await.map_err(platform)?;
    if body.len() > MAX_JSON_BODY {
        return Err(ApiError::BodyTooLarge {
            limit: MAX_JSON_BODY,
        });
    }
    let request: auth::RevokeRequest = stead_agent::decode::decode(&body)?;
    let agent = request.agent()?;
    to_agent_as_admin(env, &req, agent, "tokens/revoke", &body).await
}

/// `POST /agents/{agent}/{action}` with `body`, as the deployment's admin:
/// what the Worker's own token routes ask of the agent that keeps a
/// token's record.
async fn to_agent_as_admin(
    env: &Env,
    req: &Request,
    agent: &str,
    action: &str,
    body: &[u8],
) -> std::result::Result<Response, ApiError> {
    let platform = |e: worker::Error| ApiError::Internal(e.to_string());
    let headers = Headers::new();
    for (name, value) in Caller::Admin.headers() {
        headers.set(name, &value).map_err(platform)?;
    }
    headers
        .set("content-type", "application/json")
        .map_err(platform)?;
    let mut init = RequestInit::new();
    init.with_method(worker::Method::Post)
        .with_headers(headers)
        .with_body(Some(js_sys::Uint8Array::from(body).into()));
    let mut url = req.url().map_err(platform)?;
    url.set_path(&format!("/agents/{agent}/{action}"));
    url.set_query(None);
    let forwarded = Request::new_with_init(url.as_ref(), &init).map_err(platform)?;
    let namespace = env
        .durable_object(platform::WORKSPACE_BINDING)
        .map_err(platform)?;
    namespace
        .id_from_name(agent)
        .and_then(|id| id.get_stub())
        .map_err(platform)?
        .fetch_with_request(forwarded)
        .await
        .map_err(platform)
}
