//! Share links: signed, expiring, revocable capabilities for one port of
//! one agent's computer, usable from a browser with no other credential.
//!
//! `POST /agents/{id}/ports/{port}/share {ttl_seconds}` mints one: a
//! capability `shr_<payload>.<signature>` (base64url JSON [`ShareClaims`],
//! HMAC-SHA256 keyed by the admin token over `share.<payload>`, so it can
//! never pass for an agent token) inside a URL on the port's own origin. As
//! with tokens, the Worker checks the signature and the expiry before any
//! Durable Object wakes, and the agent checks revocation (its
//! `share_links` table) and that the link is for the port asked.
//!
//! A link's URL is on the port's own origin (`crate::front`), and only
//! there does the Worker take it. A browser presents the capability once,
//! in the link's query ([`QUERY_PARAM`]); the answer sets it as a cookie
//! ([`COOKIE`]) host-only on that origin, for the page's own requests,
//! scripts and WebSockets. Neither ever reaches the dev server.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stead_sql::{params, Sql, SqlError};

use crate::decode::{decode_value, within};
use crate::error::ApiError;
use crate::seal::Seal;

/// The query parameter a share link carries its capability in.
pub const QUERY_PARAM: &str = "stead_share";
/// The cookie a browser then presents it in.
pub const COOKIE: &str = "stead_share";
/// Longest lifetime of a share link: 30 days.
pub const MAX_TTL_SECONDS: i64 = 30 * 24 * 3600;

const SEALED: Seal = Seal {
    prefix: "shr_",
    domain: "share.",
};

/// What a share link says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShareClaims {
    /// Names the link for revocation and the audit log.
    pub id: String,
    pub agent: String,
    pub port: u16,
    /// Expiry, Unix seconds.
    pub exp: i64,
}

/// The capability for `claims`, signed with the admin token `key`.
pub fn mint(key: &str, claims: &ShareClaims) -> String {
    SEALED.seal(key, claims)
}

/// Checks a presented capability's signature and expiry.
pub fn verify(capability: &str, key: &str, now_s: i64) -> Result<ShareClaims, ApiError> {
    let claims: ShareClaims = SEALED
        .open(key, capability)
        .ok_or(ApiError::ShareLinkInvalid)?;
    if claims.exp <= now_s {
        return Err(ApiError::ShareLinkExpired);
    }
    Ok(claims)
}

/// The capability a request presents: in the query, else in its cookie.
pub fn presented<'a>(query: Option<&'a str>, cookies: Option<&'a str>) -> Option<&'a str> {
    let from_query = query.and_then(|query| {
        query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            (key == QUERY_PARAM).then_some(value)
        })
    });
    from_query.or_else(|| {
        cookies.and_then(|cookies| {
            cookies.split(';').find_map(|pair| {
                let (key, value) = pair.trim().split_once('=')?;
                (key == COOKIE).then_some(value)
            })
        })
    })
}

/// The prefix of port `port` of agent `agent`'s computer.
pub fn prefix(agent: &str, port: u16) -> String {
    format!("/agents/{agent}/ports/{port}")
}

/// The cookie that keeps a capability for `max_age` seconds on the port's
/// own origin: host-only (no `Domain`), so no other port's origin under
/// the same parent ever receives it, and on every path of that origin.
pub fn cookie(capability: &str, max_age: i64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={capability}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}")
}

/// `POST /agents/{id}/ports/{port}/share`'s body.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShareRequest {
    /// How long the link works, in seconds (at most 30 days).
    #[schemars(range(min = 1, max = MAX_TTL_SECONDS))]
    ttl_seconds: i64,
}

/// `POST /agents/{id}/ports/{port}/share`: records a new link and answers
/// with it; `key` signs it, and its URL is on the port's own origin
/// (`crate::front`), with the scheme and port of `api_origin`, under
/// `ports_host`.
pub fn create(
    db: &impl Sql,
    (agent, port): (&str, u16),
    body: &Value,
    (key, api_origin, ports_host): (&str, &str, &str),
    id: String,
    now_ms: i64,
) -> Result<Value, ApiError> {
    let request: ShareRequest = decode_value(body)?;
    let origin = crate::front::port_origin(api_origin, (agent, port), ports_host)?;
    let ttl = within("ttl_seconds", request.ttl_seconds, 1, MAX_TTL_SECONDS)?;
    let claims = ShareClaims {
        id,
        agent: agent.to_string(),
        port,
        // Expiry is in whole seconds: rounded up, so a link lives at least
        // `ttl` seconds (at most one more), never less.
        exp: now_ms.div_euclid(1000) + i64::from(now_ms.rem_euclid(1000) != 0) + ttl,
    };
    db.execute(
        "INSERT INTO share_links (id, port, created_ms, expires_at) VALUES (?, ?, ?, ?)",
        params![claims.id.as_str(), i64::from(port), now_ms, claims.exp],
    )?;
    let capability = mint(key, &claims);
    let url = format!("{origin}/?{QUERY_PARAM}={capability}");
    Ok(json!({ "share": {
        "id": claims.id, "port": port, "url": url, "expires_at": claims.exp,
    }}))
}

