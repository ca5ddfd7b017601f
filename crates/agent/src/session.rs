//! Browser sessions for the inspector (`/ui/`): a token pasted once becomes
//! a cookie scripts cannot read.
//!
//! `POST /ui/session {"token"}` checks the token as a bearer credential is
//! checked and answers with a session: a value `sss_<payload>.<signature>`
//! (base64url JSON [`SessionClaims`], HMAC-SHA256 keyed by the admin token
//! over `session.<payload>`, so it never passes for a token or a share
//! link) set as the cookie [`COOKIE`]: `HttpOnly` (no script reads it),
//! `Secure`, `SameSite=Strict`, `Path=/` and host-only. The `__Host-`
//! prefix makes the browser refuse the name from any other host, so a page
//! on a port's origin under the same parent (`{port}-{agent}.localhost`)
//! cannot plant a session of its choosing ("cookie tossing").
//!
//! A session stands for the token it was made from: the same principal,
//! so the same scopes, revocation (the agent refuses a revoked token's id)
//! and audit actor; it lasts [`SESSION_TTL_SECONDS`] or until the token
//! expires, whichever is first. Checking one needs no storage, as a token.
//!
//! A cookie rides along with requests the page did not make, so requests
//! authenticated by one are checked for where they come from
//! ([`check_origin`]): an unsafe method or a WebSocket upgrade must come
//! from the inspector's own origin (`Sec-Fetch-Site: same-origin`, or else
//! an `Origin` equal to its own). `SameSite=Strict` alone is not enough:
//! the ports' origins are the same *site*.

use serde::{Deserialize, Serialize};

use crate::auth::{self, Claims, Principal};
use crate::error::ApiError;
use crate::seal::Seal;

/// The cookie the session travels in.
pub const COOKIE: &str = "__Host-stead_session";
/// Longest life of a session: 12 hours (a working day), less if the token
/// expires sooner.
pub const SESSION_TTL_SECONDS: i64 = 12 * 3600;

const SEALED: Seal = Seal {
    prefix: "sss_",
    domain: "session.",
};

/// Whom a session stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Holder {
    /// The admin token.
    Admin,
    /// An agent token, with its claims.
    Token { claims: Claims },
}

/// What a session says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionClaims {
    pub holder: Holder,
    /// Expiry, Unix seconds.
    pub exp: i64,
}

impl SessionClaims {
    /// The principal the session stands for.
    pub fn principal(&self) -> Principal {
        match &self.holder {
            Holder::Admin => Principal::Admin,
            Holder::Token { claims } => Principal::Token(claims.clone()),
        }
    }

    /// What the page is told about itself (`GET /ui/session`): never the
    /// session's value.
    pub fn describe(&self) -> serde_json::Value {
        let (kind, agent, scopes) = match &self.holder {
            Holder::Admin => ("admin", None, None),
            Holder::Token { claims } => (
                "token",
                Some(claims.agent.as_str()),
                Some(claims.scopes.iter().map(|s| s.name()).collect::<Vec<_>>()),
            ),
        };
        serde_json::json!({
            "session": { "kind": kind, "agent": agent, "scopes": scopes, "expires_at": self.exp }
        })
    }
}

/// `POST /ui/session`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignIn {
    /// The admin token or an agent token.
    pub token: String,
}

/// Checks a token presented at sign-in (as `Authorization: Bearer` would
/// be) and gives the session it opens at `now_s`.
pub fn open(token: &str, admin_token: Option<&str>, now_s: i64) -> Result<SessionClaims, ApiError> {
    let principal = auth::authenticate(Some(&format!("Bearer {token}")), admin_token, now_s)?;
    let ceiling = now_s + SESSION_TTL_SECONDS;
    match principal {
        Principal::Admin => Ok(SessionClaims {
            holder: Holder::Admin,
            exp: ceiling,
        }),
        Principal::Token(claims) => Ok(SessionClaims {
            exp: claims.exp.min(ceiling),
            holder: Holder::Token { claims },
        }),
        Principal::Share(_) => Err(ApiError::InvalidToken),
    }
}

/// The cookie value for `claims`, signed with the admin token `key`.
pub fn seal(key: &str, claims: &SessionClaims) -> String {
    SEALED.seal(key, claims)
}

/// Checks a presented session's signature and expiry.
pub fn verify(value: &str, key: &str, now_s: i64) -> Result<SessionClaims, ApiError> {
    let claims: SessionClaims = SEALED.open(key, value).ok_or(ApiError::SessionInvalid)?;
    if claims.exp <= now_s {
        return Err(ApiError::SessionExpired);
    }
    Ok(claims)
}

