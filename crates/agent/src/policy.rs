//! What each action needs and how it is recorded: the one table.
//!
//! [`Action::policy`] matches every action without a wildcard, so adding an
//! action does not compile until someone decides who may call it and what
//! the audit log calls it. The Worker reads the same table to refuse a
//! caller before the agent wakes; the agent reads it again in
//! `crate::dispatch` for every entry point (HTTP, WebSocket calls, hooks),
//! where the checks that need storage (revocation) and the request (the
//! exec's backend) happen.

use crate::auth::Scope;
use crate::route::{Action, Tool};

/// Who may perform an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A caller holding this scope.
    Scope(Scope),
    /// A command: `exec:shell` to run it in the light shell, `exec:computer`
    /// on the computer. Either lets the request in; the agent checks the
    /// one the command's backend needs once it is decided.
    Exec,
    /// A hook call: no bearer credential, the hook's own secret instead,
    /// which the agent checks.
    HookSecret,
}

/// Whether an action is recorded in the audit log, and under what name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audit {
    /// It can change something: recorded under this name.
    Record(&'static str),
    /// It only reads: not recorded.
    ReadOnly,
}

/// Access and audit of one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub access: Access,
    pub audit: Audit,
}

const fn policy(access: Access, audit: Audit) -> Policy {
    Policy { access, audit }
}

const fn reads(scope: Scope) -> Policy {
    policy(Access::Scope(scope), Audit::ReadOnly)
}

const fn records(scope: Scope, name: &'static str) -> Policy {
    policy(Access::Scope(scope), Audit::Record(name))
}

impl Tool {
    /// The policy of a file tool: reading tools need `read`, the others
    /// `write` and are audited under the tool's name.
    pub fn policy(self) -> Policy {
        if self.mutates() {
            records(Scope::Write, self.name())
        } else {
            reads(Scope::Read)
        }
    }
}

impl Action {
    /// Who may perform the action and how it is recorded.
    pub fn policy(&self) -> Policy {
        match self {
            Action::Info | Action::Ping | Action::Download(_) | Action::Socket => {
                reads(Scope::Read)
            }
            Action::Jobs
            | Action::Job(_)
            | Action::JobOutput(_)
            | Action::Schedules
            | Action::Schedule(_)
            | Action::Hooks
            | Action::Hook(_)
            | Action::Settings => reads(Scope::Read),
            Action::Create => records(Scope::Admin, "agent.create"),
            Action::Delete => records(Scope::Admin, "agent.delete"),
            Action::Tool(tool) => tool.policy(),
            Action::Upload(_) => records(Scope::Write, "upload"),
            Action::Exec => policy(Access::Exec, Audit::Record("exec")),
            Action::JobCancel(_) => policy(Access::Exec, Audit::Record("job.cancel")),
            Action::ScheduleCreate | Action::SchedulePut(_) => {
                records(Scope::Schedule, "schedule.put")
            }
            Action::ScheduleDelete(_) => records(Scope::Schedule, "schedule.delete"),
            Action::HookPut(_) => records(Scope::Schedule, "hook.put"),
            Action::HookDelete(_) => records(Scope::Schedule, "hook.delete"),
            Action::HookCall(_) => policy(Access::HookSecret, Audit::Record("hook.call")),
            Action::SettingsPut => records(Scope::Admin, "settings.put"),
            Action::Audit => reads(Scope::Admin),
            Action::RevokeToken => records(Scope::Admin, "token.revoke"),
        }
    }

    /// Whether the Worker lets the request through without a bearer
    /// credential (the agent checks the hook's secret instead).
    pub fn public(&self) -> bool {
        self.policy().access == Access::HookSecret
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_tools_need_read_and_are_not_audited() {
        for tool in Tool::ALL {
            let policy = tool.policy();
            if tool.mutates() {
                assert_eq!(policy, records(Scope::Write, tool.name()), "{tool:?}");
            } else {
                assert_eq!(policy, reads(Scope::Read), "{tool:?}");
            }
        }
    }

    #[test]
    fn routes_need_fitting_scopes() {
        let scope = |action: Action| action.policy().access;
        assert_eq!(
            scope(Action::Upload("/x".into())),
            Access::Scope(Scope::Write)
        );
        assert_eq!(scope(Action::Exec), Access::Exec);
        assert_eq!(scope(Action::JobCancel(1)), Access::Exec);
        assert_eq!(scope(Action::Delete), Access::Scope(Scope::Admin));
        assert_eq!(scope(Action::Audit), Access::Scope(Scope::Admin));
        assert_eq!(
            scope(Action::HookPut("h".into())),
            Access::Scope(Scope::Schedule)
        );
        assert!(Action::HookCall("gh".into()).public());
        assert!(!Action::HookPut("gh".into()).public());
        assert!(!Action::Jobs.public() && !Action::Socket.public());
    }

    #[test]
    fn every_change_is_audited() {
        for action in [
            Action::Create,
            Action::Delete,
            Action::Exec,
            Action::Upload("/a".into()),
            Action::JobCancel(3),
            Action::ScheduleCreate,
            Action::ScheduleDelete("s".into()),
            Action::HookPut("h".into()),
            Action::HookDelete("h".into()),
            Action::HookCall("h".into()),
            Action::SettingsPut,
            Action::RevokeToken,
        ] {
            assert!(
                matches!(action.policy().audit, Audit::Record(_)),
                "{action:?}"
            );
        }
        assert_eq!(
            Action::Download("/a".into()).policy().audit,
            Audit::ReadOnly
        );
    }
}
