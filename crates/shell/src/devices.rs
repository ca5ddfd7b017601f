//! The device files a script may name, which are not in the workspace.
//!
//! They read as on Linux: `/dev/null` is empty; `/dev/zero` and the random
//! devices never end, so they read as a full pipe does (see
//! [`crate::io::Stdin`]): `max_pipe_bytes` of zeros or random bytes, marked
//! as cut, so `head -c 16 /dev/urandom` works and `wc -c /dev/zero` ends
//! with `max_pipe_bytes` instead of printing a count. `/dev/stdin`,
//! `/dev/stdout`, `/dev/stderr` and `/dev/fd/N` are the descriptors
//! themselves; writes to `/dev/null`, `/dev/zero` and the random devices
//! are discarded.

use crate::limits::{Abort, Budget, Clock};

/// A device path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Device {
    Null,
    Zero,
    /// `/dev/random` and `/dev/urandom`.
    Random,
    /// `/dev/stdin`, `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`.
    Descriptor(usize),
}

impl Device {
    /// The device `path` names, if any (exact names, as the kernel's).
    pub(crate) fn named(path: &str) -> Option<Device> {
        Some(match path {
            "/dev/null" => Device::Null,
            "/dev/zero" => Device::Zero,
            "/dev/random" | "/dev/urandom" => Device::Random,
            "/dev/stdin" => Device::Descriptor(0),
            "/dev/stdout" => Device::Descriptor(1),
            "/dev/stderr" => Device::Descriptor(2),
            _ => {
                let n = path.strip_prefix("/dev/fd/")?;
                if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                Device::Descriptor(n.parse().ok()?)
            }
        })
    }
}

/// What reading an endless device gives: as much as a pipe holds.
pub(crate) struct Endless {
    pub data: Vec<u8>,
}

impl Endless {
    /// Reads `device` if it is an endless one (zeros or random bytes),
    /// charging the CPU and memory budgets for the bytes made.
    pub(crate) fn read(
        device: Device,
        budget: &Budget,
        clock: &dyn Clock,
    ) -> Result<Option<Self>, Abort> {
        let len = budget.limits().max_pipe_bytes;
        let data = match device {
            Device::Zero => {
                budget.check_memory(len as u64)?;
                budget.charge_cpu(len as u64)?;
                vec![0; len]
            }
            Device::Random => {
                budget.check_memory(len as u64)?;
                budget.charge_cpu(len as u64)?;
                random_bytes(len, clock.now_ms())
            }
            Device::Null | Device::Descriptor(_) => return Ok(None),
        };
        Ok(Some(Endless { data }))
    }
}

/// `len` bytes from a xorshift generator seeded by `seed` (the isolate
/// offers no entropy source to the shell; these are not for keys).
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed ^ 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names() {
        assert_eq!(Device::named("/dev/zero"), Some(Device::Zero));
        assert_eq!(Device::named("/dev/urandom"), Some(Device::Random));
        assert_eq!(Device::named("/dev/fd/7"), Some(Device::Descriptor(7)));
        assert_eq!(Device::named("/dev/stdout"), Some(Device::Descriptor(1)));
        assert_eq!(Device::named("/dev/fd/"), None);
        assert_eq!(Device::named("/dev/fd/x"), None);
        assert_eq!(Device::named("/dev/sda"), None);
    }

    #[test]
    fn random_bytes_vary() {
        let bytes = random_bytes(4096, 1);
        assert_eq!(bytes.len(), 4096);
        let distinct: std::collections::BTreeSet<u8> = bytes.iter().copied().collect();
        assert!(distinct.len() > 200);
    }
}