/// The session a `Cookie` header carries, if any.
pub fn presented(cookies: Option<&str>) -> Option<&str> {
    cookies?.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        (key == COOKIE).then_some(value)
    })
}

/// Whether a `Cookie` pair (`name=value`) is the session's: what is never
/// passed on to a dev server.
pub fn is_session_pair(pair: &str) -> bool {
    pair.split('=').next() == Some(COOKIE)
}

/// The `Set-Cookie` value that keeps `value` until `exp` (Unix seconds)
/// from `now_s`.
pub fn cookie(value: &str, exp: i64, now_s: i64) -> String {
    let max_age = (exp - now_s).max(0);
    format!("{COOKIE}={value}; Path=/; Max-Age={max_age}; HttpOnly; Secure; SameSite=Strict")
}

/// The `Set-Cookie` value that ends the session in this browser.
pub fn cleared_cookie() -> String {
    format!("{COOKIE}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict")
}

/// The page's Content-Security-Policy: its own scripts only (no inline
/// script, no `eval`), images from itself or from the blobs it makes of a
/// file, connections to its own origin (`'self'` covers its WebSocket),
/// never framed. Styles are its own plus inline ones: the terminal's
/// renderer (xterm.js) writes its measurements into style elements of its
/// own. The page never puts an agent's content in as markup (text goes in
/// as text; highlighting escapes it), so nothing else can add one.
pub const PAGE_CSP: &str =
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The headers every file of the page is served with.
pub fn page_headers() -> [(&'static str, &'static str); 5] {
    [
        ("content-security-policy", PAGE_CSP),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("cross-origin-opener-policy", "same-origin"),
        ("x-frame-options", "DENY"),
    ]
}

/// The headers an API answer to a cookie-authenticated request carries
/// unless it has its own: a file's bytes are never sniffed into a page,
/// and anything opened in a tab runs with no origin and no script.
pub fn api_headers() -> [(&'static str, &'static str); 2] {
    [
        ("x-content-type-options", "nosniff"),
        ("content-security-policy", "sandbox; default-src 'none'"),
    ]
}

/// Where a cookie-authenticated request comes from, as the browser says.
#[derive(Debug, Clone, Copy)]
pub struct Provenance<'a> {
    pub method: &'a str,
    /// Whether it asks for a WebSocket upgrade (which no CORS rule guards).
    pub upgrade: bool,
    /// `Sec-Fetch-Site`.
    pub fetch_site: Option<&'a str>,
    /// `Origin`.
    pub origin: Option<&'a str>,
    /// The inspector's own origin (`scheme://host[:port]` of the request).
    pub own_origin: &'a str,
}

