//! The computer sync protocol, defined once for both ends.
//!
//! The agent's Durable Object owns the workspace; a container (the "computer")
//! holds a disposable copy on its disk. Both sides compile this crate, so a
//! message the Worker writes is the type the container reads, and the rules
//! that must agree (how content is cut into chunks and hashed, which paths
//! stay container-side) are one piece of code.
//!
//! A round looks like this (all bodies JSON unless said otherwise):
//!
//! 1. `GET /v1/status` → [`Status`]: which container instance answers. A new
//!    instance means its disk is empty, so the next push is a full one.
//! 2. `POST /v1/sync/apply` with a [`Push`]: the workspace's changes since the
//!    container last acknowledged. The container answers [`ApplyReply`]: either
//!    applied, or the chunk hashes it lacks. Nothing changes on its disk until
//!    it has every chunk, so the request can be sent again at any time.
//! 3. `POST /v1/sync/chunks` with [`frame`]d chunks (binary) it asked for,
//!    then the same `Push` again.
//! 4. `POST /v1/exec` with an [`ExecSpec`] → a stream of [`ExecEvent`]s, one
//!    JSON object per line: output as it comes, then the exit status and the
//!    paths the command changed ([`Change`]s against what was pushed).
//! 5. `POST /v1/chunks` with [`ChunkRequest`] → framed chunks the Durable
//!    Object lacks; it applies every change in one transaction, then
//! 6. `POST /v1/sync/ack` with [`Ack`]: the container now counts its disk as
//!    in step. Until then it keeps reporting those changes, so a Durable
//!    Object that failed between 4 and 6 loses nothing. A change the
//!    workspace refused (over a quota) is acknowledged with the rest, and
//!    the workspace's next [`Push`] carries its own state at that path, so
//!    the two copies agree again and the refusal is not reported anew.
//!
//! An exec id is never run twice: a repeated `POST /v1/exec` is refused, so
//! an ambiguous disconnect cannot replay a command.
//!
//! A command's output is kept in the container until its report is
//! acknowledged: `GET /v1/exec/{id}/output?from=N` reads it on from byte
//! offset `N` ([`OutputQuery`]) to the exit event, which is how a
//! **detached** command ([`ExecSpec::detach`]) that outlives the alarm
//! that started it is picked back up. Long-running **processes** (dev
//! servers) have routes of their own: [`process`]; what they write comes
//! back while they run through [`live`] scans. Interactive shells on a
//! pty: [`terminal`]. What a computer installed outside the synced tree
//! is packed and restored with [`environment`].

pub mod environment;
pub mod frame;
pub mod ignore;
pub mod live;
pub mod owner;
pub mod process;
pub mod terminal;
mod wire;

pub use frame::{FrameDecoder, FrameError};
pub use ignore::IgnoreRules;
pub use wire::*;

/// Version of the protocol; both ends refuse another. 2: a file's change
/// carries its modification time ([`Change::mtime_ms`]).
pub const PROTOCOL: u32 = 2;

/// Bytes per content chunk: every chunk of a file is this size but the last.
/// The workspace stores content in chunks of the same size, so a hash names
/// the same bytes on both sides.
pub const CHUNK_SIZE: usize = 512 * 1024;

/// Header carrying the per-container secret (as `Bearer <secret>`).
pub const AUTH_HEADER: &str = "authorization";

/// Header naming the container a request is for: one program serves one
/// container in production and many (one directory each) in local runs.
pub const CONTAINER_HEADER: &str = "x-stead-container";

/// Header telling the `Computer` object whether the agent's settings allow
/// its container outbound network (`true`/`false`; applied when the
/// container next starts).
pub const INTERNET_HEADER: &str = "x-stead-internet";

/// Header with the agent's idle timeout for its computer, in milliseconds,
/// on every request the workspace side sends to the `Computer` object (see
/// [`owner`]).
pub const IDLE_HEADER: &str = "x-stead-idle-ms";

/// The top-level names that belong to the computer's system, never to the
/// workspace: the computer's own `/usr`, `/etc`, `/tmp`, ... stand there
/// (the container's `layout` module says why and what each holds). A push
/// leaves workspace entries under them out, a scan never reports them, and
/// a command cannot run in a directory under one. Fixed, so that it is the
/// same in every mode and on every machine.
pub const SYSTEM_NAMES: &[&str] = &[
    "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "root", "run", "sbin", "sys",
    "tmp", "usr", "var",
];

/// The system name (of [`SYSTEM_NAMES`]) a workspace path (`/tmp/x`) lies
/// at or under, if any.
pub fn system_name(path: &str) -> Option<&'static str> {
    let first = path.trim_start_matches('/').split('/').next()?;
    SYSTEM_NAMES.iter().copied().find(|name| *name == first)
}

/// The hash of one chunk.
pub fn hash_chunk(data: &[u8]) -> ChunkHash {
    ChunkHash(*blake3::hash(data).as_bytes())
}

/// The chunk hashes of `data`, cut at [`CHUNK_SIZE`].
pub fn hash_content(data: &[u8]) -> Vec<ChunkHash> {
    data.chunks(CHUNK_SIZE).map(hash_chunk).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_names_are_top_level_only() {
        assert_eq!(system_name("/tmp"), Some("tmp"));
        assert_eq!(system_name("/etc/app"), Some("etc"));
        assert_eq!(system_name("/src/tmp"), None);
        assert_eq!(system_name("/tmpfile"), None);
        assert_eq!(system_name("/"), None);
    }

    #[test]
    fn content_is_cut_at_the_chunk_size() {
        assert!(hash_content(b"").is_empty());
        let data = vec![7u8; CHUNK_SIZE + 1];
        let hashes = hash_content(&data);
        assert_eq!(hashes.len(), 2);
        assert_eq!(hashes[0], hash_chunk(&data[..CHUNK_SIZE]));
        assert_eq!(hashes[1], hash_chunk(&[7]));
    }
}
