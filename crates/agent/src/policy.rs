//! What each action needs and how it is recorded: the one table.
//!
//! [`Action::policy`] matches every action without a wildcard, so adding an
//! action does not compile until someone decides who may call it and what
//! the audit log calls it. The Worker reads the same table to refuse a
//! caller before the agent wakes; the agent reads it again in
//! `crate::dispatch` for every entry point (HTTP, WebSocket calls, hooks),
//! where the checks that need storage (revocation) and the request (the
//! exec's backend) happen.

use serde_json::Value;

use crate::auth::{Caller, Principal, Scope};
use crate::error::ApiError;
use crate::exec::destination;
use crate::outcome::Backend;
use crate::route::{Action, Tool};
use crate::transfer::Step;

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

/// What a request's body is, and who reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// None: a body sent along is not read.
    Nothing,
    /// A JSON object of at most [`crate::route::MAX_JSON_BODY`] bytes, read whole and
    /// parsed once before the action's handler runs: the audit target and
    /// the handler's typed decode both work on that one parse.
    Json,
    /// Bytes of at most [`crate::route::MAX_JSON_BODY`], not read as JSON (a hook call's
    /// payload, which its signature covers as sent); the handler reads them
    /// once it has checked what it can without them.
    Payload,
    /// A body the handler streams itself, with a bound of its own (an
    /// upload, a fork page, staged chunks), or forwards as it came (a
    /// port's).
    Stream,
}

/// Where an audit entry's target (the path, command or name acted on)
/// comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// Nothing worth naming.
    Nothing,
    /// The agent itself: the action changes it as a whole.
    Agent,
    /// A name or path the route holds.
    Named(&'a str),
    /// A job the route names.
    Job(i64),
    /// The first of these string fields the JSON body has.
    Body(&'static [&'static str]),
}

/// The fields a call's own target is read from: its path (or `from` for
/// moves and copies), its command, its name, its pattern.
const SUBJECT: &[&str] = &["path", "from", "command", "name", "pattern"];

/// The longest target recorded, in characters (a command is cut there).
const MAX_TARGET_CHARS: usize = 200;

impl Target<'_> {
    /// The target of a call to agent `agent` whose JSON body is `body`
    /// (`None`: it has none, or it did not parse).
    pub fn of(self, agent: &str, body: Option<&Value>) -> Option<String> {
        match self {
            Target::Nothing => None,
            Target::Agent => Some(agent.to_string()),
            Target::Named(name) => Some(name.to_string()),
            Target::Job(job) => Some(job.to_string()),
            Target::Body(fields) => {
                let body = body?;
                let text = fields
                    .iter()
                    .find_map(|field| body.get(*field).and_then(Value::as_str))?;
                Some(text.chars().take(MAX_TARGET_CHARS).collect())
            }
        }
    }
}

/// Access, audit, body and audit target of one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy<'a> {
    pub access: Access,
    pub audit: Audit,
    pub input: Input,
    pub target: Target<'a>,
    /// Whether the body may ask for a dry run (`"dry_run": true`), which
    /// the audit entry then notes, whether or not the call succeeds.
    pub dry_run: bool,
}

const fn policy(access: Access, audit: Audit) -> Policy<'static> {
    Policy {
        access,
        audit,
        input: Input::Nothing,
        target: Target::Nothing,
        dry_run: false,
    }
}

const fn reads(scope: Scope) -> Policy<'static> {
    policy(Access::Scope(scope), Audit::ReadOnly)
}

const fn records(scope: Scope, name: &'static str) -> Policy<'static> {
    policy(Access::Scope(scope), Audit::Record(name))
}

impl<'a> Policy<'a> {
    /// The same policy, for a request with a JSON body, audited (if it is)
    /// under the call's own subject ([`SUBJECT`]).
    const fn json(self) -> Policy<'a> {
        Policy {
            input: Input::Json,
            target: Target::Body(SUBJECT),
            ..self
        }
    }

    /// The same policy, with its body read as `input`.
    const fn input(self, input: Input) -> Policy<'a> {
        Policy { input, ..self }
    }

    /// The same policy, audited under `target`.
    const fn target<'b>(self, target: Target<'b>) -> Policy<'b> {
        Policy {
            access: self.access,
            audit: self.audit,
            input: self.input,
            target,
            dry_run: self.dry_run,
        }
    }
}

impl Tool {
    /// The policy of a file tool: reading tools need `read`, the others
    /// `write` and are audited under the tool's name and path, a dry run
    /// noted.
    pub fn policy(self) -> Policy<'static> {
        if self.mutates() {
            Policy {
                dry_run: true,
                ..records(Scope::Write, self.name()).json()
            }
        } else {
            reads(Scope::Read).json()
        }
    }
}