/// Refuses a cookie-authenticated request that changes something (any
/// method but `GET`, `HEAD` and `OPTIONS`, or a WebSocket upgrade) unless
/// it comes from the inspector's own origin. A safe read from elsewhere
/// passes: the browser does not let another origin read its answer.
pub fn check_origin(request: Provenance<'_>) -> Result<(), ApiError> {
    let safe = matches!(request.method, "GET" | "HEAD" | "OPTIONS") && !request.upgrade;
    if safe {
        return Ok(());
    }
    let same_origin = match (request.fetch_site, request.origin) {
        (Some(site), _) => site == "same-origin",
        (None, Some(origin)) => origin.eq_ignore_ascii_case(request.own_origin),
        (None, None) => false,
    };
    if same_origin {
        return Ok(());
    }
    Err(ApiError::CrossOriginRefused {
        from: request
            .origin
            .or(request.fetch_site)
            .unwrap_or("an unknown origin")
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Scope;

    const KEY: &str = "admin-key";

    fn token_claims(exp: i64) -> Claims {
        Claims {
            id: "t1".into(),
            agent: "alice".into(),
            scopes: vec![Scope::Read],
            exp,
        }
    }

    #[test]
    fn the_admin_token_opens_an_admin_session_that_verifies() {
        let claims = open(KEY, Some(KEY), 1000).unwrap();
        assert_eq!(claims.holder, Holder::Admin);
        assert_eq!(claims.exp, 1000 + SESSION_TTL_SECONDS);
        let value = seal(KEY, &claims);
        assert_eq!(verify(&value, KEY, 1001).unwrap(), claims);
        assert_eq!(
            verify(&value, KEY, 1001).unwrap().principal(),
            Principal::Admin
        );
    }

    #[test]
    fn an_agent_token_session_ends_no_later_than_the_token() {
        let token = auth::mint(KEY, &token_claims(1060));
        let claims = open(&token, Some(KEY), 1000).unwrap();
        assert_eq!(claims.exp, 1060);
        assert_eq!(claims.principal(), Principal::Token(token_claims(1060)));
        let value = seal(KEY, &claims);
        assert!(matches!(
            verify(&value, KEY, 1060),
            Err(ApiError::SessionExpired)
        ));
        let long = auth::mint(KEY, &token_claims(1000 + 10 * SESSION_TTL_SECONDS));
        assert_eq!(
            open(&long, Some(KEY), 1000).unwrap().exp,
            1000 + SESSION_TTL_SECONDS
        );
    }

    #[test]
    fn a_wrong_or_expired_token_opens_nothing() {
        assert!(matches!(
            open("nope", Some(KEY), 1000),
            Err(ApiError::InvalidToken)
        ));
        let expired = auth::mint(KEY, &token_claims(999));
        assert!(matches!(
            open(&expired, Some(KEY), 1000),
            Err(ApiError::TokenExpired)
        ));
        assert!(matches!(
            open(KEY, None, 1000),
            Err(ApiError::NotConfigured)
        ));
    }

    #[test]
    fn a_session_is_neither_a_token_nor_forgeable() {
        let value = seal(KEY, &open(KEY, Some(KEY), 1000).unwrap());
        // Not a bearer token.
        assert!(auth::authenticate(Some(&format!("Bearer {value}")), Some(KEY), 1001).is_err());
        // Another key, a changed payload, a token in its place.
        assert!(matches!(
            verify(&value, "other", 1001),
            Err(ApiError::SessionInvalid)
        ));
        let (payload, signature) = value.split_once('.').unwrap();
        let forged = format!("{}x.{signature}", payload);
        assert!(matches!(
            verify(&forged, KEY, 1001),
            Err(ApiError::SessionInvalid)
        ));
        let token = auth::mint(KEY, &token_claims(5000));
        assert!(matches!(
            verify(&token, KEY, 1001),
            Err(ApiError::SessionInvalid)
        ));
    }

    #[test]
    fn the_cookie_is_found_among_others_and_set_strictly() {
        let header = format!("a=1; {COOKIE}=sss_x.y; stead_share=z");
        assert_eq!(presented(Some(&header)), Some("sss_x.y"));
        assert_eq!(presented(Some("stead_session=sss_x.y")), None);
        assert_eq!(presented(None), None);
        let set = cookie("v", 1100, 1000);
        for attribute in [
            "HttpOnly",
            "Secure",
            "SameSite=Strict",
            "Path=/",
            "Max-Age=100",
        ] {
            assert!(set.contains(attribute), "{set} lacks {attribute}");
        }
        assert!(!set.contains("Domain"));
        assert!(cleared_cookie().contains("Max-Age=0"));
        assert!(is_session_pair(&format!("{COOKIE}=v")));
        assert!(!is_session_pair("other=v"));
    }

    #[test]
    fn unsafe_requests_must_come_from_the_inspectors_origin() {
        let own = "http://localhost:8787";
        let request = |method, upgrade, fetch_site, origin| Provenance {
            method,
            upgrade,
            fetch_site,
            origin,
            own_origin: own,
        };
        // Reads pass from anywhere; the browser hides their answers.
        assert!(check_origin(request("GET", false, Some("cross-site"), None)).is_ok());
        // Writes and upgrades only from the same origin.
        assert!(check_origin(request("POST", false, Some("same-origin"), Some(own))).is_ok());
        assert!(check_origin(request("POST", false, None, Some(own))).is_ok());
        for (method, upgrade, site, origin) in [
            (
                "POST",
                false,
                Some("same-site"),
                Some("http://3000-alice.localhost:8787"),
            ),
            ("DELETE", false, Some("cross-site"), None),
            ("PUT", false, None, Some("http://3000-alice.localhost:8787")),
            ("POST", false, None, None),
            (
                "GET",
                true,
                Some("same-site"),
                Some("http://3000-alice.localhost:8787"),
            ),
        ] {
            let refused = check_origin(request(method, upgrade, site, origin)).unwrap_err();
            assert_eq!(refused.status(), 403, "{method} from {origin:?}");
            assert_eq!(refused.code(), "CROSS_ORIGIN_REFUSED");
        }
        assert!(check_origin(request("GET", true, Some("same-origin"), Some(own))).is_ok());
    }
}
