//! Per-workspace settings: the quotas (`GET`/`PUT /agents/{id}/settings`).
//!
//! Settings live in the workspace's own database, so they move with it and
//! need no deploy to change. Quotas left out keep their defaults; the
//! filesystem enforces them ([`stead_vfs::Limits`]). The secret store and
//! git's HTTPS credentials (its view) are written here too, but are
//! write-only (`crate::secrets`, `crate::git_credentials`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use stead_scheduler::jobs::JobLimits;
use stead_scheduler::schedules::DEFAULT_MAX_SCHEDULES;
use stead_sql::{params, Sql};
use stead_vfs::{Limits, Retention};

use crate::egress::NetworkPolicy;
use crate::error::ApiError;

/// The quotas of one workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Quotas {
    /// Largest file, bytes.
    pub max_file_bytes: u64,
    /// Content stored (each distinct chunk once), bytes.
    pub max_stored_bytes: u64,
    /// Files, directories and symlinks.
    pub max_nodes: u64,
    /// Components in a created path.
    pub max_path_depth: usize,
    /// Job output the workspace keeps over all jobs, bytes (oldest finished
    /// jobs are pruned first).
    pub max_job_output_bytes: u64,
    /// Schedules the workspace may hold.
    pub max_schedules: u64,
}

impl Default for Quotas {
    fn default() -> Self {
        let files = Limits::default();
        Quotas {
            max_file_bytes: files.max_file_bytes,
            max_stored_bytes: files.max_stored_bytes,
            max_nodes: files.max_nodes,
            max_path_depth: files.max_path_depth,
            max_job_output_bytes: JobLimits::default().workspace_output as u64,
            max_schedules: DEFAULT_MAX_SCHEDULES as u64,
        }
    }
}

impl Quotas {
    /// The bounds on job output.
    pub fn job_limits(&self) -> JobLimits {
        JobLimits {
            workspace_output: self.max_job_output_bytes.min(i64::MAX as u64) as i64,
            ..JobLimits::default()
        }
    }

    /// The filesystem's quotas.
    pub fn limits(&self) -> Limits {
        Limits {
            max_file_bytes: self.max_file_bytes,
            max_stored_bytes: self.max_stored_bytes,
            max_nodes: self.max_nodes,
            max_path_depth: self.max_path_depth,
        }
    }
}

/// The workspace's quotas (defaults where none were set).
pub fn quotas(db: &impl Sql) -> Result<Quotas, ApiError> {
    load(db, "quotas")
}

/// What the agent's computer may do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ComputerSettings {
    /// Outbound network from commands, all or nothing: `true` is `network:
    /// "on"`, `false` is `"off"` (the setting that came before `network`,
    /// kept working; shown as whether `network` is `"on"`).
    pub internet: bool,
    /// Where commands may connect (`crate::egress::NetworkPolicy`): `"off"`
    /// (the default), `"on"`, or `{"allow": [host patterns], "presets":
    /// [..]}`. Takes effect when the container next starts. Always shown;
    /// unset in a stored row from before it existed, where `internet`
    /// decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkPolicy>,
    /// What the `Computer` object sets up from `network` and the secret
    /// store's hosts when it starts the container: never stored or shown,
    /// filled in by `Agent::computer` for the transport.
    #[serde(skip)]
    pub egress: crate::egress_gate::Plan,
    /// How long the computer stays up after its last use, milliseconds
    /// (10 seconds to 24 hours). Unset: the deployment's default
    /// (`COMPUTER_IDLE_MS`, else 10 minutes). A released computer costs
    /// nothing: the next command starts a fresh one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<u64>,
    /// The most content bytes the computer's durable environment may hold
    /// (see `crate::environment`). Unset: 1 GiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment_max_bytes: Option<u64>,
}

impl ComputerSettings {
    /// The environment's size limit in force.
    pub fn environment_limit(&self) -> u64 {
        self.environment_max_bytes
            .unwrap_or(crate::environment::DEFAULT_MAX_BYTES)
    }
}

impl ComputerSettings {
    /// The network policy these settings give.
    pub fn network(&self) -> NetworkPolicy {
        match (&self.network, self.internet) {
            (Some(policy), _) => policy.clone(),
            (None, true) => NetworkPolicy::On,
            (None, false) => NetworkPolicy::Off,
        }
    }

    /// The settings with `network` always set and `internet` saying
    /// whether it is `"on"`; a 400 when a request gives both and they
    /// disagree.
    fn normalized(mut self) -> Result<ComputerSettings, ApiError> {
        let policy = self.network();
        if self.internet && policy != NetworkPolicy::On {
            return Err(ApiError::InvalidRequest(
                "computer.internet true is computer.network \"on\": give one of them, or both the same".into(),
            ));
        }
        self.internet = policy.open_internet();
        self.network = Some(policy);
        Ok(self)
    }
}

