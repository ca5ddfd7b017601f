//! The port route's admissions, cached where the port is reached.
//!
//! A request to a port goes from the Worker straight to the agent's
//! `Computer` object (the container's owner), not through the agent's own
//! Durable Object: the Worker checks the credential (signature, expiry,
//! scope, agent) as for every route, and what only the agent knows (the
//! port is declared by a running process; the token or share link is not
//! revoked; the token is not one of a deleted predecessor's) is asked of
//! the agent once per caller and port, then kept here as a **grant** for
//! at most [`LEASE_MS`].
//!
//! The agent withdraws grants: whenever something that could close a port
//! to a caller happens (a token or share link revoked, a process serving
//! ports ends or is stopped, a fork brings another agent's revocations,
//! the computer is released or the agent deleted), it tells the `Computer`
//! object to forget every grant ([`FORGET_PATH`]) before it answers, so the
//! next request asks again. Forgetting everything is coarse but cheap:
//! such events are rare, and a miss costs one round trip to the agent.
//! The lease bounds what a forget that could not be delivered leaves
//! behind.
//!
//! An answer of the agent's that arrives after a forget it predates is
//! never kept ([`Grants::epoch`]): an admission in flight while a
//! revocation lands lets that one request through, as it would have on
//! the agent, and no later one.

use std::collections::HashMap;

/// Where the agent tells the `Computer` object to forget every grant
/// (`DELETE`): a route of that object's own, never forwarded.
pub const FORGET_PATH: &str = "/computer/port-grants";

/// The header the Worker sets on a port request to the `Computer` object:
/// the URL the client asked for, which the admission asked of the agent
/// is routed by (a port's own origin or the API's prefix).
pub const URL_HEADER: &str = "x-stead-port-url";

/// How long a grant lasts without being asked again.
pub const LEASE_MS: i64 = 10_000;

/// Most grants kept at once (callers × ports); past it, all are dropped.
const MAX_GRANTS: usize = 1024;

/// The grants of one `Computer` object: by caller (its audit name:
/// `admin`, `token:<id>`, `share:<id>`) and port, when each was admitted.
#[derive(Debug, Default)]
pub struct Grants {
    admitted: HashMap<(String, u16), i64>,
    epoch: u64,
}

impl Grants {
    /// Whether `caller` holds a grant for `port` at `now_ms`.
    pub fn holds(&mut self, caller: &str, port: u16, now_ms: i64) -> bool {
        let key = (caller.to_string(), port);
        match self.admitted.get(&key) {
            Some(at) if now_ms - at < LEASE_MS && now_ms >= *at => true,
            Some(_) => {
                self.admitted.remove(&key);
                false
            }
            None => false,
        }
    }

    /// The count of forgets so far: taken before the agent is asked, and
    /// given back with its answer to [`Self::admitted`].
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Keeps the agent's admission of `caller` to `port`, asked at
    /// `epoch`, unless a forget came since.
    pub fn admitted(&mut self, caller: &str, port: u16, epoch: u64, now_ms: i64) {
        if epoch != self.epoch {
            return;
        }
        if self.admitted.len() >= MAX_GRANTS {
            self.admitted.clear();
        }
        self.admitted.insert((caller.to_string(), port), now_ms);
    }

    /// Drops every grant: the agent withdrew something.
    pub fn forget(&mut self) {
        self.admitted.clear();
        self.epoch += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_per_caller_and_port_and_lapses() {
        let mut grants = Grants::default();
        assert!(!grants.holds("token:a", 3000, 0));
        let epoch = grants.epoch();
        grants.admitted("token:a", 3000, epoch, 1_000);
        assert!(grants.holds("token:a", 3000, 1_000 + LEASE_MS - 1));
        assert!(!grants.holds("token:a", 3001, 1_000));
        assert!(!grants.holds("token:b", 3000, 1_000));
        assert!(!grants.holds("token:a", 3000, 1_000 + LEASE_MS));
        // Lapsed grants are gone, not just stale.
        assert!(!grants.holds("token:a", 3000, 1_001));
        // A clock that went back is no reason to keep one.
        grants.admitted("token:a", 3000, epoch, 5_000);
        assert!(!grants.holds("token:a", 3000, 4_999));
    }

    #[test]
    fn a_forget_drops_every_grant_and_any_answer_asked_before_it() {
        let mut grants = Grants::default();
        let asked = grants.epoch();
        grants.admitted("share:s", 8000, asked, 0);
        grants.admitted("admin", 8000, asked, 0);
        // Asked before the forget, answered after it: not kept.
        let in_flight = grants.epoch();
        grants.forget();
        assert!(!grants.holds("share:s", 8000, 1));
        assert!(!grants.holds("admin", 8000, 1));
        grants.admitted("admin", 8000, in_flight, 2);
        assert!(!grants.holds("admin", 8000, 3));
        // Asked after it: kept.
        let now = grants.epoch();
        grants.admitted("admin", 8000, now, 4);
        assert!(grants.holds("admin", 8000, 5));
    }

    #[test]
    fn grants_stay_bounded() {
        let mut grants = Grants::default();
        for n in 0..=MAX_GRANTS {
            grants.admitted(&format!("token:{n}"), 1, 0, 0);
        }
        assert!(grants.admitted.len() <= MAX_GRANTS);
        assert!(grants.holds(&format!("token:{MAX_GRANTS}"), 1, 0));
    }
}
