//! The platform's certificate authority, for HTTPS the Worker intercepts.
//!
//! Under an allow-list (or a secret bound to a host) the platform hands the
//! container's HTTPS for those hosts to the Worker
//! (`interceptOutboundHttps`), which answers with certificates signed by a
//! CA the platform places in the container at run time, at [`PLATFORM_CA`].
//! That CA is ephemeral, so it cannot be baked into the image: commands'
//! clients trust it only once the program has added it to the machine's
//! store. The program does so before each command starts, as soon as the
//! file is there: appended to Debian's bundle, [`SYSTEM_BUNDLE`] (what
//! OpenSSL, curl, git and Python's `ssl` read by default), and named to the
//! clients that keep their own store (`NODE_EXTRA_CA_CERTS` for Node, the
//! bundle for pip and `requests`).
//!
//! Only on the computer's own machine (`Isolation::Container`), where the
//! program is root and the store is the image's: a program on a host never
//! touches the host's trust store. Without the file (a local runtime with no
//! interception, or internet off) nothing changes.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where the platform puts its CA in a container.
pub const PLATFORM_CA: &str = "/etc/cloudflare/certs/cloudflare-containers-ca.crt";

/// Debian's bundle of trusted CAs.
pub const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The machine's trust store and the platform CA it takes in.
#[derive(Debug)]
pub struct Trust {
    ca: PathBuf,
    bundle: PathBuf,
    /// The CA text last added to the bundle (a rotated CA is added too).
    added: Mutex<Option<String>>,
}

impl Trust {
    /// The computer's own machine: the platform's paths.
    pub fn machine() -> Trust {
        Trust::new(PLATFORM_CA, SYSTEM_BUNDLE)
    }

    pub fn new(ca: impl Into<PathBuf>, bundle: impl Into<PathBuf>) -> Trust {
        Trust {
            ca: ca.into(),
            bundle: bundle.into(),
            added: Mutex::new(None),
        }
    }

    /// Adds the platform CA to the bundle if it is there and not in it yet,
    /// and answers the variables a command needs for its clients to trust
    /// it (none without a CA). A CA that cannot be read or added is left
    /// out: the command runs, and intercepted HTTPS fails its certificate
    /// check as it would have without this.
    pub fn command_env(&self) -> Vec<(&'static str, String)> {
        match self.take_in() {
            Ok(true) => {
                let bundle = self.bundle.display().to_string();
                vec![
                    ("NODE_EXTRA_CA_CERTS", self.ca.display().to_string()),
                    ("PIP_CERT", bundle.clone()),
                    ("REQUESTS_CA_BUNDLE", bundle),
                ]
            }
            Ok(false) => Vec::new(),
            Err(error) => {
                eprintln!(
                    "stead-computer: the platform CA {} was not added to {}: {error}",
                    self.ca.display(),
                    self.bundle.display()
                );
                Vec::new()
            }
        }
    }

    /// Whether the bundle holds the platform CA now.
    fn take_in(&self) -> io::Result<bool> {
        let ca = match fs::read_to_string(&self.ca) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let pem = ca.trim();
        if pem.is_empty() {
            return Ok(false);
        }
        let mut added = self.added.lock().unwrap_or_else(|p| p.into_inner());
        if added.as_deref() == Some(pem) {
            return Ok(true);
        }
        // A program restarted in the same container finds it there already.
        if !contains(&self.bundle, pem)? {
            append(&self.bundle, pem)?;
        }
        *added = Some(pem.to_string());
        Ok(true)
    }
}

fn contains(bundle: &Path, pem: &str) -> io::Result<bool> {
    match fs::read_to_string(bundle) {
        Ok(text) => Ok(text.contains(pem)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

fn append(bundle: &Path, pem: &str) -> io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(bundle)?;
    file.write_all(format!("\n{pem}\n").as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBplatform\n-----END CERTIFICATE-----\n";
    const OTHER: &str = "-----BEGIN CERTIFICATE-----\nMIIBsystem\n-----END CERTIFICATE-----\n";

    fn setup() -> (tempfile::TempDir, Trust) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("bundle.crt"), OTHER).unwrap();
        let trust = Trust::new(dir.path().join("ca.crt"), dir.path().join("bundle.crt"));
        (dir, trust)
    }

    fn bundle(dir: &tempfile::TempDir) -> String {
        fs::read_to_string(dir.path().join("bundle.crt")).unwrap()
    }

    #[test]
    fn without_the_platform_ca_nothing_changes() {
        let (dir, trust) = setup();
        assert!(trust.command_env().is_empty());
        assert_eq!(bundle(&dir), OTHER);
    }

    #[test]
    fn the_ca_is_added_once_when_it_appears_and_named_to_the_clients() {
        let (dir, trust) = setup();
        assert!(trust.command_env().is_empty());
        fs::write(dir.path().join("ca.crt"), CA).unwrap();
        let env = trust.command_env();
        let bundle_path = dir.path().join("bundle.crt").display().to_string();
        assert!(env.contains(&(
            "NODE_EXTRA_CA_CERTS",
            dir.path().join("ca.crt").display().to_string()
        )));
        assert!(env.contains(&("PIP_CERT", bundle_path.clone())));
        assert!(env.contains(&("REQUESTS_CA_BUNDLE", bundle_path)));
        let text = bundle(&dir);
        assert!(
            text.starts_with(OTHER) && text.contains(CA.trim()),
            "{text}"
        );
        // Again, and from a restarted program: not added twice.
        trust.command_env();
        let restarted = Trust::new(dir.path().join("ca.crt"), dir.path().join("bundle.crt"));
        assert_eq!(restarted.command_env(), env);
        assert_eq!(bundle(&dir).matches(CA.trim()).count(), 1);
    }

    #[test]
    fn a_rotated_ca_is_added_too() {
        let (dir, trust) = setup();
        fs::write(dir.path().join("ca.crt"), CA).unwrap();
        trust.command_env();
        let rotated = CA.replace("platform", "rotated");
        fs::write(dir.path().join("ca.crt"), &rotated).unwrap();
        trust.command_env();
        let text = bundle(&dir);
        assert!(
            text.contains(CA.trim()) && text.contains(rotated.trim()),
            "{text}"
        );
    }

    #[test]
    fn a_bundle_that_cannot_be_written_leaves_the_command_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("ca.crt"), CA).unwrap();
        // The bundle's directory does not exist: the append fails.
        let trust = Trust::new(dir.path().join("ca.crt"), dir.path().join("no/bundle.crt"));
        assert!(trust.command_env().is_empty());
    }
}
