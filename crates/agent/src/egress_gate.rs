//! The gate the computer's outbound HTTP passes through: which
//! destinations the platform hands to the agent (the interception plan the
//! `Computer` object registers when it starts the container), and what the
//! agent decides for each request that arrives that way.
//!
//! The container never holds a secret and never decides: the platform
//! redirects its outbound requests (`interceptOutboundHttp` and
//! `interceptOutboundHttps` for each destination in the [`Plan`]; under an
//! allow-list in production, the catch-alls too) to the Worker, which
//! hands each to the
//! agent's Durable Object. There [`decide`] refuses what the network policy
//! does not admit and, for what it admits, names the secret bound to the
//! host, which the Worker side adds as the request leaves (and the audit
//! log records by name and host). What is not intercepted meets the
//! platform's own rule: with `network` `"off"` or an allow-list the
//! container starts without internet, so it goes nowhere.

use serde::{Deserialize, Serialize};
use stead_sql::Sql;

use crate::agent::Agent;
use crate::egress::{Destination, HostPattern, NetworkPolicy, Preset};
use crate::error::ApiError;
use crate::host::Host;
use crate::outbound;
use crate::secrets::{self, Use};
use crate::settings::ComputerSettings;

/// The header that carries the [`Plan`] (JSON) from the workspace to the
/// `Computer` object with every request.
pub const PLAN_HEADER: &str = "x-stead-egress";

/// What the `Computer` object sets up when it starts the container.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Start with the platform's open internet (`network: "on"`).
    pub internet: bool,
    /// Destinations (host patterns as `crate::egress` writes them) whose
    /// HTTP the platform hands to the agent: the allow-list's patterns and
    /// presets' hosts, and the hosts secrets are bound to (unless the
    /// network is off, which no secret opens).
    pub intercept: Vec<String>,
    /// The TLS server names whose HTTPS it hands over: those of the same
    /// patterns that can match HTTPS ([`HostPattern::server_name`]).
    #[serde(default)]
    pub intercept_https: Vec<String>,
    /// Hand the agent every other HTTP and HTTPS request too (an
    /// allow-list: its wildcards are decided by the agent, request by
    /// request).
    pub all: bool,
}

impl Plan {
    /// The plan for `settings`, with the hosts of the secrets in `db`.
    pub fn for_settings(db: &impl Sql, settings: &ComputerSettings) -> Result<Plan, ApiError> {
        let policy = settings.network();
        let (mut patterns, presets): (Vec<HostPattern>, &[Preset]) = match &policy {
            NetworkPolicy::Off => return Ok(Plan::default()),
            NetworkPolicy::On => (Vec::new(), &[]),
            NetworkPolicy::Allow(list) => (list.allow.clone(), &list.presets),
        };
        let preset_hosts = presets
            .iter()
            .flat_map(|p| p.hosts())
            .map(|h| h.to_string());
        let secret_hosts = secrets::list(db, "")?.into_iter().flat_map(|s| s.hosts);
        for text in preset_hosts.chain(secret_hosts) {
            let pattern = HostPattern::parse(&text)
                .map_err(|e| ApiError::Internal(format!("a stored host pattern: {e}")))?;
            patterns.push(pattern);
        }
        let sorted = |mut names: Vec<String>| {
            names.sort();
            names.dedup();
            names
        };
        Ok(Plan {
            internet: policy.open_internet(),
            intercept: sorted(patterns.iter().map(ToString::to_string).collect()),
            intercept_https: sorted(
                patterns
                    .iter()
                    .filter_map(HostPattern::server_name)
                    .collect(),
            ),
            all: matches!(policy, NetworkPolicy::Allow(_)),
        })
    }
}

/// The agent's answer for one intercepted request to `url`: refused (a
/// 403 naming the host and the setting) unless the network policy admits
/// it; admitted, the secret bound to its host if there is one (plain
/// `http` gets one only when `plain_http`, local development).
pub fn decide(
    db: &impl Sql,
    settings: &ComputerSettings,
    url: &str,
    plain_http: bool,
) -> Result<Option<Use>, ApiError> {
    let Some(to) = Destination::of_url(url) else {
        return Err(ApiError::Forbidden {
            reason: format!("the computer's request to {url:?} is not http or https"),
        });
    };
    if !settings.network().admits(&to) {
        return Err(ApiError::Forbidden {
            reason: format!(
                "{} is not in this agent's computer.network (PUT /agents/{{id}}/settings)",
                to.label()
            ),
        });
    }
    secrets::for_request(db, url, plain_http)
}

