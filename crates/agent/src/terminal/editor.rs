//! The light terminal's line editor: keys in, what the screen should show
//! out, the way readline behaves in bash's default (emacs) mode.
//!
//! It is plain data ([`Editor`], kept in storage between frames), fed the
//! raw bytes a terminal sends: printable text (UTF-8, possibly split across
//! frames), control keys and the escape sequences of cursor keys in both
//! cursor modes (`ESC [ A` and `ESC O A`). It answers with the bytes to
//! echo and stops at the first [`Event`] that needs the shell (a submitted
//! line, Ctrl-C, Ctrl-D, Tab), so that what the shell prints lands between
//! the echo of the keys before it and of the keys after it, even when a
//! paste sends them in one frame.
//!
//! Keys: left/right, Home/End (and Ctrl-A/Ctrl-E), Backspace, Delete,
//! Ctrl-U (kill to start), Ctrl-K (kill to end), Ctrl-W (kill the word
//! before the cursor), Ctrl-L (clear the screen), up/down (history, kept
//! per session, at most [`HISTORY`] lines, a line equal to the one before
//! not added again), Ctrl-C (cancel the line), Ctrl-D (end, on an empty
//! line; else delete under the cursor), Tab (complete the word before the
//! cursor). Columns are counted one per character.

use serde::{Deserialize, Serialize};

/// How many lines the history keeps (bash's default `HISTSIZE`).
pub const HISTORY: usize = 500;

/// How many bytes of lines the history keeps at most (it is stored with
/// the session): the oldest go first past it.
pub const HISTORY_BYTES: usize = 256 << 10;

/// The longest line the editor takes; keys past it ring the bell.
pub const MAX_LINE: usize = 64 << 10;

/// What the editor cannot do alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Enter: run this line.
    Submit(String),
    /// Ctrl-C: the line was cancelled.
    Interrupt,
    /// Ctrl-D on an empty line: end the session.
    End,
    /// Tab: complete `word` (the text from the last blank before the
    /// cursor), in command position or not; answer with
    /// [`Editor::complete`].
    Complete { word: String, command: bool },
}

/// One terminal's line being edited, its history and its prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Editor {
    /// The prompt the line follows (redrawn with it).
    prompt: String,
    line: Vec<char>,
    cursor: usize,
    history: Vec<String>,
    /// The history entry shown, while browsing it.
    browsing: Option<usize>,
    /// The line being edited when browsing began.
    draft: Vec<char>,
    /// Bytes of a key not yet complete (a split escape sequence or
    /// character).
    pending: Vec<u8>,
}

/// One decoded key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Char(char),
    Enter,
    Backspace,
    Delete,
    Left,
    Right,
    Up,
    Down,
    Home,
    End,
    Tab,
    Control(u8),
    /// A sequence the editor does not use.
    Ignored,
}

/// Decodes the key at the start of `bytes`: the key and its length, or
/// `None` when `bytes` holds only the start of one.
fn decode(bytes: &[u8]) -> Option<(Key, usize)> {
    let first = *bytes.first()?;
    let key = match first {
        b'\r' | b'\n' => Key::Enter,
        0x7f | 0x08 => Key::Backspace,
        b'\t' => Key::Tab,
        0x1b => return escape(bytes),
        0x00..=0x1f => Key::Control(first),
        _ => {
            let width = match first {
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf7 => 4,
                0x80..=0xff => return Some((Key::Ignored, 1)),
                _ => 1,
            };
            if bytes.len() < width {
                return None;
            }
            return Some(match std::str::from_utf8(&bytes[..width]) {
                Ok(text) => (Key::Char(text.chars().next()?), width),
                Err(_) => (Key::Ignored, 1),
            });
        }
    };
    Some((key, 1))
}

