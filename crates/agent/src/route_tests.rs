//! Routing: every route, and the refusals of malformed ones.

use super::*;

impl PartialEq for ApiError {
    fn eq(&self, other: &Self) -> bool {
        self.code() == other.code() && self.to_string() == other.to_string()
    }
}

#[test]
fn routes() {
    let agent = |action| {
        Ok(Route::Agent {
            id: "a-1".into(),
            action,
        })
    };
    assert_eq!(route("GET", "/health"), Ok(Route::Health));
    assert_eq!(route("GET", "/tools"), Ok(Route::Tools));
    assert_eq!(route("GET", "/agents"), Ok(Route::Agents));
    assert_eq!(route("HEAD", "/agents"), Ok(Route::Agents));
    assert_eq!(route("PUT", "/agents/a-1"), agent(Action::Create));
    assert_eq!(
        route("POST", "/agents/a-1/read"),
        agent(Action::Tool(Tool::Read))
    );
    assert_eq!(
        route("GET", "/agents/a-1/files/dir/my%20file.txt"),
        agent(Action::Download("/dir/my file.txt".into()))
    );
    let code = |method, path| route(method, path).unwrap_err().code().to_string();
    assert_eq!(code("GET", "/agents/a-1/read"), "METHOD_NOT_ALLOWED");
    assert_eq!(code("POST", "/tools"), "METHOD_NOT_ALLOWED");
    assert_eq!(code("POST", "/agents"), "METHOD_NOT_ALLOWED");
    assert_eq!(code("POST", "/agents/a-1/nope"), "NO_ROUTE");
    assert_eq!(code("POST", "/health"), "METHOD_NOT_ALLOWED");
    assert_eq!(code("GET", "/elsewhere"), "NO_ROUTE");
    assert_eq!(code("PUT", "/agents/bad%20id"), "INVALID_AGENT_ID");
    let too_long = format!("/agents/{}", "a".repeat(65));
    assert_eq!(code("PUT", &too_long), "INVALID_AGENT_ID");
    assert_eq!(code("GET", "/agents/a/files/%zz"), "INVALID_REQUEST");
    assert_eq!(code("GET", "/agents/a/files/%+1"), "INVALID_REQUEST");
    assert_eq!(percent_decode("%41%2f").unwrap(), "A/");
    assert_eq!(code("GET", "/agents/a/files/%ff"), "INVALID_REQUEST");
}

#[test]
fn agent_ids() {
    assert!(valid_agent_id("Agent_1.x-y"));
    assert!(!valid_agent_id(""));
    assert!(!valid_agent_id("a/b"));
    assert!(!valid_agent_id("é"));
}

#[test]
fn job_schedule_hook_and_socket_routes() {
    let action = |method, path| match route(method, path) {
        Ok(Route::Agent { action, .. }) => Ok(action),
        Ok(other) => panic!("{other:?}"),
        Err(error) => Err(error.code().to_string()),
    };
    assert_eq!(action("GET", "/agents/a/jobs"), Ok(Action::Jobs));
    assert_eq!(action("GET", "/agents/a/jobs/7"), Ok(Action::Job(7)));
    assert_eq!(
        action("GET", "/agents/a/jobs/7/output"),
        Ok(Action::JobOutput(7))
    );
    assert_eq!(
        action("POST", "/agents/a/jobs/7/cancel"),
        Ok(Action::JobCancel(7))
    );
    assert_eq!(
        action("POST", "/agents/a/jobs/7"),
        Err("METHOD_NOT_ALLOWED".into())
    );
    assert_eq!(action("GET", "/agents/a/jobs/x"), Err("NO_ROUTE".into()));
    assert_eq!(
        action("GET", "/agents/a/jobs/7/nope"),
        Err("NO_ROUTE".into())
    );
    assert_eq!(action("GET", "/agents/a/schedules"), Ok(Action::Schedules));
    assert_eq!(
        action("POST", "/agents/a/schedules"),
        Ok(Action::ScheduleCreate)
    );
    assert_eq!(
        action("PUT", "/agents/a/schedules/night%20ly"),
        Ok(Action::SchedulePut("night ly".into()))
    );
    assert_eq!(
        action("DELETE", "/agents/a/schedules/n"),
        Ok(Action::ScheduleDelete("n".into()))
    );
    assert_eq!(
        action("DELETE", "/agents/a/schedules"),
        Err("METHOD_NOT_ALLOWED".into())
    );
    assert_eq!(
        action("POST", "/agents/a/hooks/gh"),
        Ok(Action::HookCall("gh".into()))
    );
    assert_eq!(
        action("PUT", "/agents/a/hooks/gh"),
        Ok(Action::HookPut("gh".into()))
    );
    assert_eq!(action("GET", "/agents/a/ws"), Ok(Action::Socket));
    assert_eq!(
        action("POST", "/agents/a/ws"),
        Err("METHOD_NOT_ALLOWED".into())
    );
}

