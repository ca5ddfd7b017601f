//! Profiles and the directory's default agent.
//!
//! `stead login` keeps named profiles (URL and token) in
//! `$STEAD_CONFIG_DIR`, else `$XDG_CONFIG_HOME/stead`, else
//! `~/.config/stead`, in `config.json` with mode 0600 (it holds tokens).
//! `stead use AGENT` writes `.stead.json` in the current directory; a
//! command looks for it there and in each parent, as git looks for `.git`.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{CliError, Failure, Result};

/// The profile used when none is named.
pub const DEFAULT_PROFILE: &str = "default";

/// The name of the per-directory file `stead use` writes.
pub const DIRECTORY_FILE: &str = ".stead.json";

/// One deployment and the token to reach it with.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Profile {
    pub url: String,
    pub token: String,
}

/// The whole configuration file.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Config {
    /// The profile `login` stored last, used when none is named.
    pub current: Option<String>,
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
}

/// The folder the configuration lives in.
pub fn config_dir() -> Result<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("STEAD_CONFIG_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(dir).join("stead"));
    }
    match var("HOME") {
        Some(home) => Ok(PathBuf::from(home).join(".config").join("stead")),
        None => Err(CliError::new(
            Failure::Config,
            "no configuration folder: set HOME, XDG_CONFIG_HOME or STEAD_CONFIG_DIR",
        )),
    }
}

impl Config {
    fn path() -> Result<PathBuf> {
        Ok(config_dir()?.join("config.json"))
    }

    /// The stored configuration; empty when there is none yet.
    pub fn load() -> Result<Config> {
        let path = Config::path()?;
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                CliError::new(
                    Failure::Config,
                    format!(
                        "{} is not a stead configuration ({e}); fix it or remove it and run `stead login` again",
                        path.display()
                    ),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(CliError::local(&path, e)),
        }
    }

    /// Writes the configuration whole: to a new file of mode 0600 first,
    /// then renamed over the old one, so a crash never leaves half a file
    /// and the tokens are never readable by others, not even for a moment.
    pub fn save(&self) -> Result<()> {
        let path = Config::path()?;
        let dir = path.parent().expect("the file is in a folder");
        fs::create_dir_all(dir).map_err(|e| CliError::local(dir, e))?;
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| CliError::local(dir, e))?;
        let staged = dir.join(format!(".config.json.{}", std::process::id()));
        let text = serde_json::to_vec_pretty(self).expect("the configuration serializes");
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&staged)
            .map_err(|e| CliError::local(&staged, e))?;
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(|e| CliError::local(&staged, e))?;
        fs::rename(&staged, &path).map_err(|e| CliError::local(&path, e))
    }

    /// The profile called `name`, or the current one when `name` is None.
    /// `Ok(None)` when no profile is stored and none was named.
    pub fn profile(&self, name: Option<&str>) -> Result<Option<(&str, &Profile)>> {
        let Some(name) = name.or(self.current.as_deref()) else {
            return Ok(None);
        };
        match self.profiles.get_key_value(name) {
            Some((name, profile)) => Ok(Some((name, profile))),
            None => {
                let known: Vec<&str> = self.profiles.keys().map(String::as_str).collect();
                let known = match known.is_empty() {
                    true => "none is stored".to_string(),
                    false => format!("stored: {}", known.join(", ")),
                };
                Err(CliError::new(
                    Failure::Config,
                    format!(
                        "no profile named {name:?} ({known}); create it with `stead --profile {name} login --url URL --token TOKEN`"
                    ),
                ))
            }
        }
    }
}

/// What `stead use` records for a directory.
#[derive(Debug, Serialize, Deserialize)]
pub struct DirectoryDefaults {
    pub agent: String,
}

/// The nearest `.stead.json` from `start` upwards, with its folder.
pub fn find_directory_defaults(start: &Path) -> Result<Option<(PathBuf, DirectoryDefaults)>> {
    for dir in start.ancestors() {
        let path = dir.join(DIRECTORY_FILE);
        match fs::read(&path) {
            Ok(bytes) => {
                let defaults = serde_json::from_slice(&bytes).map_err(|e| {
                    CliError::new(
                        Failure::Config,
                        format!(
                            "{} is not a stead directory file ({e}); run `stead use AGENT` there again",
                            path.display()
                        ),
                    )
                })?;
                return Ok(Some((path, defaults)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(CliError::local(&path, e)),
        }
    }
    Ok(None)
}

/// Records `agent` as the default for `dir`.
pub fn write_directory_defaults(dir: &Path, agent: &str) -> Result<PathBuf> {
    let path = dir.join(DIRECTORY_FILE);
    let text = serde_json::to_vec_pretty(&DirectoryDefaults {
        agent: agent.to_string(),
    })
    .expect("serializes");
    fs::write(&path, text).map_err(|e| CliError::local(&path, e))?;
    Ok(path)
}
