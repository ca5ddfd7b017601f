//! Ports: HTTP and WebSockets to a port a running process declared, on
//! the port's own origin (`crate::front`: `{port}-{agent label}.{PORTS_HOST}`)
//! or, for API clients with a token, under `/agents/{id}/ports/{port}/...`
//! on the API's origin.
//!
//! The agent decides whether a request may go through ([`admit`]: the port
//! is served by one of its running processes; a share link is for that
//! port and not revoked), which the `Computer` object that owns the
//! container asks once per caller and port and keeps for a while
//! (`crate::port_grants`); the Worker rewrites the request and carries it,
//! streaming both ways, to that object (see
//! `stead_sync::owner::PORTS_PREFIX`), never through the agent's own. The
//! rules here are plain functions over header lists, so they are tested
//! without a platform:
//!
//! - to the dev server go the request's headers minus hop-by-hop ones
//!   (kept for a WebSocket upgrade, which needs them), our credentials
//!   (`Authorization`, the share cookie, the inspector's session cookie) and the headers the Worker sets
//!   for the agent; the target is the URL path (on the API's origin, the
//!   path after the prefix) with the query minus the share parameter;
//!   `X-Forwarded-Host` and `-Proto` say where the browser is, and on the
//!   API's origin `X-Forwarded-Prefix` where the port is mounted;
//! - back come its headers minus hop-by-hop ones; redirects (3xx) pass
//!   through as they are. A `Set-Cookie` loses any `Domain`, so a dev
//!   server's cookie stays on its own host and never reaches another
//!   port's origin under the same parent.
//! - On the API's origin the content is untrusted on a trusted origin: it
//!   is answered sandboxed ([`SANDBOX`]: scripts run with an opaque origin,
//!   so they can read nothing of the API's), never sniffed into another
//!   type, and with redirects to an absolute path (`Location: /login`) and
//!   cookie paths moved under the prefix, so a redirect stays on the port.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::processes::record::{self, State};
use crate::route::Front;
use crate::shares;

/// Headers that describe one connection, not the message (RFC 9110 7.6.1).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// What the glue forwards, once the agent has let a port request through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    pub port: u16,
    /// Where the port is reached.
    pub mount: Mount,
    /// A cookie to set on the answer: the share link's capability, when it
    /// came in the query (a browser's first visit).
    pub set_cookie: Option<String>,
}

/// Where a port is reached, as the rules differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// On its own origin: the URL path is the dev server's.
    Origin,
    /// Under this prefix (`/agents/{id}/ports/{port}`) on the API's origin.
    Prefix(String),
}

/// The policy that sandboxes a page answered on the API's origin: without
/// `allow-same-origin`, so its scripts run with an opaque origin (no
/// cookies, storage or same-origin reads of the API); what a page needs to
/// be looked at (scripts, forms, popups) still works.
pub const SANDBOX: &str = "sandbox allow-scripts allow-forms allow-popups allow-modals";

impl Forward {
    /// The dev server's path for a request to `url_path`.
    pub fn path<'a>(&self, url_path: &'a str) -> &'a str {
        match &self.mount {
            Mount::Origin => url_path,
            Mount::Prefix(prefix) => url_path.strip_prefix(prefix.as_str()).unwrap_or(""),
        }
    }
}

/// The path and query to ask the dev server for: `path` (what follows
/// the prefix, as it came, `/` when empty) and `query` minus the share
/// parameter.
pub fn target(path: &str, query: Option<&str>) -> String {
    let path = if path.is_empty() { "/" } else { path };
    let kept: Vec<&str> = query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| pair.split('=').next() != Some(shares::QUERY_PARAM))
        .collect();
    if kept.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

/// The headers to send the dev server, from the request's.
pub fn request_headers(
    headers: &[(String, String)],
    forward: &Forward,
    (host, proto): (&str, &str),
) -> Vec<(String, String)> {
    let upgrade = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("upgrade") && value.eq_ignore_ascii_case("websocket")
    });
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        let ours = lower == "authorization"
            || lower == "host"
            || lower.starts_with("x-stead-")
            || lower.starts_with("x-forwarded-")
            || lower.starts_with("cf-");
        let hop = HOP_BY_HOP.contains(&lower.as_str()) && !(upgrade && is_upgrade_header(&lower));
        if ours || hop {
            continue;
        }
        if lower == "cookie" {
            let rest: Vec<&str> = value
                .split(';')
                .map(str::trim)
                .filter(|pair| pair.split('=').next() != Some(shares::COOKIE))
                .filter(|pair| !crate::session::is_session_pair(pair))
                .filter(|pair| !pair.is_empty())
                .collect();
            if !rest.is_empty() {
                out.push((name.clone(), rest.join("; ")));
            }
            continue;
        }
        out.push((name.clone(), value.clone()));
    }
    if let Mount::Prefix(prefix) = &forward.mount {
        out.push(("x-forwarded-prefix".into(), prefix.clone()));
    }
    out.push(("x-forwarded-host".into(), host.to_string()));
    out.push(("x-forwarded-proto".into(), proto.to_string()));
    out
}

