//! What the light shell reports about the system it runs on: `whoami` and
//! `hostname`. The workspace has one user, the agent (`agent`, uid 1000,
//! the owner every file shows), and the isolate has no network name of its
//! own, so `hostname` is `localhost` unless `$HOSTNAME` says otherwise.

use super::{Ctx, Table};
use crate::limits::Abort;

pub(crate) const UTILITIES: Table = &[("whoami", whoami), ("hostname", hostname)];

/// The agent's user name.
pub(crate) const USER: &str = "agent";

fn whoami(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    if let Some(extra) = argv.get(1) {
        ctx.error("whoami", &format!("extra operand ‘{extra}’"))?;
        return Ok(1);
    }
    ctx.stdout.write_str(&format!("{USER}\n"))?;
    Ok(0)
}

fn hostname(ctx: &mut Ctx<'_>, argv: &[String]) -> Result<i32, Abort> {
    if argv.len() > 1 {
        ctx.error("hostname", "you must be root to change the host name")?;
        return Ok(1);
    }
    let name = ctx
        .env
        .get("HOSTNAME")
        .cloned()
        .unwrap_or_else(|| "localhost".to_string());
    ctx.stdout.write_str(&format!("{name}\n"))?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::utils::testing::{db, run};

    #[test]
    fn whoami_is_the_agent_and_hostname_localhost() {
        assert_eq!(run(&db(), &["whoami"], "").stdout, "agent\n");
        assert_eq!(run(&db(), &["whoami", "x"], "").status, 1);
        assert_eq!(run(&db(), &["hostname"], "").stdout, "localhost\n");
    }
}
