//! What each action needs and how it is recorded: the one table.
//!
//! [`Action::policy`] matches every action without a wildcard, so adding an
//! action does not compile until someone decides who may call it and what
//! the audit log calls it. The Worker reads the same table to refuse a
//! caller before the agent wakes; the agent reads it again in
//! `crate::dispatch` for every entry point (HTTP, WebSocket calls, hooks),
//! where the checks that need storage (revocation) and the request (the
//! exec's backend) happen.

use crate::auth::{Caller, Principal, Scope};
use crate::error::ApiError;
use crate::exec::destination;
use crate::outcome::Backend;
use crate::route::{Action, Tool};

/// Who may perform an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A caller holding this scope.
    Scope(Scope),
    /// A command: `exec:shell` to run it in the light shell, `exec:computer`
    /// on the computer. Which one a request needs depends on where the
    /// command runs, which only its body (or its job) says: the door lets
    /// any credential for the agent in ([`Access::lets_in`]) and the agent
    /// checks the backend's scope once it knows it, so a refusal names the
    /// scope the request needs.
    Exec,
    /// A hook call: no bearer credential, the hook's own secret instead,
    /// which the agent checks.
    HookSecret,
    /// A request to a port: a caller holding `ports`, or a share link
    /// (which the agent checks is for that port and not revoked).
    Port,
    /// Any credential for the agent: what it may then do is checked per
    /// call (the MCP endpoint, whose tool calls are dispatched like their
    /// HTTP twins).
    Credential,
    /// The deployment's admin token only: the action creates another
    /// agent, and an agent token (even one holding `admin`) names one
    /// agent and acts on it alone.
    DeploymentAdmin,
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
            // Each tool call is authorized and audited as its HTTP twin.
            Action::Mcp => policy(Access::Credential, Audit::ReadOnly),
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
            Action::Tokens => reads(Scope::Admin),
            // Only the Worker, as the deployment's admin, mints tokens.
            Action::TokenMinted => policy(Access::DeploymentAdmin, Audit::Record("token.mint")),
            Action::Checkpoints | Action::Checkpoint(_) | Action::Diff => reads(Scope::Read),
            Action::CheckpointCreate => records(Scope::Write, "checkpoint.create"),
            Action::CheckpointDelete(_) => records(Scope::Write, "checkpoint.delete"),
            Action::Restore => records(Scope::Write, "restore"),
            Action::Undo => records(Scope::Write, "undo"),
            // A fork makes another agent, which only the deployment's admin
            // token may; its pages are sent as that admin.
            Action::Fork => policy(Access::DeploymentAdmin, Audit::Record("fork")),
            Action::ForkImport => policy(Access::DeploymentAdmin, Audit::Record("fork.import")),
            Action::Computer => reads(Scope::Read),
            Action::ComputerStop => records(Scope::ExecComputer, "computer.stop"),
            Action::Processes | Action::Process(_) | Action::ProcessOutput(_) => reads(Scope::Read),
            // A process is a command on the computer.
            Action::ProcessStart => records(Scope::ExecComputer, "process.start"),
            Action::ProcessSignal(_) => records(Scope::ExecComputer, "process.signal"),
            Action::ProcessStop(_) => records(Scope::ExecComputer, "process.stop"),
            // A dev server's every asset is a request: not recorded.
            Action::Port { .. } => policy(Access::Port, Audit::ReadOnly),
            Action::ShareCreate(_) => records(Scope::Ports, "share.create"),
            Action::Shares => reads(Scope::Ports),
            Action::ShareRevoke(_) => records(Scope::Ports, "share.revoke"),
            // A terminal runs commands: the exec scope of its backend, which
            // the agent checks once it knows it (as for an exec).
            Action::Terminal => policy(Access::Exec, Audit::Record("terminal.open")),
            Action::Terminals => reads(Scope::Read),
            Action::TerminalDelete(_) => policy(Access::Exec, Audit::Record("terminal.close")),
            // A ticket carries its minter's scopes to one terminal upgrade.
            Action::TicketCreate => policy(Access::Exec, Audit::Record("ticket.mint")),
            // Staged chunks change no file: only the apply is recorded.
            Action::Transfer(crate::transfer::Step::Apply) => records(Scope::Write, "push"),
            Action::Transfer(crate::transfer::Step::Chunks) => {
                policy(Access::Scope(Scope::Write), Audit::ReadOnly)
            }
            Action::Transfer(
                crate::transfer::Step::Manifest
                | crate::transfer::Step::Missing
                | crate::transfer::Step::Fetch,
            ) => reads(Scope::Read),
        }
    }

    /// Whether the Worker lets the request through without a bearer
    /// credential (the agent checks the hook's secret instead).
    pub fn public(&self) -> bool {
        self.policy().access == Access::HookSecret
    }
}

