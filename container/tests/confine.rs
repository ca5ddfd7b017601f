//! Serving many containers from one program (the local-process mode): each
//! command runs in namespaces of its own whose `/` is its own workspace,
//! never another container's, the program's state, its environment or
//! the host's own files.

mod common;

use std::time::Duration;

use common::*;

#[test]
fn a_command_reaches_nothing_outside_its_own_workspace() {
    let computer = Computer::start_with(true);
    let a = computer.container("a");
    let b = computer.container("b");
    b.sync(false, &[file("/f", 0o644, b"b's own\n")], &[b"b's own\n"]);
    let state_dir = computer.state();
    let script = format!(
        "echo x > ../b/f; echo y > ../b/new; echo z > ../escape; \
         mkdir -p ../c && echo w > ../c/f; \
         touch /etc/planted /usr/planted /planted; \
         ls {state}/b/chunks && echo STATE-VISIBLE; \
         cat /proc/$PPID/environ /proc/*/environ; \
         grep -l -e '--liste[n]' /proc/*/cmdline && echo PROGRAM-VISIBLE; \
         cat /etc/shadow && echo SHADOW-READ; \
         sleep 600 & \
         echo mine > mine.txt",
        state = state_dir.display()
    );
    let (out, err, exit) = a.exec("escape", &script);
    assert_eq!(exit.code, Some(0), "{out}\n{err}");

    // The other container's workspace is exactly as it was...
    let entries = |dir: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(entries(&b.root), vec!["f"]);
    assert_eq!(std::fs::read(b.disk("/f")).unwrap(), b"b's own\n");
    // ...nothing landed beside the workspaces or in the host's system dirs...
    assert_eq!(entries(&computer.root()), vec!["a", "b"]);
    for planted in ["/etc/planted", "/usr/planted", "/planted", "/escape", "/c"] {
        assert!(!std::path::Path::new(planted).exists(), "{planted}");
    }
    // ...and what it wrote at `/`, or at `..` of `/` (which is `/`, as on
    // any Linux), is its own workspace's.
    assert_eq!(std::fs::read(a.disk("/mine.txt")).unwrap(), b"mine\n");
    assert_eq!(std::fs::read(a.disk("/escape")).unwrap(), b"z\n");
    let changed: Vec<&str> = exit.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(changed, ["/c", "/c/f", "/escape", "/mine.txt", "/planted"]);
    // ...and it read no secret and saw neither the program nor its state.
    for (name, text) in [("stdout", &out), ("stderr", &err)] {
        assert!(!text.contains(SECRET), "the secret leaked to {name}");
    }
    for marker in ["STATE-VISIBLE", "PROGRAM-VISIBLE", "SHADOW-READ"] {
        assert!(!out.contains(marker), "{marker}: {out}");
    }
    // The background child ended with the command's namespaces.
    let sleeping = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.unwrap().path().join("cmdline")).ok())
        .any(|cmdline| cmdline == b"sleep\x00600\x00");
    assert!(!sleeping, "sleep 600 outlived the command");
}

#[test]
fn confined_commands_have_the_usual_tools_and_environment() {
    let computer = Computer::start_with(true);
    let a = computer.container("a");
    let (out, err, exit) = a.exec(
        "tools",
        "echo \"$HOME|$WORKSPACE|$(pwd)\"; python3 -c 'print(6*7)'; \
         printf 'int main(void){return 3;}' > t.c && cc -o t t.c; ./t; echo rc=$?; \
         echo scratch > /tmp/s && cat /tmp/s; ls /proc | grep -c '^[0-9]'; \
         head -c 4 /dev/zero | od -An -tx1; echo in | cat /dev/stdin; readlink /proc/self/cwd; \
         echo out > /dev/stdout; echo fd > /dev/fd/1; echo err > /dev/stderr",
    );
    assert_eq!(exit.code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "/|/|/");
    assert_eq!(&lines[1..4], ["42", "rc=3", "scratch"]);
    // Only the command's own processes: init, bash, ls and grep at most.
    let processes: u32 = lines[4].parse().unwrap();
    assert!(processes <= 4, "{processes} processes visible");
    assert_eq!(&lines[5..], [" 00 00 00 00", "in", "/", "out", "fd"]);
    // The command's own streams (the program's pipes) open by name too.
    assert_eq!(err, "err\n");
}

#[test]
fn scratch_directories_are_the_containers_own_and_never_synced() {
    let computer = Computer::start_with(true);
    let a = computer.container("a");
    let b = computer.container("b");
    let (_, err, exit) = a.exec(
        "write",
        "echo a-tmp > /tmp/s; echo a-var > /var/tmp/s; echo a-lock > /run/lock/s; \
         touch /var/x /run/x /root/x /sys/x 2>/dev/null; echo done > /done",
    );
    assert_eq!(exit.code, Some(0), "{err}");
    // Not the workspace's: only /done comes back.
    let changed: Vec<&str> = exit.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(changed, ["/done"]);
    // The next command of the same container finds them, as in a container
    // that keeps running; another container does not.
    let read = "cat /tmp/s /var/tmp/s /run/lock/s 2>&1; ls -A /var /run /root /sys | tr '\\n' ' '";
    let (out, _, _) = a.exec("read", read);
    assert_eq!(
        out,
        "a-tmp\na-var\na-lock\n/root:  /run: lock  /sys:  /var: tmp "
    );
    let (out, _, _) = b.exec("read", "cat /tmp/s 2>&1 || echo none");
    assert!(out.ends_with("none\n"), "{out}");
    // Nor the host's.
    let host_tmp = std::fs::read_to_string("/tmp/s").unwrap_or_default();
    assert_ne!(host_tmp, "a-tmp\n");
}

#[test]
fn nothing_a_command_started_outlives_the_program() {
    let mut computer = Computer::start_with(true);
    let a = computer.container("a");
    let answer = a.post(
        "/v1/processes",
        &serde_json::json!({
            "id": "forever", "cwd": "/",
            "command": "trap '' TERM HUP; while true; do sleep 0.2; done",
        }),
    );
    answer.expect(201);
    let shell = running(&[
        "bash",
        "-lc",
        "trap '' TERM HUP; while true; do sleep 0.2; done",
    ]);

    // Killed outright: no shutdown of its own runs.
    computer.signal(libc::SIGKILL);
    computer.wait_exit(Duration::from_secs(5)).expect("killed");
    wait_until("the process to end", Duration::from_secs(5), || {
        process_gone(shell)
    });
}
