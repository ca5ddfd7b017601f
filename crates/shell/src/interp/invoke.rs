//! Running `bash` (or `sh`) inside the light shell: a new shell process, as
//! far as an isolate has processes. Its command line is read as bash reads
//! it (`-c text [name [args]]`, a script file, or commands from standard
//! input; the single-letter options of `set`, `-o name`, `-O shopt`, `-i`,
//! `--norc`, `--rcfile file`, `--posix`, `--help`, `--version`; an unknown
//! long option is a usage error with status 2).
//!
//! An interactive shell (`-i`) first sources its rc file (`--rcfile`, else
//! `~/.bashrc` when present, none with `--norc`), records each command line
//! it reads in the history (read from and saved to `$HISTFILE`), runs
//! `$PROMPT_COMMAND` before each prompt, and survives errors that end a
//! non-interactive shell (a syntax error, `set -u`, `${x?}`): the line is
//! abandoned and the next one read. Prompts are not printed: nobody types
//! at them.

use super::options::Table;
use super::{parse, vars, Flow, Opts, Shell, SourceKind, R};
use crate::limits::Abort;

/// The program a script file's `#!` line names, when it is not bash or sh:
/// the light shell runs a bash or sh script itself, as it runs a file with
/// no `#!` line (bash runs such a file as a script). `#!/usr/bin/env
/// python3` names `python3`, `#!/usr/bin/perl -w` names `/usr/bin/perl`.
pub(crate) fn foreign_interpreter(text: &[u8]) -> Option<String> {
    let line = text.split(|b| *b == b'\n').next()?.strip_prefix(b"#!")?;
    let line = crate::bytes::decode(line);
    let mut words = line.split_whitespace();
    let program = words.next()?;
    let base = |path: &str| path.rsplit('/').next().unwrap_or(path).to_string();
    let named = if base(program) == "env" {
        words
            .find(|w| !w.starts_with('-') && !w.contains('='))?
            .to_string()
    } else {
        program.to_string()
    };
    (!matches!(base(&named).as_str(), "bash" | "sh")).then_some(named)
}

/// What a `bash` command line asks for.
#[derive(Debug, Default)]
pub(crate) struct Invocation {
    /// `-c`'s text.
    pub command: Option<String>,
    /// Positional words: after `-c text`, `$0` then the arguments; else the
    /// script file then its arguments.
    pub words: Vec<String>,
    /// `set` flags, in order, with on/off.
    flags: Vec<(char, bool)>,
    /// `-o name` / `+o name`.
    set_options: Vec<(String, bool)>,
    /// `-O name` / `+O name`.
    shopts: Vec<(String, bool)>,
    interactive: bool,
    norc: bool,
    rcfile: Option<String>,
    posix: bool,
    help: bool,
    version: bool,
}

/// Why a command line is refused: bash's message for it.
pub(crate) struct BadInvocation(String);

pub(crate) fn parse_invocation(argv: &[String]) -> Result<Invocation, BadInvocation> {
    let mut inv = Invocation::default();
    let mut i = 1;
    let mut takes_command = false;
    while let Some(a) = argv.get(i) {
        i += 1;
        if a == "--" || a == "-" {
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            match long {
                "norc" => inv.norc = true,
                "noprofile" | "noediting" | "login" | "debug" | "restricted" | "verbose" => {
                    if long == "verbose" {
                        inv.flags.push(('v', true));
                    }
                }
                "rcfile" | "init-file" => match argv.get(i) {
                    Some(f) => {
                        inv.rcfile = Some(f.clone());
                        i += 1;
                    }
                    None => {
                        return Err(BadInvocation(format!(
                            "--{long}: option requires an argument"
                        )))
                    }
                },
                "posix" => inv.posix = true,
                "help" => inv.help = true,
                "version" => inv.version = true,
                _ => return Err(BadInvocation(format!("{a}: invalid option"))),
            }
            continue;
        }
        let (on, letters) = match (a.strip_prefix('-'), a.strip_prefix('+')) {
            (Some(l), _) if !l.is_empty() => (true, l),
            (_, Some(l)) if !l.is_empty() => (false, l),
            _ => {
                i -= 1;
                break;
            }
        };
        for c in letters.chars() {
            match c {
                'c' => takes_command = true,
                'i' => inv.interactive = on,
                's' | 'l' | 'r' | 'D' => {}
                'o' | 'O' => {
                    let Some(name) = argv.get(i) else {
                        return Err(BadInvocation(format!("-{c}: option requires an argument")));
                    };
                    i += 1;
                    let list = if c == 'o' {
                        &mut inv.set_options
                    } else {
                        &mut inv.shopts
                    };
                    list.push((name.clone(), on));
                }
                _ => inv.flags.push((c, on)),
            }
        }
    }
    let rest = argv[i.min(argv.len())..].to_vec();
    if takes_command {
        let Some((text, words)) = rest.split_first() else {
            return Err(BadInvocation("-c: option requires an argument".into()));
        };
        inv.command = Some(text.clone());
        inv.words = words.to_vec();
    } else {
        inv.words = rest;
    }
    Ok(inv)
}