impl Access {
    /// Checks `caller` may be let in before the request's body is read (the
    /// Worker's check and the agent's first one): as [`Access::admits`],
    /// except that a command is let in with any credential for the agent,
    /// since the scope it needs is decided by where it runs (see
    /// [`require_exec`]).
    pub fn lets_in(self, caller: &Caller) -> Result<(), ApiError> {
        match (self, caller) {
            (Access::Exec, Caller::Admin | Caller::Token { .. }) => Ok(()),
            (access, caller) => access.admits(caller),
        }
    }

    /// Checks `caller` may perform some action needing this access (a
    /// command: in one backend or the other); what `tools/list` shows.
    pub fn admits(self, caller: &Caller) -> Result<(), ApiError> {
        match self {
            Access::Scope(scope) => caller.require(scope),
            Access::Exec => caller
                .require(Scope::ExecShell)
                .or_else(|_| caller.require(Scope::ExecComputer))
                .map_err(|refused| match caller {
                    Caller::Token { .. } => ApiError::Forbidden {
                        reason: format!(
                            "the token lacks both exec scopes: {:?} runs a command in the light \
                             shell, {:?} on the computer",
                            Scope::ExecShell.name(),
                            Scope::ExecComputer.name()
                        ),
                    },
                    _ => refused,
                }),
            // The hook's own secret is checked by the agent.
            Access::HookSecret => Ok(()),
            Access::Port => match caller {
                Caller::Share { .. } => Ok(()),
                other => other.require(Scope::Ports),
            },
            // A share link opens only its port.
            Access::Credential => match caller {
                Caller::Admin | Caller::Token { .. } => Ok(()),
                Caller::Share { .. } | Caller::Anonymous => Err(ApiError::Unauthorized),
            },
            Access::DeploymentAdmin => match caller {
                Caller::Admin => Ok(()),
                Caller::Token { .. } | Caller::Share { .. } => Err(ApiError::Forbidden {
                    reason: "only the deployment's admin token (API_TOKEN) creates agents, and \
                             this makes a new one: an agent token, even one holding \"admin\", \
                             acts on its own agent alone"
                        .into(),
                }),
                Caller::Anonymous => Err(ApiError::Unauthorized),
            },
        }
    }
}

impl Principal {
    /// Checks the caller may act on `agent` with `access`: the token is for
    /// that agent and holds the scope. A command is let in with any token
    /// for the agent; the agent checks the scope its backend needs once it
    /// knows it ([`Access::lets_in`]).
    pub fn admit(&self, agent: &str, access: Access) -> Result<(), ApiError> {
        match self {
            Principal::Token(claims) if claims.agent != agent => {
                return Err(ApiError::Forbidden {
                    reason: format!("the token is for agent {:?}", claims.agent),
                });
            }
            Principal::Share(claims) if claims.agent != agent || access != Access::Port => {
                return Err(ApiError::Forbidden {
                    reason: "a share link opens only its own port".into(),
                });
            }
            _ => {}
        }
        access.lets_in(&Caller::of(Some(self)))
    }
}

/// Checks `caller` may run a command in `destination`.
pub fn require_exec(caller: &Caller, destination: Backend) -> Result<(), ApiError> {
    caller.require(match destination {
        Backend::Shell => Scope::ExecShell,
        Backend::Computer => Scope::ExecComputer,
    })
}