/// Checks that share link `id` (its signature checked by the Worker) is
/// for `port`, not revoked and not expired; returns when it expires.
pub fn check(db: &impl Sql, id: &str, port: u16, now_s: i64) -> Result<i64, ApiError> {
    let row = db.query_row(
        "SELECT port, expires_at, revoked_ms FROM share_links WHERE id = ?",
        params![id],
    )?;
    let Some(row) = row else {
        return Err(ApiError::ShareLinkInvalid);
    };
    if row.opt_int(2)?.is_some() {
        return Err(ApiError::ShareLinkRevoked);
    }
    if row.int(1)? <= now_s {
        return Err(ApiError::ShareLinkExpired);
    }
    if row.int(0)? != i64::from(port) {
        return Err(ApiError::Forbidden {
            reason: format!("the share link is for another port than {port}"),
        });
    }
    row.int(1).map_err(ApiError::from)
}

/// `GET /agents/{id}/shares`: every link not yet expired.
pub fn list(db: &impl Sql, now_s: i64) -> Result<Value, ApiError> {
    let rows = db.query(
        "SELECT id, port, created_ms, expires_at, revoked_ms FROM share_links \
         WHERE expires_at > ? ORDER BY created_ms",
        params![now_s],
    )?;
    let shares = rows
        .iter()
        .map(|row| {
            Ok::<_, SqlError>(json!({
                "id": row.text(0)?, "port": row.int(1)?, "created_ms": row.int(2)?,
                "expires_at": row.int(3)?, "revoked_ms": row.opt_int(4)?,
            }))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({ "shares": shares }))
}

/// `DELETE /agents/{id}/shares/{share}`: the link stops working now. Rows
/// of links that expired are dropped at the same time.
pub fn revoke(db: &impl Sql, id: &str, now_ms: i64) -> Result<Value, ApiError> {
    db.execute(
        "DELETE FROM share_links WHERE expires_at <= ?",
        params![now_ms / 1000],
    )?;
    let rows = db.query(
        "UPDATE share_links SET revoked_ms = coalesce(revoked_ms, ?) WHERE id = ? RETURNING id",
        params![now_ms, id],
    )?;
    if rows.is_empty() {
        return Err(ApiError::ShareLinkNotFound { id: id.to_string() });
    }
    Ok(json!({ "revoked": id }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_signed_expiring_and_not_tokens() {
        let claims = ShareClaims {
            id: "s1".into(),
            agent: "a".into(),
            port: 3000,
            exp: 100,
        };
        let capability = mint("key", &claims);
        assert_eq!(verify(&capability, "key", 99).unwrap(), claims);
        assert!(matches!(
            verify(&capability, "key", 100),
            Err(ApiError::ShareLinkExpired)
        ));
        assert!(matches!(
            verify(&capability, "other", 99),
            Err(ApiError::ShareLinkInvalid)
        ));
        let forged = capability.replace("shr_", "shr_x");
        assert!(matches!(
            verify(&forged, "key", 99),
            Err(ApiError::ShareLinkInvalid)
        ));
        // Never an agent token, however presented.
        assert!(
            crate::auth::authenticate(Some(&format!("Bearer {capability}")), Some("key"), 1)
                .is_err()
        );
        assert_eq!(
            presented(Some("a=1&stead_share=shr_x.y"), None),
            Some("shr_x.y")
        );
        assert_eq!(
            presented(None, Some("theme=dark; stead_share=shr_c.d")),
            Some("shr_c.d")
        );
        assert_eq!(presented(Some("a=1"), Some("b=2")), None);
    }

    #[test]
    fn the_cookie_is_host_only_on_the_whole_port_origin() {
        assert_eq!(
            cookie("shr_x.y", 60, false),
            "stead_share=shr_x.y; Path=/; Max-Age=60; HttpOnly; SameSite=Lax"
        );
        let secure = cookie("shr_x.y", 60, true);
        assert!(secure.ends_with("; Secure"), "{secure}");
        assert!(!secure.to_ascii_lowercase().contains("domain"), "{secure}");
    }
}