/// Bounds of [`ComputerSettings::idle_ms`].
const IDLE_MS: (u64, u64) = (10_000, 24 * 3_600_000);

/// The workspace's computer settings (defaults where none were set).
pub fn computer(db: &impl Sql) -> Result<ComputerSettings, ApiError> {
    let stored: ComputerSettings = load(db, "computer")?;
    // Stored rows are normalized when written; one from before `network`
    // has only `internet`, which `normalized` reads.
    stored.normalized()
}

/// Who commits: the author and committer git records, on both backends.
/// Unset, git's own configuration decides (a repository's `user.name` and
/// `user.email`, else the default identity `stead agent
/// <agent@stead.invalid>` both backends' global configuration holds). Set,
/// it is exported to every command as `GIT_AUTHOR_NAME`,
/// `GIT_AUTHOR_EMAIL`, `GIT_COMMITTER_NAME` and `GIT_COMMITTER_EMAIL`,
/// which git puts above its configuration; a request's own `env` still
/// wins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GitSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

impl GitSettings {
    /// The environment a command gets from these settings.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        for (value, suffix) in [(&self.name, "NAME"), (&self.email, "EMAIL")] {
            if let Some(value) = value {
                for who in ["AUTHOR", "COMMITTER"] {
                    env.push((format!("GIT_{who}_{suffix}"), value.clone()));
                }
            }
        }
        env
    }

    /// git refuses identities with angle brackets or line breaks in them.
    fn check(&self) -> Result<(), ApiError> {
        for (field, value) in [("git.name", &self.name), ("git.email", &self.email)] {
            let Some(value) = value else { continue };
            if value.trim().is_empty()
                || value.len() > 256
                || value.contains(['<', '>', '\n', '\0'])
            {
                return Err(ApiError::InvalidRequest(format!(
                    "{field} must be 1 to 256 bytes without <, > or line breaks"
                )));
            }
        }
        Ok(())
    }
}

/// The workspace's git identity settings.
pub fn git(db: &impl Sql) -> Result<GitSettings, ApiError> {
    load(db, "git")
}

/// The workspace's checkpoint settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointSettings {
    /// Take automatic checkpoints before operations that change files.
    pub automatic: bool,
    /// Which automatic checkpoints are kept.
    pub retention: Retention,
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings {
            automatic: true,
            retention: Retention::default(),
        }
    }
}

/// The workspace's checkpoint settings (defaults where none were set).
pub fn checkpoints(db: &impl Sql) -> Result<CheckpointSettings, ApiError> {
    load(db, "checkpoints")
}

/// Where the workspace's webhooks may go (see `crate::outbound`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebhookSettings {
    /// Let schedules call loopback and private addresses. Accepted only in
    /// local development, where the receiver runs on the same machine.
    pub allow_private_targets: bool,
}

/// The workspace's webhook settings (defaults where none were set).
pub fn webhooks(db: &impl Sql) -> Result<WebhookSettings, ApiError> {
    load(db, "webhooks")
}

pub(crate) fn load<T: Default + serde::de::DeserializeOwned>(
    db: &impl Sql,
    key: &str,
) -> Result<T, ApiError> {
    let row = db.query_row("SELECT value FROM settings WHERE key = ?", params![key])?;
    match row {
        Some(row) => {
            let text = row.text(0)?;
            serde_json::from_str(text)
                .map_err(|e| ApiError::Internal(format!("stored setting {key}: {e}")))
        }
        None => Ok(T::default()),
    }
}

pub(crate) fn store(db: &impl Sql, key: &str, value: &impl Serialize) -> Result<(), ApiError> {
    let text = serde_json::to_string(value).expect("settings serialize");
    db.execute(
        "INSERT INTO settings (key, value) VALUES (?, ?) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![key, text.as_str()],
    )?;
    Ok(())
}

