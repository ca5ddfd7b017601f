//! Serving many containers from one program (the local-process mode): each
//! command runs in namespaces of its own and sees only its own workspace,
//! never another container's, the program's state or its environment.

mod common;

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
    for planted in ["/etc/planted", "/usr/planted", "/planted"] {
        assert!(!std::path::Path::new(planted).exists(), "{planted}");
    }
    // ...the command's own work is there...
    assert_eq!(std::fs::read(a.disk("/mine.txt")).unwrap(), b"mine\n");
    assert_eq!(exit.changes, vec![file("/mine.txt", 0o644, b"mine\n")]);
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
         echo scratch > /tmp/s && cat /tmp/s; ls /proc | grep -c '^[0-9]'",
    );
    assert_eq!(exit.code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let home = a.root.display().to_string();
    assert_eq!(lines[0], format!("{home}|{home}|{home}"));
    assert_eq!(&lines[1..4], ["42", "rc=3", "scratch"]);
    // Only the command's own processes: init, bash, ls and grep at most.
    let processes: u32 = lines[4].parse().unwrap();
    assert!(processes <= 4, "{processes} processes visible");
}
