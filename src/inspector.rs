//! The inspector's glue (`/ui/`): its static files from the assets binding
//! with their headers, and its session routes. What a session is, and what
//! a cookie-authenticated request must show, is `stead_agent::session`.

use serde_json::json;
use stead_agent::auth::{Caller, Principal};
use stead_agent::route::SessionStep;
use stead_agent::session::{self, Holder, Provenance, SessionClaims, SignIn};
use stead_agent::{ApiError, MAX_JSON_BODY};
use worker::{Env, Headers, Method, Request, RequestInit, Response, Result};

use crate::workspace::{error_response, json_response};

/// The assets binding (`[assets]` in wrangler.toml): the built page.
const ASSETS_BINDING: &str = "ASSETS";

/// `GET /ui/...`: a file of the page, with the page's headers.
pub(crate) async fn serve_page(req: Request, env: &Env) -> Result<Response> {
    let answer = env.assets(ASSETS_BINDING)?.fetch_request(req).await?;
    let headers = Headers::new();
    for (name, value) in answer.headers().entries() {
        headers.append(&name, &value)?;
    }
    for (name, value) in session::page_headers() {
        headers.set(name, value)?;
    }
    Ok(answer.with_headers(headers))
}

/// The principal a session cookie stands for, if the request carries one;
/// a cookie that comes from elsewhere than the page is refused.
pub(crate) fn cookie_principal(
    req: &Request,
    url: &worker::Url,
    admin_token: Option<&str>,
    now_s: i64,
) -> Result<Option<std::result::Result<Principal, ApiError>>> {
    let cookies = req.headers().get("cookie")?;
    let Some(value) = session::presented(cookies.as_deref()) else {
        return Ok(None);
    };
    let Some(key) = admin_token else {
        return Ok(Some(Err(ApiError::NotConfigured)));
    };
    let fetch_site = req.headers().get("sec-fetch-site")?;
    let origin = req.headers().get("origin")?;
    let upgrade = req.headers().get("upgrade")?;
    let own_origin = url.origin().ascii_serialization();
    let method = req.method();
    let provenance = Provenance {
        method: method.as_ref(),
        upgrade: upgrade.is_some_and(|u| u.eq_ignore_ascii_case("websocket")),
        fetch_site: fetch_site.as_deref(),
        origin: origin.as_deref(),
        own_origin: &own_origin,
    };
    Ok(Some(session::check_origin(provenance).and_then(|()| {
        session::verify(value, key, now_s).map(|claims| claims.principal())
    })))
}

/// An API answer to a cookie-authenticated request, with the headers that
/// keep its bytes from running as a page (a WebSocket's upgrade as it is;
/// an answer with a policy of its own, a port's sandbox, keeps it).
pub(crate) fn guarded(answer: Response) -> Result<Response> {
    if answer.status_code() == 101 {
        return Ok(answer);
    }
    let headers = Headers::new();
    for (name, value) in answer.headers().entries() {
        headers.append(&name, &value)?;
    }
    for (name, value) in session::api_headers() {
        if !headers.has(name)? {
            headers.set(name, value)?;
        }
    }
    Ok(answer.with_headers(headers))
}

/// `/ui/session`: sign in, show, sign out.
pub(crate) async fn session_route(
    step: SessionStep,
    mut req: Request,
    env: &Env,
    admin_token: Option<&str>,
    now_s: i64,
) -> Result<Response> {
    let url = req.url()?;
    let cookies = req.headers().get("cookie")?;
    match step {
        SessionStep::SignIn => {
            // A sign-in from another page would plant its session here.
            let fetch_site = req.headers().get("sec-fetch-site")?;
            let origin = req.headers().get("origin")?;
            let own_origin = url.origin().ascii_serialization();
            let provenance = Provenance {
                method: "POST",
                upgrade: false,
                fetch_site: fetch_site.as_deref(),
                origin: origin.as_deref(),
                own_origin: &own_origin,
            };
            if let Err(error) = session::check_origin(provenance) {
                return error_response(&error);
            }
            let body = req.bytes().await?;
            if body.len() > MAX_JSON_BODY {
                return error_response(&ApiError::BodyTooLarge {
                    limit: MAX_JSON_BODY,
                });
            }
            let opened = stead_agent::decode::decode::<SignIn>(&body)
                .and_then(|sign_in| session::open(sign_in.token.trim(), admin_token, now_s));
            let claims = match opened {
                Ok(claims) => claims,
                Err(error) => return error_response(&error),
            };
            // An agent token is asked of its agent once: a revoked one, or
            // one for an agent that is gone, opens nothing.
            if let Holder::Token { claims: token } = &claims.holder {
                let caller = Caller::of(Some(&Principal::Token(token.clone())));
                let answer = agent_info(env, &url, &token.agent, &caller).await?;
                if answer.status_code() != 200 {
                    return Ok(answer);
                }
            }
            let Some(key) = admin_token else {
                return error_response(&ApiError::NotConfigured);
            };
            let value = session::seal(key, &claims);
            with_cookie(
                json_response(201, &claims.describe())?,
                &session::cookie(&value, claims.exp, now_s),
            )
        }
        SessionStep::Show => match signed_in(cookies.as_deref(), admin_token, now_s) {
            Ok(claims) => json_response(200, &claims.describe()),
            Err(error) => error_response(&error),
        },
        SessionStep::SignOut => with_cookie(
            json_response(200, &json!({ "signed_out": true }))?,
            &session::cleared_cookie(),
        ),
    }
}

/// The session the cookies carry.
fn signed_in(
    cookies: Option<&str>,
    admin_token: Option<&str>,
    now_s: i64,
) -> std::result::Result<SessionClaims, ApiError> {
    let value = session::presented(cookies).ok_or(ApiError::Unauthorized)?;
    let key = admin_token.ok_or(ApiError::NotConfigured)?;
    session::verify(value, key, now_s)
}

fn with_cookie(response: Response, cookie: &str) -> Result<Response> {
    let headers = response.headers().clone();
    headers.set("set-cookie", cookie)?;
    headers.set("cache-control", "no-store")?;
    Ok(response.with_headers(headers))
}

/// `GET /agents/{agent}` as `caller`: whether the agent takes the token.
async fn agent_info(
    env: &Env,
    url: &worker::Url,
    agent: &str,
    caller: &Caller,
) -> Result<Response> {
    let headers = Headers::new();
    for (name, value) in caller.headers() {
        headers.set(name, &value)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Get).with_headers(headers);
    let mut target = url.clone();
    target.set_path(&format!(
        "/agents/{}",
        stead_agent::route::percent_encode(agent)
    ));
    target.set_query(None);
    let request = Request::new_with_init(target.as_ref(), &init)?;
    env.durable_object(crate::platform::WORKSPACE_BINDING)?
        .id_from_name(agent)?
        .get_stub()?
        .fetch_with_request(request)
        .await
}