impl Action {
    /// Who may perform the action, what its body is, and how it is
    /// recorded.
    pub fn policy(&self) -> Policy<'_> {
        use Target::{Agent, Body, Job, Named};
        match self {
            Action::Info | Action::Ping | Action::Download(_) | Action::Socket => {
                reads(Scope::Read)
            }
            // Each tool call is authorized and audited as its HTTP twin.
            Action::Mcp => policy(Access::Credential, Audit::ReadOnly).input(Input::Json),
            Action::Jobs
            | Action::Job(_)
            | Action::JobOutput(_)
            | Action::Schedules
            | Action::Schedule(_)
            | Action::Hooks
            | Action::Hook(_)
            | Action::Settings => reads(Scope::Read),
            Action::Create => records(Scope::Admin, "agent.create").target(Agent),
            Action::Delete => records(Scope::Admin, "agent.delete").target(Agent),
            Action::Tool(tool) => tool.policy(),
            Action::Upload(path) => records(Scope::Write, "upload")
                .input(Input::Stream)
                .target(Named(path)),
            Action::Exec => policy(Access::Exec, Audit::Record("exec")).json(),
            Action::JobCancel(job) => {
                policy(Access::Exec, Audit::Record("job.cancel")).target(Job(*job))
            }
            Action::ScheduleCreate => records(Scope::Schedule, "schedule.put").json(),
            Action::SchedulePut(name) => records(Scope::Schedule, "schedule.put")
                .json()
                .target(Named(name)),
            Action::ScheduleDelete(name) => {
                records(Scope::Schedule, "schedule.delete").target(Named(name))
            }
            Action::HookPut(name) => records(Scope::Schedule, "hook.put")
                .json()
                .target(Named(name)),
            Action::HookDelete(name) => records(Scope::Schedule, "hook.delete").target(Named(name)),
            Action::HookCall(name) => policy(Access::HookSecret, Audit::Record("hook.call"))
                .input(Input::Payload)
                .target(Named(name)),
            Action::SettingsPut => records(Scope::Admin, "settings.put").json().target(Agent),
            Action::Audit => reads(Scope::Admin),
            Action::RevokeToken => records(Scope::Admin, "token.revoke")
                .json()
                .target(Body(&["id"])),
            Action::Tokens => reads(Scope::Admin),
            // Only the Worker, as the deployment's admin, mints tokens.
            Action::TokenMinted => policy(Access::DeploymentAdmin, Audit::Record("token.mint"))
                .json()
                .target(Body(&["id"])),
            Action::Checkpoints | Action::Checkpoint(_) => reads(Scope::Read),
            Action::Diff => reads(Scope::Read).json(),
            Action::CheckpointCreate => records(Scope::Write, "checkpoint.create").json(),
            Action::CheckpointDelete(key) => {
                records(Scope::Write, "checkpoint.delete").target(Named(key))
            }
            Action::Restore => records(Scope::Write, "restore").json(),
            Action::Undo => records(Scope::Write, "undo").json(),
            // A fork makes another agent, which only the deployment's admin
            // token may; its pages are sent as that admin.
            Action::Fork => policy(Access::DeploymentAdmin, Audit::Record("fork"))
                .json()
                .target(Body(&["to"])),
            Action::ForkImport => {
                policy(Access::DeploymentAdmin, Audit::Record("fork.import")).input(Input::Stream)
            }
            Action::Computer => reads(Scope::Read),
            Action::ComputerStop => records(Scope::ExecComputer, "computer.stop"),
            Action::EnvironmentSave => records(Scope::ExecComputer, "computer.environment.save"),
            Action::EnvironmentDrop => records(Scope::ExecComputer, "computer.environment.drop"),
            Action::Processes | Action::Process(_) | Action::ProcessOutput(_) => reads(Scope::Read),
            // A process is a command on the computer.
            Action::ProcessStart => records(Scope::ExecComputer, "process.start").json(),
            Action::ProcessSignal(id) => records(Scope::ExecComputer, "process.signal")
                .json()
                .target(Named(id)),
            Action::ProcessStop(id) => {
                records(Scope::ExecComputer, "process.stop").target(Named(id))
            }
            // A dev server's every asset is a request: not recorded.
            Action::Port { .. } => policy(Access::Port, Audit::ReadOnly).input(Input::Stream),
            Action::ShareCreate(_) => records(Scope::Ports, "share.create").json(),
            Action::Shares => reads(Scope::Ports),
            Action::ShareRevoke(_) => records(Scope::Ports, "share.revoke"),
            // A terminal runs commands: the exec scope of its backend, which
            // the agent checks once it knows it (as for an exec).
            Action::Terminal => policy(Access::Exec, Audit::Record("terminal.open")),
            Action::Terminals => reads(Scope::Read),
            Action::Verify => reads(Scope::Read),
            Action::TerminalDelete(id) => {
                policy(Access::Exec, Audit::Record("terminal.close")).target(Named(id))
            }
            // A ticket carries its minter's scopes to one terminal upgrade.
            Action::TicketCreate => policy(Access::Exec, Audit::Record("ticket.mint")).json(),
            // Staged chunks change no file: only the apply is recorded.
            Action::Transfer(Step::Apply) => records(Scope::Write, "push").json(),
            Action::Transfer(Step::Chunks) => {
                policy(Access::Scope(Scope::Write), Audit::ReadOnly).input(Input::Stream)
            }
            Action::Transfer(Step::Manifest | Step::Missing | Step::Fetch) => {
                reads(Scope::Read).json()
            }
        }
    }

    /// Whether the Worker lets the request through without a bearer
    /// credential (the agent checks the hook's secret instead).
    pub fn public(&self) -> bool {
        self.policy().access == Access::HookSecret
    }

    /// Whether the request body is bounded by [`crate::route::MAX_JSON_BODY`] (a JSON
    /// body, or a hook's payload): the Worker refuses a larger declared
    /// length before the body travels on.
    pub fn takes_json(&self) -> bool {
        match self.policy().input {
            Input::Json | Input::Payload => true,
            Input::Nothing | Input::Stream => false,
        }
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
    body: &Value,
    files: &dyn stead_shell::Fs,
) -> Result<(), ApiError> {
    if let Some(exec) = body.get("exec") {
        let destination = destination(exec, files).unwrap_or(Backend::Shell);
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
        let body = serde_json::json!({"exec":{"command":"python3 -V","backend":"computer"}});
        let db = stead_sql::SqliteDb::memory().unwrap();
        stead_sql::migrate(&db, stead_sql::MIGRATIONS).unwrap();
        let files = stead_vfs::Vfs::new(&db, 0);
        require_exec_of(&computer_only, &body, &files).unwrap();
        let shell_only = Caller::Token {
            id: "s".into(),
            scopes: vec![Scope::ExecShell],
            expires: i64::MAX,
        };
        assert!(require_exec_of(&shell_only, &body, &files).is_err());
        let shell = serde_json::json!({"exec":{"command":"ls"}});
        require_exec_of(&shell_only, &shell, &files).unwrap();
    }

    #[test]
    fn reading_tools_need_read_and_are_not_audited() {
        for tool in Tool::ALL {
            let policy = tool.policy();
            assert_eq!(policy.input, Input::Json, "{tool:?}");
            assert_eq!(policy.dry_run, tool.mutates(), "{tool:?}");
            if tool.mutates() {
                assert_eq!(
                    (policy.access, policy.audit),
                    (Access::Scope(Scope::Write), Audit::Record(tool.name())),
                    "{tool:?}"
                );
            } else {
                assert_eq!(
                    (policy.access, policy.audit),
                    (Access::Scope(Scope::Read), Audit::ReadOnly),
                    "{tool:?}"
                );
            }
        }
    }

    #[test]
    fn targets_come_from_the_route_or_the_body() {
        let target =
            |action: Action, body: Option<Value>| action.policy().target.of("ag", body.as_ref());
        assert_eq!(
            target(Action::Upload("/a".into()), None).as_deref(),
            Some("/a")
        );
        assert_eq!(target(Action::SettingsPut, None).as_deref(), Some("ag"));
        assert_eq!(target(Action::JobCancel(7), None).as_deref(), Some("7"));
        let edit = serde_json::json!({"path": "/x", "content": "y"});
        assert_eq!(
            target(Action::Tool(Tool::Write), Some(edit)).as_deref(),
            Some("/x")
        );
        let mv = serde_json::json!({"from": "/a", "to": "/b"});
        assert_eq!(
            target(Action::Tool(Tool::Mv), Some(mv)).as_deref(),
            Some("/a")
        );
        let fork = serde_json::json!({"to": "b", "checkpoint": "c"});
        assert_eq!(target(Action::Fork, Some(fork)).as_deref(), Some("b"));
        let long = serde_json::json!({"command": "x".repeat(500)});
        let cut = target(Action::Exec, Some(long)).unwrap();
        assert_eq!(cut.chars().count(), MAX_TARGET_CHARS);
        // The body names nothing the table reads, or there is none.
        assert_eq!(
            target(Action::Exec, Some(serde_json::json!("not an object"))),
            None
        );
        assert_eq!(target(Action::Tool(Tool::Write), None), None);
        assert_eq!(target(Action::ComputerStop, None), None);
    }

    #[test]
    fn json_bodies_are_bounded_and_streamed_ones_are_not() {
        assert!(Action::TicketCreate.takes_json() && !Action::Terminal.takes_json());
        assert!(
            Action::HookCall("h".into()).takes_json(),
            "a hook's payload"
        );
        assert_eq!(Action::HookCall("h".into()).policy().input, Input::Payload);
        for action in [
            Action::Upload("/a".into()),
            Action::ForkImport,
            Action::Transfer(Step::Chunks),
        ] {
            assert_eq!(action.policy().input, Input::Stream, "{action:?}");
            assert!(!action.takes_json(), "{action:?}");
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
