//! How long automatic checkpoints are kept.
//!
//! Each automatic checkpoint costs one row per path it pins (whole-workspace
//! ones: one per path of the workspace) and keeps alive the content only it
//! still references, so they cannot be kept for ever; manual ones are the
//! user's and are kept until deleted. The policy keeps the newest few
//! whatever their age (so the last operations can always be undone), all
//! of the recent ones (so yesterday's workspace can be had back), and never
//! more than a ceiling (so a busy agent's metadata stays bounded). It counts
//! whole-workspace and partial checkpoints apart, each against the same
//! numbers: an agent making hundreds of small edits must not push out the
//! checkpoint taken before its last command. It is applied each time an
//! automatic checkpoint is added, inside the same transaction, so there is
//! no background job to forget; the checkpoint just added is always kept.

use serde::{Deserialize, Serialize};
use stead_sql::{params, Sql};

use super::CheckpointId;
use crate::error::Result;
use crate::Vfs;

/// The retention policy for automatic checkpoints, as the workspace settings
/// hold it (JSON, every field optional). Whole-workspace and partial
/// checkpoints are counted apart, each against these numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Retention {
    /// The newest automatic checkpoints always kept, whatever their age.
    pub keep_last: u32,
    /// Automatic checkpoints younger than this (milliseconds) are kept too...
    pub keep_within_ms: i64,
    /// ...but never more automatic checkpoints than this in all.
    pub max_automatic: u32,
}

impl Default for Retention {
    /// The last 20, and all of the last 24 hours up to 100 in all.
    fn default() -> Self {
        Retention {
            keep_last: 20,
            keep_within_ms: 24 * 60 * 60 * 1000,
            max_automatic: 100,
        }
    }
}

impl Retention {
    /// Whether the automatic checkpoint at `index` (0 = newest), taken
    /// `age_ms` ago, is kept.
    fn keeps(&self, index: usize, age_ms: i64) -> bool {
        index == 0
            || (index < self.max_automatic as usize
                && (index < self.keep_last as usize || age_ms < self.keep_within_ms))
    }
}

impl<S: Sql> Vfs<'_, S> {
    /// Deletes the automatic checkpoints `retention` does not keep, and the
    /// content only they held; returns their ids. [`Vfs::auto_checkpoint`]
    /// calls it; call it too when the policy changes.
    pub fn prune_checkpoints(&self, retention: &Retention) -> Result<Vec<CheckpointId>> {
        // Only those past the newest `keep_last` (or past the ceiling, if
        // lower) of their kind can go: one statement asks for just those,
        // both kinds at once, so a write does not read back every
        // checkpoint it keeps.
        let first_droppable = retention.keep_last.min(retention.max_automatic).max(1);
        if first_droppable == u32::MAX {
            return Ok(Vec::new());
        }
        self.db.transaction(|| {
            let rows = self.db.query(
                "SELECT id, created_ms, position FROM (SELECT id, created_ms, \
                 ROW_NUMBER() OVER (PARTITION BY whole ORDER BY id DESC) - 1 AS position \
                 FROM checkpoints WHERE kind = 'automatic') WHERE position >= ? ORDER BY id",
                params![i64::from(first_droppable)],
            )?;
            let mut pruned = Vec::new();
            for row in &rows {
                let (id, created, position) = (CheckpointId(row.int(0)?), row.int(1)?, row.int(2)?);
                if !retention.keeps(position as usize, self.now_ms - created) {
                    self.drop_checkpoint(id)?;
                    pruned.push(id);
                }
            }
            Ok(pruned)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_and_the_recent_up_to_the_ceiling() {
        let policy = Retention {
            keep_last: 2,
            keep_within_ms: 1000,
            max_automatic: 4,
        };
        assert!(policy.keeps(0, 1_000_000));
        assert!(policy.keeps(1, 1_000_000));
        assert!(!policy.keeps(2, 1_000_000), "old and beyond keep_last");
        assert!(policy.keeps(3, 999), "recent");
        assert!(!policy.keeps(4, 0), "recent but beyond the ceiling");
        let nothing = Retention {
            keep_last: 0,
            keep_within_ms: 0,
            max_automatic: 0,
        };
        assert!(nothing.keeps(0, 1_000_000), "the one just taken stays");
        assert!(!nothing.keeps(1, 0));
    }

    #[test]
    fn settings_json_may_omit_fields() {
        let policy: Retention = serde_json::from_str(r#"{"keep_last": 5}"#).unwrap();
        assert_eq!(policy.keep_last, 5);
        assert_eq!(policy.max_automatic, Retention::default().max_automatic);
        assert!(serde_json::from_str::<Retention>(r#"{"keep": 5}"#).is_err());
    }
}