/// Decodes an escape sequence (`ESC [ ... final`, `ESC O x`, or `ESC x`).
fn escape(bytes: &[u8]) -> Option<(Key, usize)> {
    match bytes.get(1) {
        None => None,
        Some(b'O') => {
            let key = match *bytes.get(2)? {
                b'A' => Key::Up,
                b'B' => Key::Down,
                b'C' => Key::Right,
                b'D' => Key::Left,
                b'H' => Key::Home,
                b'F' => Key::End,
                _ => Key::Ignored,
            };
            Some((key, 3))
        }
        Some(b'[') => {
            // Parameters and intermediates, then one final byte 0x40-0x7e.
            let end = bytes[2..].iter().position(|b| (0x40..=0x7e).contains(b))? + 2;
            let key = match (&bytes[2..end], bytes[end]) {
                (b"", b'A') => Key::Up,
                (b"", b'B') => Key::Down,
                (b"", b'C') => Key::Right,
                (b"", b'D') => Key::Left,
                (b"", b'H') | (b"1" | b"7", b'~') => Key::Home,
                (b"", b'F') | (b"4" | b"8", b'~') => Key::End,
                (b"3", b'~') => Key::Delete,
                _ => Key::Ignored,
            };
            Some((key, end + 1))
        }
        Some(_) => Some((Key::Ignored, 2)),
    }
}

/// Bytes that move the cursor `n` columns left.
fn left(n: usize) -> Vec<u8> {
    match n {
        0 => Vec::new(),
        n => format!("\x1b[{n}D").into_bytes(),
    }
}

const BELL: &[u8] = b"\x07";

impl Editor {
    /// Starts a new line after `prompt`, and the bytes that show it.
    pub fn begin(&mut self, prompt: &str) -> Vec<u8> {
        self.prompt = prompt.to_string();
        self.line.clear();
        self.cursor = 0;
        self.browsing = None;
        self.draft.clear();
        prompt.as_bytes().to_vec()
    }

    /// The line as it stands.
    pub fn line(&self) -> String {
        self.line.iter().collect()
    }

    /// The history, oldest first.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Feeds `input`; appends what to show to `echo`. Returns the event
    /// that stopped it (if any) and how many bytes of `input` it took: the
    /// rest is fed again once the event is handled.
    pub fn feed(&mut self, input: &[u8], echo: &mut Vec<u8>) -> (Option<Event>, usize) {
        let carried = self.pending.len();
        let mut bytes = std::mem::take(&mut self.pending);
        bytes.extend_from_slice(input);
        let mut at = 0;
        while at < bytes.len() {
            let Some((key, len)) = decode(&bytes[at..]) else {
                // The start of a key: kept for the next frame.
                self.pending = bytes[at..].to_vec();
                return (None, input.len());
            };
            at += len;
            if let Some(event) = self.key(key, echo) {
                return (Some(event), at.saturating_sub(carried));
            }
        }
        (None, input.len())
    }