fn is_upgrade_header(lower: &str) -> bool {
    lower == "upgrade" || lower == "connection"
}

/// The headers to answer with, from the dev server's.
pub fn response_headers(headers: &[(String, String)], forward: &Forward) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if HOP_BY_HOP.contains(&lower.as_str()) {
            continue;
        }
        let value = match (lower.as_str(), &forward.mount) {
            ("set-cookie", Mount::Origin) => cookie_attributes(value, None),
            ("set-cookie", Mount::Prefix(prefix)) => cookie_attributes(value, Some(prefix)),
            ("location", Mount::Prefix(prefix))
                if value.starts_with('/') && !value.starts_with("//") =>
            {
                format!("{prefix}{value}")
            }
            // Ours replaces it below.
            ("x-content-type-options", Mount::Prefix(_)) => continue,
            _ => value.clone(),
        };
        out.push((name.clone(), value));
    }
    if matches!(forward.mount, Mount::Prefix(_)) {
        // A policy of the dev server's own still applies beside this one:
        // a browser enforces every policy it is sent.
        out.push(("content-security-policy".into(), SANDBOX.into()));
        out.push(("x-content-type-options".into(), "nosniff".into()));
    }
    if let Some(cookie) = &forward.set_cookie {
        out.push(("set-cookie".into(), cookie.clone()));
    }
    out
}

/// A `Set-Cookie` value without its `Domain` (so it stays host-only) and,
/// under a `prefix`, with its `Path` moved under it (a cookie without one
/// gets the prefix).
fn cookie_attributes(cookie: &str, prefix: Option<&str>) -> String {
    let mut has_path = false;
    let parts: Vec<String> = cookie
        .split(';')
        .filter_map(|part| {
            let trimmed = part.trim();
            let (key, path) = trimmed.split_once('=').unwrap_or((trimmed, ""));
            let key = key.trim();
            if key.eq_ignore_ascii_case("domain") {
                return None;
            }
            Some(match prefix {
                Some(prefix) if key.eq_ignore_ascii_case("path") => {
                    has_path = true;
                    let path = path.trim();
                    let path = if path.starts_with('/') { path } else { "/" };
                    format!("Path={prefix}{path}")
                }
                _ => trimmed.to_string(),
            })
        })
        .collect();
    let mut cookie = parts.join("; ");
    if let Some(prefix) = prefix.filter(|_| !has_path) {
        cookie.push_str(&format!("; Path={prefix}/"));
    }
    cookie
}

/// Checks that `caller` may reach `port` of this agent now: the port must
/// be one a running process declared, and a share link must be for it,
/// live and not revoked. What the `Computer` object asks of the agent
/// before it keeps a grant (`crate::port_grants`).
pub fn admit(
    db: &impl stead_sql::Sql,
    caller: &Caller,
    port: u16,
    now_ms: i64,
) -> Result<(), ApiError> {
    if let Caller::Share { id } = caller {
        shares::check(db, id, port, now_ms / 1000)?;
    }
    let served = record::all(db)?
        .iter()
        .any(|process| process.state == State::Running && process.ports.contains(&port));
    if !served {
        return Err(ApiError::PortNotServed { port });
    }
    Ok(())
}

