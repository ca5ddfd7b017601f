//! What the `Computer` object remembers about its container, and what its
//! state route answers from it.
//!
//! The record is a [`Life`] (stopped, or started with a secret) plus what
//! outlives a container (the last use, the idle timeout, the last build
//! seen). In storage it keeps the flat shape it had before it was an enum
//! (`secret`, `started_ms`, `ready`, `instance`, `released` side by side):
//! a record a deployed object stored loads as it is, and one stored by
//! this code loads in the code before it, so a rollback loses nothing.
//! A flat record with a secret is a started container (one without its
//! start time, which no code wrote, counts as started at 0); one without
//! is a stopped one.

use serde::{Deserialize, Serialize};
use stead_sync::owner::{ComputerState, Lifecycle, Provision};

use super::HEARTBEAT_MS;

/// Where the container is, as this object knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Life {
    /// None runs that this object started. `released`: the last one was
    /// released on purpose (idle, on request) rather than lost.
    Stopped { released: bool },
    /// One was started with `secret` at `started_ms`; `ready` once its
    /// program has answered, `instance` its id from its last status.
    Started {
        secret: String,
        started_ms: i64,
        ready: bool,
        instance: Option<String>,
    },
}

/// The record kept in the object's memory and storage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Flat", into = "Flat")]
pub struct Record {
    pub life: Life,
    /// When a request last came.
    pub last_used_ms: Option<i64>,
    /// The idle timeout last sent (None: the default).
    pub idle_ms: Option<u64>,
    /// The program's build from its last status answer (kept when the
    /// container goes: the state route still says what ran).
    pub image: Option<String>,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            life: Life::Stopped { released: false },
            last_used_ms: None,
            idle_ms: None,
            image: None,
        }
    }
}

impl Record {
    /// The secret of the container this object started, if one is.
    pub fn secret(&self) -> Option<&str> {
        match &self.life {
            Life::Started { secret, .. } => Some(secret),
            Life::Stopped { .. } => None,
        }
    }

    /// Whether the last container was released on purpose.
    pub fn released(&self) -> bool {
        matches!(self.life, Life::Stopped { released: true })
    }

    pub fn idle_ms(&self, default: u64) -> u64 {
        self.idle_ms.unwrap_or(default)
    }

    /// When the container is released if nothing happens before.
    pub fn deadline(&self, default_idle: u64) -> i64 {
        let idle = i64::try_from(self.idle_ms(default_idle)).unwrap_or(i64::MAX);
        self.last_used_ms
            .or(self.started_ms())
            .unwrap_or(0)
            .saturating_add(idle)
    }

    /// The alarm offset from `now`: the next heartbeat, or the deadline if
    /// it comes first.
    pub fn next_alarm_in(&self, now: i64, default_idle: u64) -> i64 {
        (self.deadline(default_idle) - now).clamp(0, HEARTBEAT_MS)
    }

    fn started_ms(&self) -> Option<i64> {
        match &self.life {
            Life::Started { started_ms, .. } => Some(*started_ms),
            Life::Stopped { .. } => None,
        }
    }

    /// Forgets the container (it is gone): released stays as it was, and
    /// the last build seen stays.
    pub fn stop(&mut self) {
        if let Life::Started { .. } = self.life {
            self.life = Life::Stopped { released: false };
        }
    }

    /// Forgets the container, released on purpose.
    pub fn release(&mut self) {
        self.life = Life::Stopped { released: true };
    }

    /// Notes that the program answered, and which instance and build it is
    /// when the answer said.
    pub fn answered(&mut self, status: Option<stead_sync::Status>) {
        if let Life::Started {
            ready, instance, ..
        } = &mut self.life
        {
            *ready = true;
            if let Some(status) = status {
                *instance = Some(status.instance);
                self.image = status.build.or(self.image.take());
            }
        }
    }

    /// The state route's answer, given whether a container runs now.
    pub fn state(&self, running: bool, default_idle: u64) -> ComputerState {
        let (ready, instance, started_ms) = match &self.life {
            Life::Started {
                ready,
                instance,
                started_ms,
                ..
            } => (*ready, instance.clone(), Some(*started_ms)),
            Life::Stopped { .. } => (false, None, None),
        };
        let state = match (running, ready) {
            (false, _) => Lifecycle::Stopped,
            (true, false) => Lifecycle::Starting,
            (true, true) => Lifecycle::Running,
        };
        ComputerState {
            state,
            provision: Provision::Container,
            instance: instance.filter(|_| running),
            started_ms: started_ms.filter(|_| running),
            last_used_ms: self.last_used_ms,
            idle_ms: self.idle_ms(default_idle),
            idle_deadline_ms: running.then(|| self.deadline(default_idle)),
            image: self.image.clone(),
        }
    }

    /// Whether keeping `self` after `before` needs a storage write: more
    /// than the last-used time changed, or that moved by a heartbeat or
    /// more. The memory copy is what counts while the object lives (its
    /// container goes with it); the stored one only has to be near enough
    /// for an object that starts while its container still runs. So most
    /// requests cost no storage write.
    pub fn worth_storing_after(&self, before: &Record) -> bool {
        let use_moved = match (before.last_used_ms, self.last_used_ms) {
            (Some(then), Some(now)) => now - then >= HEARTBEAT_MS,
            (then, now) => then != now,
        };
        let without_use = |r: &Record| Record {
            last_used_ms: None,
            ..r.clone()
        };
        use_moved || without_use(before) != without_use(self)
    }
}