    /// Handles one key.
    fn key(&mut self, key: Key, echo: &mut Vec<u8>) -> Option<Event> {
        match key {
            Key::Char(c) => self.insert(&[c], echo),
            Key::Enter => {
                echo.extend_from_slice(b"\r\n");
                let line = self.line();
                if !line.trim().is_empty() && self.history.last() != Some(&line) {
                    self.history.push(line.clone());
                    let mut bytes: usize = self.history.iter().map(String::len).sum();
                    while self.history.len() > HISTORY || bytes > HISTORY_BYTES {
                        bytes -= self.history.remove(0).len();
                    }
                }
                self.line.clear();
                self.cursor = 0;
                self.browsing = None;
                return Some(Event::Submit(line));
            }
            Key::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                self.line.remove(self.cursor);
                echo.extend_from_slice(b"\x08");
                self.redraw_tail(echo, 1);
            }
            Key::Delete | Key::Control(0x04) if self.cursor < self.line.len() => {
                self.line.remove(self.cursor);
                self.redraw_tail(echo, 1);
            }
            Key::Control(0x04) if self.line.is_empty() => return Some(Event::End),
            Key::Left if self.cursor > 0 => {
                self.cursor -= 1;
                echo.extend(left(1));
            }
            Key::Right if self.cursor < self.line.len() => {
                echo.extend(self.line[self.cursor].to_string().as_bytes());
                self.cursor += 1;
            }
            Key::Home | Key::Control(0x01) => {
                echo.extend(left(self.cursor));
                self.cursor = 0;
            }
            Key::End | Key::Control(0x05) => {
                let rest: String = self.line[self.cursor..].iter().collect();
                echo.extend(rest.as_bytes());
                self.cursor = self.line.len();
            }
            Key::Control(0x15) => {
                let killed = self.cursor;
                self.line.drain(..killed);
                echo.extend(left(killed));
                self.cursor = 0;
                self.redraw_tail(echo, killed);
            }
            Key::Control(0x0b) => {
                let killed = self.line.len() - self.cursor;
                self.line.truncate(self.cursor);
                self.redraw_tail(echo, killed);
            }
            Key::Control(0x17) => {
                // Blanks before the cursor, then the word before them.
                let mut start = self.cursor;
                while start > 0 && self.line[start - 1].is_whitespace() {
                    start -= 1;
                }
                while start > 0 && !self.line[start - 1].is_whitespace() {
                    start -= 1;
                }
                let killed = self.cursor - start;
                self.line.drain(start..self.cursor);
                echo.extend(left(killed));
                self.cursor = start;
                self.redraw_tail(echo, killed);
            }
            Key::Control(0x0c) => {
                echo.extend_from_slice(b"\x1b[H\x1b[2J");
                self.redraw(echo);
            }
            Key::Control(0x03) => {
                echo.extend_from_slice(b"^C\r\n");
                self.line.clear();
                self.cursor = 0;
                self.browsing = None;
                return Some(Event::Interrupt);
            }
            Key::Up => self.browse(-1, echo),
            Key::Down => self.browse(1, echo),
            Key::Tab => {
                let start = self.word_start();
                let before: String = self.line[..start].iter().collect();
                let before = before.trim_end();
                return Some(Event::Complete {
                    word: self.line[start..self.cursor].iter().collect(),
                    command: before.is_empty()
                        || before.ends_with(['|', ';', '&', '(', '`'])
                        || before.ends_with("$("),
                });
            }
            Key::Backspace
            | Key::Delete
            | Key::Left
            | Key::Right
            | Key::Control(_)
            | Key::Ignored => {}
        }
        None
    }

    /// Where the word before the cursor starts.
    fn word_start(&self) -> usize {
        let mut start = self.cursor;
        while start > 0 && !self.line[start - 1].is_whitespace() {
            start -= 1;
        }
        start
    }

    /// Inserts `text` at the cursor.
    fn insert(&mut self, text: &[char], echo: &mut Vec<u8>) {
        if self.line.len() + text.len() > MAX_LINE {
            echo.extend_from_slice(BELL);
            return;
        }
        let tail = self.line.split_off(self.cursor);
        self.line.extend_from_slice(text);
        self.line.extend(tail);
        let shown: String = text.iter().collect();
        echo.extend(shown.as_bytes());
        self.cursor += text.len();
        self.redraw_tail(echo, 0);
    }

    /// Shows the line from the cursor on again (`erased` more columns were
    /// there before, now blank) and puts the cursor back.
    fn redraw_tail(&self, echo: &mut Vec<u8>, erased: usize) {
        let tail: String = self.line[self.cursor..].iter().collect();
        if tail.is_empty() && erased == 0 {
            return;
        }
        echo.extend(tail.as_bytes());
        echo.extend_from_slice(b"\x1b[K");
        echo.extend(left(self.line.len() - self.cursor));
    }

    /// Shows the prompt and the whole line again on the current row.
    fn redraw(&self, echo: &mut Vec<u8>) {
        echo.extend_from_slice(b"\r");
        echo.extend(self.prompt.as_bytes());
        echo.extend(self.line().as_bytes());
        echo.extend_from_slice(b"\x1b[K");
        echo.extend(left(self.line.len() - self.cursor));
    }

    /// Moves through the history (`step` -1 older, 1 newer).
    fn browse(&mut self, step: isize, echo: &mut Vec<u8>) {
        let next = match (self.browsing, step < 0) {
            (None, true) if !self.history.is_empty() => Some(self.history.len() - 1),
            (None, _) => return,
            (Some(0), true) => return,
            (Some(at), true) => Some(at - 1),
            (Some(at), false) if at + 1 < self.history.len() => Some(at + 1),
            (Some(_), false) => None,
        };
        if self.browsing.is_none() {
            self.draft = self.line.clone();
        }
        self.browsing = next;
        self.line = match next {
            Some(at) => self.history[at].chars().collect(),
            None => std::mem::take(&mut self.draft),
        };
        self.cursor = self.line.len();
        self.redraw(echo);
    }

    /// Answers [`Event::Complete`] with the words `word` may become: one
    /// is put in place (a space after it, unless it is a directory ending
    /// in `/`); of many, their common start is, or if that adds nothing
    /// they are listed under the line; none rings the bell.
    pub fn complete(&mut self, word: &str, matches: &[String], echo: &mut Vec<u8>) {
        let typed = word.chars().count();
        match matches {
            [] => echo.extend_from_slice(BELL),
            [only] => {
                let mut rest: Vec<char> = only.chars().skip(typed).collect();
                if !only.ends_with('/') {
                    rest.push(' ');
                }
                self.insert(&rest, echo);
            }
            many => {
                let common = common_prefix(many);
                if common.chars().count() > typed {
                    let rest: Vec<char> = common.chars().skip(typed).collect();
                    self.insert(&rest, echo);
                } else {
                    echo.extend_from_slice(b"\r\n");
                    echo.extend(many.join("  ").as_bytes());
                    echo.extend_from_slice(b"\r\n");
                    self.redraw(echo);
                }
            }
        }
    }
}