/// `GET /agents/{id}/settings`.
pub fn get(db: &impl Sql) -> Result<Value, ApiError> {
    Ok(json!({
        "quotas": quotas(db)?,
        "computer": computer(db)?,
        "webhooks": webhooks(db)?,
        "checkpoints": checkpoints(db)?,
        "git": git(db)?,
        "git_credentials": crate::git_credentials::shown(db)?,
        "secrets": crate::secrets::shown(db)?,
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PutSettings {
    quotas: Option<Quotas>,
    computer: Option<ComputerSettings>,
    webhooks: Option<WebhookSettings>,
    checkpoints: Option<CheckpointSettings>,
    git: Option<GitSettings>,
    /// Checked by [`crate::git_credentials::parse`]: write-only.
    git_credentials: Option<Value>,
    /// Checked by [`crate::secrets::parse`]: write-only.
    secrets: Option<Value>,
}

/// `PUT /agents/{id}/settings`: replaces the sections given (`quotas`,
/// `computer`); fields left out of a section take their defaults. Lowering a
/// quota below current usage is allowed: the next operation that adds to it
/// is refused.
///
/// `local_development`: whether the agent runs locally, the only place
/// `webhooks.allow_private_targets` is accepted. `now_ms`: when, for the
/// `set_at` of git credentials.
///
/// `git_credentials` and `secrets` are the exceptions to replacing whole
/// sections: they name hosts (or secrets), each set or (with `null`)
/// forgotten, the others kept (a caller cannot read the others back to
/// send them again).
///
/// Returns the settings afterwards and what changed, for the audit log:
/// each setting whose value changed, by its dotted key
/// (`quotas.max_nodes`), with its old and new value. Both come from
/// [`get`], which shows no secret (a git credential is shown by its host
/// and `set_at` only), so the values can be recorded as they are.
pub fn put(
    db: &impl Sql,
    body: &Value,
    local_development: bool,
    now_ms: i64,
) -> Result<(Value, Value), ApiError> {
    let request: PutSettings = crate::decode::decode_value(body)?;
    let credentials = request
        .git_credentials
        .as_ref()
        .map(crate::git_credentials::parse)
        .transpose()?;
    let secrets = request
        .secrets
        .as_ref()
        .map(crate::secrets::parse)
        .transpose()?;
    let computer = request
        .computer
        .map(ComputerSettings::normalized)
        .transpose()?;
    if let Some(idle) = computer.as_ref().and_then(|c| c.idle_ms) {
        crate::decode::within("computer.idle_ms", idle, IDLE_MS.0, IDLE_MS.1)?;
    }
    if request
        .webhooks
        .is_some_and(|w| w.allow_private_targets && !local_development)
    {
        return Err(ApiError::InvalidRequest(
            "webhooks.allow_private_targets is for local development only".into(),
        ));
    }
    if let Some(quotas) = &request.quotas {
        if quotas.max_path_depth == 0 || quotas.max_nodes == 0 {
            return Err(ApiError::InvalidRequest(
                "max_path_depth and max_nodes must be at least 1".into(),
            ));
        }
    }
    if let Some(git) = &request.git {
        git.check()?;
    }
    let before = get(db)?;
    db.transaction(|| {
        if let Some(quotas) = &request.quotas {
            store(db, "quotas", quotas)?;
        }
        if let Some(computer) = &computer {
            store(db, "computer", computer)?;
        }
        if let Some(webhooks) = &request.webhooks {
            store(db, "webhooks", webhooks)?;
        }
        if let Some(checkpoints) = &request.checkpoints {
            store(db, "checkpoints", checkpoints)?;
        }
        if let Some(git) = &request.git {
            store(db, "git", git)?;
        }
        if let Some(credentials) = &credentials {
            crate::git_credentials::apply(db, credentials, now_ms)?;
        }
        if let Some(secrets) = &secrets {
            crate::secrets::apply(db, secrets, now_ms)?;
        }
        Ok::<_, ApiError>(())
    })?;
    let after = get(db)?;
    let mut changed = serde_json::Map::new();
    changes("", &before, &after, &mut changed);
    Ok((after, Value::Object(changed)))
}

/// Adds every leaf that differs between `old` and `new` to `out`, keyed by
/// its dotted path under `prefix`, as `{"old": .., "new": ..}` (`null` for
/// a side that lacks it).
fn changes(prefix: &str, old: &Value, new: &Value, out: &mut serde_json::Map<String, Value>) {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let path = match prefix {
                    "" => key.clone(),
                    prefix => format!("{prefix}.{key}"),
                };
                let (old, new) = (
                    old.get(key).unwrap_or(&Value::Null),
                    new.get(key).unwrap_or(&Value::Null),
                );
                changes(&path, old, new, out);
            }
        }
        (old, new) if old != new => {
            out.insert(prefix.to_string(), json!({ "old": old, "new": new }));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use stead_sql::{migrate, SqliteDb, MIGRATIONS};

    use super::*;

    /// A JSON body, parsed.
    fn v(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn quotas_default_and_round_trip() {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        assert_eq!(quotas(&db).unwrap(), Quotas::default());
        let (_, changed) = put(&db, &v(br#"{"quotas":{"max_nodes":10}}"#), false, 0).unwrap();
        let old = Quotas::default().max_nodes;
        assert_eq!(
            changed,
            json!({ "quotas.max_nodes": { "old": old, "new": 10 } }),
            "only what changed"
        );
        let stored = quotas(&db).unwrap();
        assert_eq!(stored.max_nodes, 10);
        assert_eq!(stored.max_file_bytes, Limits::default().max_file_bytes);
        assert!(put(&db, &v(br#"{"quotas":{"max_nodes":0}}"#), false, 0).is_err());
        assert!(put(&db, &v(br#"{"quotas":{"max_inodes":1}}"#), false, 0).is_err());
        let private = &v(br#"{"webhooks":{"allow_private_targets":true}}"#);
        assert!(put(&db, private, false, 0).is_err(), "not in a deployment");
        let (_, changed) = put(&db, private, true, 0).unwrap();
        assert_eq!(
            changed,
            json!({ "webhooks.allow_private_targets": { "old": false, "new": true } })
        );
        let (_, changed) = put(&db, private, true, 0).unwrap();
        assert_eq!(changed, json!({}), "the same again changes nothing");
        assert!(webhooks(&db).unwrap().allow_private_targets);
        assert_eq!(
            quotas(&db).unwrap(),
            stored,
            "refused changes change nothing"
        );
    }

    #[test]
    fn git_identity_is_exported_once_set() {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        assert_eq!(
            git(&db).unwrap().env(),
            vec![],
            "unset: git's configuration decides"
        );
        let (_, changed) = put(
            &db,
            &v(br#"{"git":{"name":"Ada","email":"ada@example.com"}}"#),
            false,
            0,
        )
        .unwrap();
        assert_eq!(changed["git.name"], json!({ "old": null, "new": "Ada" }));
        let env = git(&db).unwrap().env();
        assert!(env.contains(&("GIT_AUTHOR_NAME".into(), "Ada".into())));
        assert!(env.contains(&("GIT_COMMITTER_EMAIL".into(), "ada@example.com".into())));
        for bad in [
            r#"{"git":{"name":"a <b>"}}"#,
            r#"{"git":{"email":""}}"#,
            "{\"git\":{\"name\":\"a\\nb\"}}",
        ] {
            assert!(put(&db, &v(bad.as_bytes()), false, 0).is_err(), "{bad}");
        }
        assert_eq!(
            git(&db).unwrap().name.as_deref(),
            Some("Ada"),
            "refused changes change nothing"
        );
    }

    #[test]
    fn the_network_policy_and_internet_are_one_setting() {
        let db = SqliteDb::memory().unwrap();
        migrate(&db, MIGRATIONS).unwrap();
        assert_eq!(computer(&db).unwrap().network(), NetworkPolicy::Off);
        let (after, changed) =
            put(&db, &v(br#"{"computer":{"internet":true}}"#), false, 0).unwrap();
        assert_eq!(
            after["computer"],
            json!({"internet": true, "network": "on"})
        );
        assert_eq!(
            changed["computer.network"],
            json!({"old": "off", "new": "on"})
        );
        let list =
            br#"{"computer":{"network":{"allow":["127.0.0.1:9000"],"presets":["pypi","npm"]}}}"#;
        let (after, _) = put(&db, &v(list), false, 0).unwrap();
        assert_eq!(after["computer"]["internet"], false);
        assert_eq!(
            after["computer"]["network"],
            json!({"allow": ["127.0.0.1:9000"], "presets": ["pypi", "npm"]})
        );
        for bad in [
            r#"{"computer":{"internet":true,"network":"off"}}"#,
            r#"{"computer":{"network":{"allow":["http://x"]}}}"#,
            r#"{"computer":{"network":"sometimes"}}"#,
            r#"{"computer":{"network":{"presets":["cpan"]}}}"#,
        ] {
            let error = put(&db, &v(bad.as_bytes()), false, 0).expect_err(bad);
            assert_eq!(error.status(), 400, "{bad}");
        }
        let error = put(
            &db,
            &v(br#"{"computer":{"network":{"allow":["ok.org","x/y"]}}}"#),
            false,
            0,
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("\"x/y\""),
            "names the pattern: {error}"
        );
        assert!(
            matches!(computer(&db).unwrap().network(), NetworkPolicy::Allow(_)),
            "refused changes change nothing"
        );
        // A row stored before `network` existed keeps its meaning.
        store(&db, "computer", &json!({"internet": true})).unwrap();
        assert_eq!(computer(&db).unwrap().network(), NetworkPolicy::On);
        assert_eq!(
            get(&db).unwrap()["computer"],
            json!({"internet": true, "network": "on"})
        );
    }
}