#[test]
fn head_is_routed_as_get_and_tokens_are_revoked_beside_their_minting() {
    assert_eq!(
        route("HEAD", "/agents/a/files/x.bin"),
        route("GET", "/agents/a/files/x.bin")
    );
    assert_eq!(route("HEAD", "/health"), Ok(Route::Health));
    assert_eq!(route("POST", "/tokens/revoke"), Ok(Route::RevokeToken));
    let agent = |action| {
        Ok(Route::Agent {
            id: "a".into(),
            action,
        })
    };
    assert_eq!(route("GET", "/agents/a/tokens"), agent(Action::Tokens));
    assert_eq!(
        route("POST", "/agents/a/tokens/minted"),
        agent(Action::TokenMinted)
    );
    let code = |method, path| route(method, path).unwrap_err().code().to_string();
    assert_eq!(code("GET", "/tokens/revoke"), "METHOD_NOT_ALLOWED");
    assert_eq!(code("HEAD", "/agents/a/read"), "METHOD_NOT_ALLOWED");
}

#[test]
fn percent_encoding_round_trips() {
    for text in ["plain-name_1.x~", "a b/c%d", "é?&="] {
        assert_eq!(percent_decode(&percent_encode(text)).unwrap(), text);
    }
    assert_eq!(percent_encode("a b/c"), "a%20b%2Fc");
}

#[test]
fn terminal_routes() {
    let action = |method, path| match route(method, path) {
        Ok(Route::Agent { action, .. }) => Ok(action),
        Ok(other) => panic!("{other:?}"),
        Err(error) => Err(error.code().to_string()),
    };
    assert_eq!(action("GET", "/agents/a/terminal"), Ok(Action::Terminal));
    assert_eq!(action("GET", "/agents/a/terminals"), Ok(Action::Terminals));
    assert_eq!(
        action("DELETE", "/agents/a/terminals/ab12"),
        Ok(Action::TerminalDelete("ab12".into()))
    );
    assert_eq!(
        action("POST", "/agents/a/tickets"),
        Ok(Action::TicketCreate)
    );
    for (method, path) in [
        ("POST", "/agents/a/terminal"),
        ("DELETE", "/agents/a/terminals"),
        ("GET", "/agents/a/terminals/ab12"),
        ("GET", "/agents/a/tickets"),
    ] {
        assert_eq!(
            action(method, path),
            Err("METHOD_NOT_ALLOWED".into()),
            "{method} {path}"
        );
    }
    assert_eq!(
        action("DELETE", "/agents/a/terminals/a/b"),
        Err("NO_ROUTE".into())
    );
    assert!(Action::TicketCreate.takes_json() && !Action::Terminal.takes_json());
    assert!(Action::Terminal.takes_ticket() && !Action::Terminals.takes_ticket());
}

#[test]
fn the_inspector_and_its_session_have_routes_of_their_own() {
    use crate::route::SessionStep;
    assert_eq!(route("GET", "/ui"), Ok(Route::Inspector));
    assert_eq!(route("GET", "/ui/"), Ok(Route::Inspector));
    assert_eq!(route("HEAD", "/ui/app.js"), Ok(Route::Inspector));
    assert_eq!(
        route("POST", "/ui/session"),
        Ok(Route::Session(SessionStep::SignIn))
    );
    assert_eq!(
        route("GET", "/ui/session"),
        Ok(Route::Session(SessionStep::Show))
    );
    assert_eq!(
        route("DELETE", "/ui/session"),
        Ok(Route::Session(SessionStep::SignOut))
    );
    for (method, path) in [("PUT", "/ui/session"), ("POST", "/ui/"), ("DELETE", "/ui")] {
        assert_eq!(
            route(method, path).unwrap_err().code(),
            "METHOD_NOT_ALLOWED",
            "{method} {path}"
        );
    }
    assert_eq!(route("GET", "/uix").unwrap_err().code(), "NO_ROUTE");
}

/// A 405 names the methods its path takes (sent as `Allow`), and each
/// routes there.
#[test]
fn a_wrong_method_is_told_the_methods_the_path_takes() {
    let allow = |method, path| match route(method, path) {
        Err(ApiError::MethodNotAllowed { allow, .. }) => allow,
        other => panic!("{method} {path}: {other:?}"),
    };
    assert_eq!(allow("POST", "/agents/a"), ["GET", "HEAD", "PUT", "DELETE"]);
    assert_eq!(allow("DELETE", "/agents"), ["GET", "HEAD"]);
    assert_eq!(allow("GET", "/agents/a/exec"), ["POST"]);
    assert_eq!(
        allow("PATCH", "/agents/a/files/x.txt"),
        allow("POST", "/agents/a/files/x.txt")
    );
    for (method, path) in [
        ("GET", "/agents/a/tokens/revoke"),
        ("PUT", "/agents/a/checkpoints"),
    ] {
        for allowed in allow(method, path) {
            assert!(route(allowed, path).is_ok(), "{allowed} {path}");
        }
        let error = route(method, path).unwrap_err();
        assert_eq!(error.headers()[0].0, "allow");
    }
}