/// The actor a computer's request is audited under.
pub const ACTOR: &str = "computer";

impl<H: Host> Agent<H> {
    /// [`decide`] for one of the computer's intercepted requests, with the
    /// target checks of the light shell's own requests (`crate::outbound`:
    /// private addresses only where the workspace allows them, in local
    /// development); a secret's use is audited. The caller adds
    /// `authorization` as the request leaves.
    pub async fn computer_egress(&self, url: &str) -> Result<Option<Use>, ApiError> {
        let answer = self.admit_egress(url).await;
        if let Err(refusal @ ApiError::Forbidden { .. }) = &answer {
            record_refusal(self.db(), self.now_ms(), url, refusal);
        }
        answer
    }

    async fn admit_egress(&self, url: &str) -> Result<Option<Use>, ApiError> {
        let settings = crate::settings::computer(self.db())?;
        let allow_private = crate::settings::webhooks(self.db())?.allow_private_targets;
        let used = decide(self.db(), &settings, url, allow_private)?;
        let forbidden = |reason: String| ApiError::Forbidden { reason };
        let pending =
            outbound::check_url(url, allow_private).map_err(|e| forbidden(e.to_string()))?;
        if let outbound::Pending::Resolve(name) = pending {
            let resolved = self.host.resolve(&name).await;
            outbound::check_resolved(&name, resolved).map_err(|e| forbidden(e.to_string()))?;
        }
        if let Some(used) = &used {
            secrets::record_use(self.db(), self.now_ms(), ACTOR, used);
        }
        Ok(used)
    }
}

/// The audit action of a refused request.
pub const REFUSED: &str = "egress.refuse";

/// A container that retries a refused request in a loop must not fill the
/// audit log: one entry per destination in this window says it happened.
pub const REFUSAL_WINDOW_MS: i64 = 60_000;