/// The longest start all of `words` share.
fn common_prefix(words: &[String]) -> String {
    let Some(first) = words.first() else {
        return String::new();
    };
    let mut common: Vec<char> = first.chars().collect();
    for word in &words[1..] {
        let shared = common
            .iter()
            .zip(word.chars())
            .take_while(|(a, b)| **a == *b)
            .count();
        common.truncate(shared);
    }
    common.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `keys` and answers every event as a terminal would by
    /// ignoring it; returns the events and the echo.
    fn type_keys(editor: &mut Editor, keys: &[u8]) -> (Vec<Event>, Vec<u8>) {
        let mut echo = Vec::new();
        let mut events = Vec::new();
        let mut rest = keys;
        loop {
            let (event, took) = editor.feed(rest, &mut echo);
            rest = &rest[took..];
            match event {
                Some(event) => events.push(event),
                None => return (events, echo),
            }
        }
    }

    fn submitted(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Submit(line) => Some(line.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn typed_text_is_echoed_and_submitted() {
        let mut editor = Editor::default();
        assert_eq!(editor.begin("$ "), b"$ ");
        let (events, echo) = type_keys(&mut editor, b"echo hi\r");
        assert_eq!(events, vec![Event::Submit("echo hi".into())]);
        assert_eq!(echo, b"echo hi\r\n");
        assert_eq!(editor.line(), "");
    }

    #[test]
    fn cursor_keys_edit_in_the_middle() {
        let mut editor = Editor::default();
        editor.begin("$ ");
        // "ec o", left twice, insert h: "ech o"? Left from end of "ecX" etc.
        let (events, _) = type_keys(&mut editor, b"ecoo\x1b[D\x1b[Dh\x1b[C\x1b[3~\r");
        assert_eq!(submitted(&events), vec!["echo"]);
        // Application cursor mode, Home and End.
        let (events, _) = type_keys(&mut editor, b"bc\x1bOHa\x1bOFd\r");
        assert_eq!(submitted(&events), vec!["abcd"]);
        let (events, _) = type_keys(&mut editor, b"yz\x01x\x05!\r");
        assert_eq!(submitted(&events), vec!["xyz!"]);
        let (events, _) = type_keys(&mut editor, b"bc\x1b[1~a\x1b[4~d\r");
        assert_eq!(submitted(&events), vec!["abcd"]);
    }

    #[test]
    fn backspace_and_kills() {
        let mut editor = Editor::default();
        editor.begin("$ ");
        let (events, echo) = type_keys(&mut editor, b"lss\x7f -l\r");
        assert_eq!(submitted(&events), vec!["ls -l"]);
        assert!(echo.windows(1).any(|w| w == b"\x08"), "{echo:?}");
        // Ctrl-U kills to the start of the line, Ctrl-K to its end.
        let (events, _) = type_keys(&mut editor, b"rm -rf /\x15pwd\r");
        assert_eq!(submitted(&events), vec!["pwd"]);
        let (events, _) = type_keys(&mut editor, b"echo abc\x1b[D\x1b[D\x0b\r");
        assert_eq!(submitted(&events), vec!["echo a"]);
        // Ctrl-W kills the word before the cursor and the blanks after it.
        let (events, _) = type_keys(&mut editor, b"cat one two  \x17three\r");
        assert_eq!(submitted(&events), vec!["cat one three"]);
        // Backspace at the start, Delete at the end: nothing happens.
        let (events, echo) = type_keys(&mut editor, b"\x7f\x1b[3~x\r");
        assert_eq!(submitted(&events), vec!["x"]);
        assert_eq!(echo, b"x\r\n");
    }

    #[test]
    fn ctrl_c_cancels_and_ctrl_d_ends_only_an_empty_line() {
        let mut editor = Editor::default();
        editor.begin("$ ");
        let (events, echo) = type_keys(&mut editor, b"sleep 100\x03");
        assert_eq!(events, vec![Event::Interrupt]);
        assert!(echo.ends_with(b"^C\r\n"));
        assert_eq!(editor.line(), "");
        // Ctrl-D inside a line deletes under the cursor.
        let (events, _) = type_keys(&mut editor, b"abc\x1b[D\x04\r");
        assert_eq!(submitted(&events), vec!["ab"]);
        let (events, _) = type_keys(&mut editor, b"\x04");
        assert_eq!(events, vec![Event::End]);
    }

    #[test]
    fn history_goes_up_and_down_and_keeps_the_draft() {
        let mut editor = Editor::default();
        editor.begin("$ ");
        type_keys(&mut editor, b"one\rtwo\rtwo\r  \r");
        assert_eq!(editor.history(), ["one", "two"]);
        let (events, _) = type_keys(&mut editor, b"\x1b[A\x1b[A\x1b[A\r");
        assert_eq!(submitted(&events), vec!["one"]);
        // Up, down, down: back to the draft being typed.
        let (events, _) = type_keys(&mut editor, b"dra\x1b[A\x1b[B\x1b[Bft\r");
        assert_eq!(submitted(&events), vec!["draft"]);
        let (events, _) = type_keys(&mut editor, b"\x1bOA!\r");
        assert_eq!(submitted(&events), vec!["draft!"]);
        for n in 0..HISTORY + 10 {
            type_keys(&mut editor, format!("line {n}\r").as_bytes());
        }
        assert_eq!(editor.history().len(), HISTORY);
        assert_eq!(editor.history()[0], "line 10");
        // Long lines: the bytes bound it too.
        let long = "y".repeat(HISTORY_BYTES / 8);
        for n in 0..12 {
            type_keys(&mut editor, format!("{long}{n}\r").as_bytes());
        }
        let kept: usize = editor.history().iter().map(String::len).sum();
        assert!(kept <= HISTORY_BYTES, "{kept}");
        assert!(editor.history().last().unwrap().ends_with("11"));
    }

    #[test]
    fn keys_split_across_frames_are_joined() {
        let mut editor = Editor::default();
        editor.begin("$ ");
        let mut all = Vec::new();
        for frame in [&b"ab\x1b"[..], b"[", b"Dx\xc3", b"\xa9\r"] {
            let (events, _) = type_keys(&mut editor, frame);
            all.extend(events);
        }
        assert_eq!(submitted(&all), vec!["axéb"]);
    }

    #[test]
    fn a_paste_of_many_lines_stops_at_each() {
        let mut editor = Editor::default();
        editor.begin("$ ");
        let mut echo = Vec::new();
        let input = b"a\rb\rc";
        let (event, took) = editor.feed(input, &mut echo);
        assert_eq!((event, took), (Some(Event::Submit("a".into())), 2));
        let (event, took) = editor.feed(&input[2..], &mut echo);
        assert_eq!((event, took), (Some(Event::Submit("b".into())), 2));
        let (event, took) = editor.feed(&input[4..], &mut echo);
        assert_eq!((event, took), (None, 1));
        assert_eq!(editor.line(), "c");
    }

    #[test]
    fn tab_completes_one_match_a_common_start_or_lists() {
        let mut editor = Editor::default();
        editor.begin("$ ");
        let (events, _) = type_keys(&mut editor, b"ec\t");
        let word = match &events[..] {
            [Event::Complete {
                word,
                command: true,
            }] => word.clone(),
            other => panic!("{other:?}"),
        };
        let mut echo = Vec::new();
        editor.complete(&word, &["echo".into()], &mut echo);
        assert_eq!(editor.line(), "echo ");
        assert_eq!(echo, b"ho ");
        let (events, _) = type_keys(&mut editor, b"/et\t");
        assert_eq!(
            events,
            vec![Event::Complete {
                word: "/et".into(),
                command: false
            }]
        );
        editor.complete("/et", &["/etc/".into()], &mut Vec::new());
        assert_eq!(editor.line(), "echo /etc/");
        // Two matches sharing "/etc/ho": that much is put in.
        editor.complete(
            "/etc/",
            &["/etc/hostname".into(), "/etc/hosts".into()],
            &mut Vec::new(),
        );
        assert_eq!(editor.line(), "echo /etc/host");
        // Nothing more in common: listed, the line redrawn after them.
        let mut echo = Vec::new();
        editor.complete(
            "/etc/host",
            &["/etc/hostname".into(), "/etc/hosts".into()],
            &mut echo,
        );
        let shown = String::from_utf8(echo).unwrap();
        assert!(
            shown.contains("/etc/hostname  /etc/hosts\r\n\r$ echo /etc/host"),
            "{shown:?}"
        );
        let mut echo = Vec::new();
        editor.complete("/nope", &[], &mut echo);
        assert_eq!(echo, BELL);
        // After a pipe a command goes.
        let (events, _) = type_keys(&mut editor, b" | so\t");
        assert!(matches!(
            &events[..],
            [Event::Complete { command: true, .. }]
        ));
    }

    #[test]
    fn unknown_sequences_and_controls_are_ignored() {
        let mut editor = Editor::default();
        editor.begin("$ ");
        let (events, echo) = type_keys(&mut editor, b"a\x1b[1;5Cb\x1b[200~\x07\x1bxc\r");
        assert_eq!(submitted(&events), vec!["abc"]);
        assert_eq!(echo, b"abc\r\n");
    }

    #[test]
    fn the_editor_survives_storage() {
        let mut editor = Editor::default();
        editor.begin("/x$ ");
        type_keys(&mut editor, b"one\rhalf\x1b");
        let stored = serde_json::to_string(&editor).unwrap();
        let mut back: Editor = serde_json::from_str(&stored).unwrap();
        assert_eq!(back, editor);
        let (events, _) = type_keys(&mut back, b"[D!\x1b[A\r");
        assert_eq!(submitted(&events), vec!["one"]);
    }
}