/// The stored shape (see the module docs).
#[derive(Serialize, Deserialize)]
struct Flat {
    secret: Option<String>,
    started_ms: Option<i64>,
    ready: bool,
    instance: Option<String>,
    image: Option<String>,
    last_used_ms: Option<i64>,
    idle_ms: Option<u64>,
    #[serde(default)]
    released: bool,
}

impl From<Flat> for Record {
    fn from(flat: Flat) -> Self {
        let life = match flat.secret {
            Some(secret) => Life::Started {
                secret,
                started_ms: flat.started_ms.unwrap_or(0),
                ready: flat.ready,
                instance: flat.instance,
            },
            None => Life::Stopped {
                released: flat.released,
            },
        };
        Record {
            life,
            last_used_ms: flat.last_used_ms,
            idle_ms: flat.idle_ms,
            image: flat.image,
        }
    }
}

impl From<Record> for Flat {
    fn from(record: Record) -> Self {
        let (secret, started_ms, ready, instance, released) = match record.life {
            Life::Started {
                secret,
                started_ms,
                ready,
                instance,
            } => (Some(secret), Some(started_ms), ready, instance, false),
            Life::Stopped { released } => (None, None, false, None, released),
        };
        Flat {
            secret,
            started_ms,
            ready,
            instance,
            image: record.image,
            last_used_ms: record.last_used_ms,
            idle_ms: record.idle_ms,
            released,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stead_sync::owner::DEFAULT_IDLE_MS;

    fn record(last_used: i64, idle: Option<u64>) -> Record {
        Record {
            life: Life::Started {
                secret: "s".into(),
                started_ms: 100,
                ready: true,
                instance: Some("i".into()),
            },
            last_used_ms: Some(last_used),
            idle_ms: idle,
            image: Some("b".into()),
        }
    }

    #[test]
    fn the_deadline_counts_from_the_last_request() {
        let r = record(1_000, Some(60_000));
        assert_eq!(r.deadline(DEFAULT_IDLE_MS), 61_000);
        assert_eq!(record(1_000, None).deadline(2_000), 3_000);
        // Heartbeats until the deadline is near, then the deadline.
        assert_eq!(r.next_alarm_in(1_000, DEFAULT_IDLE_MS), HEARTBEAT_MS);
        assert_eq!(r.next_alarm_in(59_000, DEFAULT_IDLE_MS), 2_000);
        assert_eq!(r.next_alarm_in(70_000, DEFAULT_IDLE_MS), 0);
        let mut fresh = record(0, None);
        fresh.last_used_ms = None;
        assert_eq!(fresh.deadline(1_000), 1_100, "from the start, unused");
    }

    #[test]
    fn the_state_follows_the_container() {
        let mut r = record(1_000, Some(60_000));
        let running = r.state(true, DEFAULT_IDLE_MS);
        assert_eq!(running.state, Lifecycle::Running);
        assert_eq!(running.idle_deadline_ms, Some(61_000));
        assert_eq!(running.instance.as_deref(), Some("i"));
        if let Life::Started { ready, .. } = &mut r.life {
            *ready = false;
        }
        assert_eq!(r.state(true, DEFAULT_IDLE_MS).state, Lifecycle::Starting);
        let stopped = r.state(false, DEFAULT_IDLE_MS);
        assert_eq!(stopped.state, Lifecycle::Stopped);
        assert_eq!((stopped.instance, stopped.started_ms), (None, None));
        assert_eq!(stopped.idle_deadline_ms, None);
        r.stop();
        assert_eq!((r.secret(), r.released()), (None, false));
        assert_eq!(r.image.as_deref(), Some("b"), "the last build seen stays");
        r.release();
        r.stop();
        assert!(r.released(), "stopping a released computer keeps it so");
    }

    #[test]
    fn a_record_stored_before_the_enum_loads_and_keeps_its_shape() {
        // As the object stored it before its record was an enum.
        let old = serde_json::json!({
            "secret": "s", "started_ms": 100, "ready": true, "instance": "i",
            "image": "b", "last_used_ms": 1000, "idle_ms": 60000, "released": false,
        });
        let loaded: Record = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(loaded, record(1_000, Some(60_000)));
        assert_eq!(serde_json::to_value(&loaded).unwrap(), old);
        // Released, from a build that wrote no `released` at all.
        let released = serde_json::json!({
            "secret": null, "started_ms": null, "ready": false, "instance": null,
            "image": "b", "last_used_ms": 5, "idle_ms": null, "released": true,
        });
        let loaded: Record = serde_json::from_value(released.clone()).unwrap();
        assert!(loaded.released());
        assert_eq!(serde_json::to_value(&loaded).unwrap(), released);
        let mut older = released;
        older.as_object_mut().unwrap().remove("released");
        let loaded: Record = serde_json::from_value(older).unwrap();
        assert_eq!(loaded.life, Life::Stopped { released: false });
    }

    #[test]
    fn only_a_change_beyond_use_is_worth_a_write() {
        let before = record(1_000, None);
        let mut after = before.clone();
        after.last_used_ms = Some(1_000 + HEARTBEAT_MS - 1);
        assert!(!after.worth_storing_after(&before));
        after.last_used_ms = Some(1_000 + HEARTBEAT_MS);
        assert!(after.worth_storing_after(&before));
        let mut answered = before.clone();
        answered.stop();
        assert!(answered.worth_storing_after(&before));
    }
}