/// How the Worker forwards a request to `port` of agent `agent` that came
/// in on `front`. `share` is a share link's capability when the request
/// carried it in its query (a browser's first visit: then kept as a
/// cookie until the link expires, `expires_at`); `secure` whether the
/// browser is on HTTPS.
pub fn forward(
    (agent, port, front): (&str, u16, Front),
    share: Option<(&str, i64)>,
    (now_s, secure): (i64, bool),
) -> Forward {
    let set_cookie = share.map(|(capability, expires_at)| {
        shares::cookie(capability, (expires_at - now_s).max(0), secure)
    });
    let mount = match front {
        Front::Port => Mount::Origin,
        Front::Api => Mount::Prefix(shares::prefix(agent, port)),
    };
    Forward {
        port,
        mount,
        set_cookie,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn forward() -> Forward {
        Forward {
            port: 3000,
            mount: Mount::Prefix("/agents/a/ports/3000".into()),
            set_cookie: None,
        }
    }

    #[test]
    fn the_target_drops_the_capability_only() {
        assert_eq!(target("", None), "/");
        assert_eq!(
            target("/a/b", Some("x=1&stead_share=shr_q.s&y=2")),
            "/a/b?x=1&y=2"
        );
        assert_eq!(target("/", Some("stead_share=shr_q.s")), "/");
        assert_eq!(target("/p", Some("stead_shares=1")), "/p?stead_shares=1");
    }

    #[test]
    fn credentials_and_hop_by_hop_headers_stay_behind() {
        let incoming = pairs(&[
            ("Authorization", "Bearer secret"),
            (
                "Cookie",
                "theme=dark; stead_share=shr_x.y; __Host-stead_session=sss_a.b",
            ),
            ("Connection", "keep-alive"),
            ("Accept", "text/html"),
            ("x-stead-actor", "admin"),
            ("Host", "example.com"),
        ]);
        let out = request_headers(&incoming, &forward(), ("example.com", "https"));
        let names: Vec<String> = out.iter().map(|(n, _)| n.to_ascii_lowercase()).collect();
        assert!(!names.contains(&"authorization".into()));
        assert!(!names.contains(&"connection".into()));
        assert!(!names.contains(&"x-stead-actor".into()));
        assert!(out.contains(&("Cookie".into(), "theme=dark".into())));
        assert!(out.contains(&("Accept".into(), "text/html".into())));
        assert!(out.contains(&("x-forwarded-prefix".into(), "/agents/a/ports/3000".into())));
        // A WebSocket upgrade keeps what the upgrade needs.
        let upgrade = pairs(&[("Upgrade", "websocket"), ("Connection", "Upgrade")]);
        let out = request_headers(&upgrade, &forward(), ("h", "http"));
        assert!(out.iter().any(|(n, _)| n == "Upgrade"));
        assert!(out.iter().any(|(n, _)| n == "Connection"));
    }

    #[test]
    fn redirects_and_cookies_stay_under_the_prefix() {
        let answer = pairs(&[
            ("Location", "/login?next=/"),
            ("Set-Cookie", "sid=1; Path=/; HttpOnly"),
            ("Set-Cookie", "pref=2"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Type", "text/html"),
        ]);
        let mut shared = forward();
        shared.set_cookie = Some("stead_share=c".into());
        let out = response_headers(&answer, &shared);
        assert!(out.contains(&(
            "Location".into(),
            "/agents/a/ports/3000/login?next=/".into()
        )));
        assert!(out.contains(&(
            "Set-Cookie".into(),
            "sid=1; Path=/agents/a/ports/3000/; HttpOnly".into()
        )));
        assert!(out.contains(&(
            "Set-Cookie".into(),
            "pref=2; Path=/agents/a/ports/3000/".into()
        )));
        assert!(!out.iter().any(|(n, _)| n == "Transfer-Encoding"));
        assert!(out.contains(&("set-cookie".into(), "stead_share=c".into())));
        let elsewhere = response_headers(&pairs(&[("Location", "https://x.example/")]), &forward());
        assert_eq!(elsewhere[0].1, "https://x.example/");
        assert_eq!(shared.path("/agents/a/ports/3000/x/y"), "/x/y");
    }

    #[test]
    fn on_the_api_origin_pages_are_sandboxed_and_never_sniffed() {
        let answer = pairs(&[
            ("Content-Type", "text/html"),
            ("X-Content-Type-Options", "none"),
            ("Content-Security-Policy", "default-src 'self'"),
        ]);
        let out = response_headers(&answer, &forward());
        let values = |name: &str| -> Vec<&str> {
            out.iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
                .collect()
        };
        assert_eq!(values("x-content-type-options"), ["nosniff"]);
        let policies = values("content-security-policy");
        assert!(policies.contains(&"default-src 'self'"), "{policies:?}");
        assert!(policies.contains(&SANDBOX), "{policies:?}");
        assert!(SANDBOX.starts_with("sandbox ") && !SANDBOX.contains("allow-same-origin"));
    }

    #[test]
    fn on_its_own_origin_a_port_keeps_its_paths_and_its_cookies_stay_on_its_host() {
        let own = Forward {
            port: 3000,
            mount: Mount::Origin,
            set_cookie: None,
        };
        let answer = pairs(&[
            ("Location", "/login?next=/"),
            ("Set-Cookie", "sid=1; Path=/; Domain=ports.test; HttpOnly"),
            ("Set-Cookie", "pref=2;domain=.ports.test"),
        ]);
        let out = response_headers(&answer, &own);
        assert_eq!(
            out,
            pairs(&[
                ("Location", "/login?next=/"),
                ("Set-Cookie", "sid=1; Path=/; HttpOnly"),
                ("Set-Cookie", "pref=2"),
            ])
        );
        assert_eq!(own.path("/agents/a/ports/3000/x"), "/agents/a/ports/3000/x");
        let sent = request_headers(&pairs(&[("Accept", "*/*")]), &own, ("h", "http"));
        assert!(
            !sent.iter().any(|(n, _)| n == "x-forwarded-prefix"),
            "{sent:?}"
        );
        assert!(sent.contains(&("x-forwarded-host".into(), "h".into())));
    }
}