const USAGE: &str = "Usage:\tbash [GNU long option] [option] ...\n\
\tbash [GNU long option] [option] script-file ...\n\
GNU long options:\n\
\t--help\n\t--init-file\n\t--login\n\t--noediting\n\t--noprofile\n\t--norc\n\t--posix\n\
\t--rcfile\n\t--restricted\n\t--verbose\n\t--version\n\
Shell options:\n\
\t-ilrsD or -c command or -O shopt_option\t\t(invocation only)\n\
\t-abefhkmnptuvxBCEHPT or -o option\n";

impl Shell<'_> {
    /// `bash ...` / `sh ...`.
    pub(crate) fn run_shell_command(&mut self, argv: &[String]) -> R<i32> {
        let inv = match parse_invocation(argv) {
            Ok(inv) => inv,
            Err(BadInvocation(message)) => {
                self.err_line(&message)?;
                self.write_fd(2, USAGE.as_bytes())?;
                return Ok(2);
            }
        };
        if inv.help {
            self.out(USAGE)?;
            return Ok(0);
        }
        if inv.version {
            let version = self.get_scalar("BASH_VERSION").unwrap_or_default();
            self.out(&format!(
                "GNU bash, version {version} (x86_64-pc-linux-gnu)\n\
                 The light shell of stead, an interpreter of bash in Rust.\n"
            ))?;
            return Ok(0);
        }
        let (text, arg0, args, label) = match (&inv.command, inv.words.split_first()) {
            (Some(text), words) => {
                let (arg0, args) = match words {
                    Some((arg0, args)) => (arg0.clone(), args.to_vec()),
                    None => ("bash".to_string(), Vec::new()),
                };
                (text.clone(), arg0.clone(), args, arg0)
            }
            (None, Some((file, args))) => {
                let Some(text) = self.read_script(file)? else {
                    return Ok(127);
                };
                match text {
                    Ok(text) => (text, file.clone(), args.to_vec(), file.clone()),
                    Err(status) => return Ok(status),
                }
            }
            (None, None) => {
                let input = self.take_stdin();
                let text = crate::bytes::decode(&input);
                (text, "bash".to_string(), Vec::new(), "bash".to_string())
            }
        };
        let reads_stdin = inv.command.is_none() && inv.words.is_empty();
        // The new shell runs no function and sources no file.
        let outer = (
            std::mem::replace(&mut self.in_function, 0),
            std::mem::replace(&mut self.sourcing, 0),
        );
        let r = self.subshell(move |sh| {
            sh.become_new_shell(&inv, arg0, args)?;
            if !inv.interactive {
                return sh.run_source(&text, Some(&label), SourceKind::Script);
            }
            sh.st.interactive = true;
            sh.start_history()?;
            if !inv.norc {
                sh.source_rcfile(inv.rcfile.as_deref())?;
            }
            let r = if reads_stdin {
                sh.run_interactive(&text)
            } else {
                sh.run_source(&text, Some(&label), SourceKind::Eval)
            };
            sh.save_history()?;
            r
        });
        (self.in_function, self.sourcing) = outer;
        r
    }

    /// A script file's text, or the status of why it cannot be read
    /// (`None`: not found, 127).
    fn read_script(&mut self, file: &str) -> R<Option<Result<String, i32>>> {
        let path = super::VPath::parse_from(file, &self.st.cwd);
        match path.and_then(|p| self.fs.read(&p)) {
            Ok(bytes) => {
                let first_line = bytes.split(|b| *b == b'\n').next().unwrap_or(&[]);
                if first_line.contains(&0) {
                    self.err_line(&format!("{file}: cannot execute binary file"))?;
                    return Ok(Some(Err(126)));
                }
                Ok(Some(Ok(crate::bytes::decode(&bytes))))
            }
            Err(e) => {
                self.err_line(&format!("{file}: {}", crate::utils::strerror(&e)))?;
                Ok(None)
            }
        }
    }

    /// The state of a new bash process: only exported variables survive
    /// (`SHELLOPTS`, when exported, carries `set -o` options over, as bash
    /// reads it at startup), no functions; the command line's options.
    fn become_new_shell(&mut self, inv: &Invocation, arg0: String, args: Vec<String>) -> R<()> {
        let inherited = self
            .st
            .vars
            .get("SHELLOPTS")
            .filter(|v| v.attrs & vars::EXPORT != 0)
            .and_then(|v| v.scalar());
        self.st.vars.retain(|_, v| v.attrs & vars::EXPORT != 0);
        self.st.funcs.clear();
        self.st.func_sources.clear();
        // A script file's code is `main`'s, called from line 0.
        let file = inv.words.first().filter(|_| inv.command.is_none());
        self.st.sources = file.cloned().into_iter().collect();
        self.st.func_names = file.map(|_| "main".to_string()).into_iter().collect();
        self.st.call_lines = file.map(|_| 0).into_iter().collect();
        self.st.opts = Opts::default();
        self.st.history = Default::default();
        self.st.interactive = false;
        self.st.command_text = inv.command.is_some();
        if let Some(list) = inherited {
            for name in list.split(':') {
                self.st.opts.set(name, Table::Set, true);
            }
        }
        for &(c, on) in &inv.flags {
            self.st.opts.set_flag(c, on);
        }
        for (name, on) in &inv.set_options {
            self.st.opts.set(name, Table::Set, *on);
        }
        for (name, on) in &inv.shopts {
            self.st.opts.set(name, Table::Shopt, *on);
        }
        if inv.posix {
            self.st.opts.set("posix", Table::Set, true);
        }
        self.st.arg0 = arg0;
        self.st.positional = args;
        self.line_base = 0;
        Ok(())
    }

    /// Sources `rcfile`, or `~/.bashrc` when it exists.
    fn source_rcfile(&mut self, rcfile: Option<&str>) -> R<()> {
        let file = match rcfile {
            Some(f) => f.to_string(),
            None => {
                let home = self.get_scalar("HOME").unwrap_or_default();
                let default = format!("{home}/.bashrc");
                let exists = super::VPath::parse_from(&default, &self.st.cwd)
                    .is_ok_and(|p| self.fs.stat(&p, true).is_ok());
                if !exists {
                    return Ok(());
                }
                default
            }
        };
        if file == "/dev/null" {
            return Ok(());
        }
        let argv = ["source".to_string(), file];
        match super::lookup_builtin("source").map(|b| b(self, &argv)) {
            Some(Err(Flow::Abort(a))) => Err(Flow::Abort(a)),
            _ => Ok(()),
        }
    }

    /// Reads commands from `text` as an interactive shell reads its input:
    /// `$PROMPT_COMMAND` before each prompt (keeping `$?`), each command
    /// line recorded in the history, a syntax error reported and the line
    /// skipped. Ends at the end of the input (bash prints `exit` then) or
    /// at `exit`.
    fn run_interactive(&mut self, text: &str) -> R<i32> {
        let mut parser = parse::Parser::new(text);
        loop {
            self.prompt_command()?;
            if self.st.opts.expand_aliases {
                parser.set_aliases(self.st.aliases.clone());
            }
            parser.set_extglob(self.st.opts.extglob);
            let start = parser.position();
            let parsed = parser.next_command_line();
            let line = parser.text_since(start);
            let prog = match parsed {
                None => break,
                Some(Ok(prog)) => prog,
                Some(Err(error)) => {
                    self.record_history(&line);
                    self.err_line(&error.message)?;
                    self.status = 2;
                    parser.skip_line();
                    continue;
                }
            };
            self.record_history(&line);
            match self.run_program(&prog) {
                Ok(_) => {}
                Err(Flow::Error(s)) => self.status = s,
                Err(e) => return Err(e),
            }
        }
        self.write_fd(2, b"exit\n")?;
        Ok(self.status)
    }

    /// Runs `$PROMPT_COMMAND`; neither its status nor its errors reach the
    /// commands read.
    fn prompt_command(&mut self) -> R<()> {
        let Some(command) = self.get_scalar("PROMPT_COMMAND").filter(|c| !c.is_empty()) else {
            return Ok(());
        };
        let status = self.status;
        match self.run_source(&command, None, SourceKind::Eval) {
            Ok(_) | Err(Flow::Error(_)) => {}
            Err(Flow::Abort(Abort::Exit(s))) => return Err(Flow::Abort(Abort::Exit(s))),
            Err(e) => return Err(e),
        }
        self.status = status;
        Ok(())
    }
}