/// Records a refusal in the audit log (`egress.refuse`: the destination as
/// target, the reason in the detail), at most once per destination per
/// [`REFUSAL_WINDOW_MS`].
fn record_refusal(db: &impl Sql, at: i64, url: &str, refusal: &ApiError) {
    let target = Destination::of_url(url).map_or_else(|| url.to_string(), |to| to.label());
    let recent = db.query_row(
        "SELECT 1 FROM audit WHERE action = ? AND target = ? AND at > ? LIMIT 1",
        stead_sql::params![REFUSED, target.as_str(), at - REFUSAL_WINDOW_MS],
    );
    if !matches!(recent, Ok(None)) {
        return;
    }
    let note = crate::audit::Note {
        target: Some(target),
        detail: Some(serde_json::json!({ "reason": refusal.to_string() })),
    };
    // The refusal is the answer: failing to record it must not change it.
    let _ = crate::audit::record(db, at, ACTOR, REFUSED, &note, refusal.code());
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    use super::*;

    fn db_with(settings: serde_json::Value) -> (SqliteDb, ComputerSettings) {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        crate::settings::put(&db, &settings, true, 1).unwrap();
        let computer = crate::settings::computer(&db).unwrap();
        (db, computer)
    }

    #[test]
    fn the_plan_follows_the_policy_and_the_secrets() {
        let secret = json!({"CI": {"hosts": ["git.example.com"], "bearer": "tok"}});
        let (db, off) = db_with(json!({ "secrets": secret }));
        assert_eq!(Plan::for_settings(&db, &off).unwrap(), Plan::default());
        let (db, on) = db_with(json!({ "secrets": secret, "computer": {"network": "on"} }));
        assert_eq!(
            Plan::for_settings(&db, &on).unwrap(),
            Plan {
                internet: true,
                intercept: vec!["git.example.com".into()],
                intercept_https: vec!["git.example.com".into()],
                all: false
            }
        );
        let (db, list) = db_with(json!({
            "secrets": secret,
            "computer": {"network": {"allow": ["127.0.0.1:9000"], "presets": ["npm"]}}
        }));
        let plan = Plan::for_settings(&db, &list).unwrap();
        assert_eq!(
            plan.intercept,
            ["127.0.0.1:9000", "git.example.com", "registry.npmjs.org"]
        );
        // A pattern with a port other than 443 is a plain-HTTP service.
        assert_eq!(
            plan.intercept_https,
            ["git.example.com", "registry.npmjs.org"]
        );
        assert!(!plan.internet && plan.all);
        let (db, tls) = db_with(json!({
            "computer": {"network": {"allow": ["*.example.org", "api.example.net:443", "10.0.0.1"]}}
        }));
        let plan = Plan::for_settings(&db, &tls).unwrap();
        assert_eq!(
            plan.intercept_https,
            ["*.example.org", "10.0.0.1", "api.example.net"],
            "HTTPS names carry no port"
        );
        assert!(!serde_json::to_string(&plan).unwrap().contains("tok"));
    }

    #[test]
    fn a_request_is_refused_unless_admitted_and_gets_its_hosts_secret() {
        let (db, settings) = db_with(json!({
            "secrets": {"LOCAL": {"hosts": ["127.0.0.1:9000"], "bearer": "tok"}},
            "computer": {"network": {"allow": ["127.0.0.1:9000", "127.0.0.1:9001"]}}
        }));
        let used = decide(&db, &settings, "http://127.0.0.1:9000/x", true)
            .unwrap()
            .unwrap();
        assert_eq!(used.authorization, "Bearer tok");
        assert!(decide(&db, &settings, "http://127.0.0.1:9001/x", true)
            .unwrap()
            .is_none());
        assert!(
            decide(&db, &settings, "http://127.0.0.1:9000/x", false)
                .unwrap()
                .is_none(),
            "not in the clear outside local development"
        );
        let refused = decide(&db, &settings, "http://127.0.0.1:9002/x", true).unwrap_err();
        assert_eq!(refused.status(), 403);
        assert!(refused.to_string().contains("127.0.0.1:9002"), "{refused}");
        assert_eq!(
            decide(&db, &settings, "ftp://127.0.0.1:9000/", true)
                .unwrap_err()
                .status(),
            403
        );
    }

    #[test]
    fn a_refusal_is_audited_once_per_destination_and_window() {
        let (db, settings) = db_with(json!({
            "computer": {"network": {"allow": ["127.0.0.1:9000"]}}
        }));
        let refuse = |url: &str, at: i64| {
            let refusal = decide(&db, &settings, url, true).unwrap_err();
            record_refusal(&db, at, url, &refusal);
        };
        let entries = |db: &SqliteDb| -> Vec<(i64, String, String, String)> {
            db.query(
                "SELECT at, actor, target, outcome FROM audit WHERE action = ? ORDER BY id",
                stead_sql::params![REFUSED],
            )
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r.int(0).unwrap(),
                    r.text(1).unwrap().to_string(),
                    r.text(2).unwrap().to_string(),
                    r.text(3).unwrap().to_string(),
                )
            })
            .collect()
        };
        refuse("http://127.0.0.1:9002/a", 1_000);
        refuse("http://127.0.0.1:9002/b?q=1", 2_000);
        refuse("https://evil.example/", 3_000);
        refuse("http://127.0.0.1:9002/c", 1_000 + REFUSAL_WINDOW_MS + 1);
        let seen = entries(&db);
        let forbidden = ApiError::Forbidden {
            reason: String::new(),
        };
        let code = forbidden.code().to_string();
        assert_eq!(
            seen,
            [
                (
                    1_000,
                    ACTOR.to_string(),
                    "127.0.0.1:9002".to_string(),
                    code.clone()
                ),
                (
                    3_000,
                    ACTOR.to_string(),
                    "evil.example".to_string(),
                    code.clone()
                ),
                (
                    1_000 + REFUSAL_WINDOW_MS + 1,
                    ACTOR.to_string(),
                    "127.0.0.1:9002".to_string(),
                    code
                ),
            ]
        );
        let detail: String = db
            .query_row(
                "SELECT detail FROM audit WHERE action = ?",
                stead_sql::params![REFUSED],
            )
            .unwrap()
            .unwrap()
            .text(0)
            .unwrap()
            .to_string();
        assert!(detail.contains("computer.network"), "{detail}");
    }
}