/// Checks `caller` may set up the command in a schedule or hook body (its
/// `exec` object): binding a command to run later needs the scope running
/// it now would, or `schedule` would be a way round `exec:computer`.
pub fn require_exec_of(
    caller: &Caller,
    body: &[u8],
    files: &dyn stead_shell::Fs,
) -> Result<(), ApiError> {
    let exec = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|value| value.get("exec").cloned());
    if let Some(exec) = exec {
        let destination = destination(exec.to_string().as_bytes(), files).unwrap_or(Backend::Shell);
        require_exec(caller, destination)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::tests::claims;

    #[test]
    fn scopes_and_agents_are_enforced() {
        let reader = Principal::Token(claims(&[Scope::Read], 100));
        reader.admit("alice", Access::Scope(Scope::Read)).unwrap();
        for scope in [
            Scope::Write,
            Scope::ExecShell,
            Scope::Schedule,
            Scope::Admin,
        ] {
            assert!(matches!(
                reader.admit("alice", Access::Scope(scope)),
                Err(ApiError::Forbidden { .. })
            ));
        }
        // A command's scope depends on where it runs, which the agent
        // decides from the body: the door lets the token in, and the agent
        // refuses it naming the scope (see `require_exec`).
        reader.admit("alice", Access::Exec).unwrap();
        let refused = Access::Exec
            .admits(&Caller::of(Some(&reader)))
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("exec:shell") && refused.contains("exec:computer"),
            "{refused}"
        );
        assert!(matches!(
            reader.admit("bob", Access::Scope(Scope::Read)),
            Err(ApiError::Forbidden { .. })
        ));
        Principal::Admin
            .admit("bob", Access::Scope(Scope::Admin))
            .unwrap();
        assert_eq!(Caller::of(Some(&reader)).actor(), "token:t1");
    }

    #[test]
    fn either_exec_scope_lets_a_command_in_and_the_backend_decides() {
        // A token with only exec:computer may run on the computer (it was
        // refused as lacking exec:shell), and not in the light shell.
        let computer_only = Caller::Token {
            id: "c".into(),
            scopes: vec![Scope::ExecComputer],
            expires: i64::MAX,
        };
        Access::Exec.admits(&computer_only).unwrap();
        require_exec(&computer_only, Backend::Computer).unwrap();
        assert!(matches!(
            require_exec(&computer_only, Backend::Shell),
            Err(ApiError::Forbidden { .. })
        ));
        let body = br#"{"exec":{"command":"python3 -V","backend":"computer"}}"#;
        let db = stead_sql::SqliteDb::memory().unwrap();
        stead_sql::migrate(&db, stead_sql::MIGRATIONS).unwrap();
        let files = stead_vfs::Vfs::new(&db, 0);
        require_exec_of(&computer_only, body, &files).unwrap();
        let shell_only = Caller::Token {
            id: "s".into(),
            scopes: vec![Scope::ExecShell],
            expires: i64::MAX,
        };
        assert!(require_exec_of(&shell_only, body, &files).is_err());
        require_exec_of(&shell_only, br#"{"exec":{"command":"ls"}}"#, &files).unwrap();
    }

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
            Action::TokenMinted,
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

    /// The README's scope table names exactly the tools that exist, each in
    /// the row its policy puts it.
    #[test]
    fn the_scope_table_in_the_readme_matches_the_routes() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
                .expect("the README");
        let table: Vec<&str> = readme
            .lines()
            .skip_while(|l| !l.starts_with("| scope | allows |"))
            .take_while(|l| l.starts_with('|'))
            .collect();
        let row = |scope: &str| -> Vec<String> {
            let line = table
                .iter()
                .find(|l| l.starts_with(&format!("| `{scope}` |")))
                .unwrap_or_else(|| panic!("no row for {scope} in the scope table"));
            let allows = line.split('|').nth(2).expect("an allows column");
            allows
                .split(',')
                .map(|name| name.trim().to_string())
                .collect()
        };
        let (read, write) = (row("read"), row("write"));
        for tool in Tool::ALL {
            let listed_in = if tool.mutates() { &write } else { &read };
            assert!(
                listed_in.iter().any(|name| name == tool.name()),
                "{} is missing from its row: {listed_in:?}",
                tool.name()
            );
        }
        // Words of the write row that are routes rather than tools.
        let routes = [
            ("upload", Action::Upload("/f".into())),
            ("checkpoints", Action::CheckpointCreate),
            ("restore", Action::Restore),
            ("undo", Action::Undo),
            (
                "transfer/chunks",
                Action::Transfer(crate::transfer::Step::Chunks),
            ),
            (
                "transfer/apply",
                Action::Transfer(crate::transfer::Step::Apply),
            ),
        ];
        for name in &write {
            let known = match Tool::from_name(name) {
                Some(tool) => tool.mutates(),
                None => routes.iter().any(|(word, action)| {
                    word == name && action.policy().access == Access::Scope(Scope::Write)
                }),
            };
            assert!(
                known,
                "the write row lists {name:?}, which is no writing route"
            );
        }
    }
}
