//! Output logs: what a command or process wrote, kept on disk by byte
//! offset until the workspace side has it.
//!
//! The Worker side cannot hold a connection open for as long as a command
//! may run (a Durable Object's alarm has a wall-time limit, and a process
//! runs for days), so output is never only in flight: every piece goes to
//! a log first, and whoever wants it reads the log from an offset, either
//! following it as it grows (the exec stream) or taking what is there (a
//! reattach after an alarm ended, a poll of a process's output). The
//! offset is the byte offset in the command's output (standard output and
//! error in one offset space, as the agent's job log counts), so an agent
//! that has the first `n` bytes asks from `n` and gets each byte once.
//!
//! The log is a run of segment files (at most [`SEGMENT_BYTES`] each, named
//! by the offset they start at): a read from an offset opens the segment
//! that holds it, and asking from an offset tells the log that everything
//! before it has arrived, so whole segments below it are deleted. A log
//! nobody reads keeps at most [`MAX_KEPT`] bytes; past that its oldest
//! segments go and a reader from below the first kept byte is told how
//! many bytes it missed ([`ExecEvent::Dropped`]). A command's log ends
//! with its last event (`exit` or `error`).
//!
//! Records in a segment: a tag byte (1 stdout, 2 stderr, 3 the last event
//! as JSON), a little-endian `u32` length, the bytes.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use stead_sync::ExecEvent;
use tokio::sync::watch;

/// A segment is closed once it holds this many bytes.
const SEGMENT_BYTES: u64 = 1 << 20;
/// Bytes a log keeps for a reader that does not come (its oldest segments
/// go past this).
pub const MAX_KEPT: u64 = 64 << 20;

const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const LAST: u8 = 3;

/// Which output stream a piece came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// One log, in its own directory (removed when the last handle goes).
pub struct OutputLog {
    dir: PathBuf,
    inner: Mutex<Inner>,
    /// Bumped at every append, so followers wake.
    grown: watch::Sender<u64>,
}

struct Inner {
    /// Oldest first; the last one is written to.
    segments: VecDeque<Segment>,
    writer: Option<File>,
    /// Offset one past the last output byte.
    end: u64,
    /// Whether the last event is in.
    finished: bool,
    /// Where the previous read stopped, so the next one from there seeks
    /// straight to it: (offset, segment start, position in its file).
    cursor: Option<(u64, u64, u64)>,
}

struct Segment {
    /// The output offset of its first byte.
    start: u64,
    path: PathBuf,
    len: u64,
}

/// What a read found.
#[derive(Debug, Default)]
pub struct Batch {
    pub events: Vec<ExecEvent>,
    /// The offset to read on from.
    pub next: u64,
    /// The last event is among `events`: the log is complete.
    pub finished: bool,
}

/// A read from an offset the log never reached.
#[derive(Debug, thiserror::Error)]
#[error("offset {from} is beyond the end of the output ({end})")]
pub struct BeyondEnd {
    pub from: u64,
    pub end: u64,
}

impl OutputLog {
    /// A new, empty log in `dir` (created; anything there is replaced).
    pub fn create(dir: PathBuf) -> io::Result<OutputLog> {
        if dir.exists() {
            fs::remove_dir_all(&dir)?;
        }
        fs::create_dir_all(&dir)?;
        let (grown, _) = watch::channel(0);
        Ok(OutputLog {
            dir,
            inner: Mutex::new(Inner {
                segments: VecDeque::new(),
                writer: None,
                end: 0,
                finished: false,
                cursor: None,
            }),
            grown,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends output (a piece of at most a few KiB to a few dozen).
    pub fn append(&self, stream: Stream, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let tag = match stream {
            Stream::Stdout => STDOUT,
            Stream::Stderr => STDERR,
        };
        let mut inner = self.lock();
        self.write(&mut inner, tag, data)?;
        inner.end += data.len() as u64;
        self.trim(&mut inner)?;
        drop(inner);
        self.grown.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Appends the last event; nothing can be appended after it.
    pub fn finish(&self, last: &ExecEvent) -> io::Result<()> {
        let json = serde_json::to_vec(last).expect("events serialize");
        let mut inner = self.lock();
        self.write(&mut inner, LAST, &json)?;
        inner.finished = true;
        inner.writer = None;
        drop(inner);
        self.grown.send_modify(|n| *n += 1);
        Ok(())
    }

    /// Whether the last event is in.
    pub fn is_finished(&self) -> bool {
        self.lock().finished
    }

    /// The offset one past the last output byte.
    pub fn end(&self) -> u64 {
        self.lock().end
    }

    /// A receiver that changes whenever the log grows.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.grown.subscribe()
    }

    fn write(&self, inner: &mut Inner, tag: u8, data: &[u8]) -> io::Result<()> {
        let full = inner
            .segments
            .back()
            .is_none_or(|segment| segment.len >= SEGMENT_BYTES);
        if inner.writer.is_none() || full {
            let start = inner.end;
            let path = self.dir.join(format!("{start:020}.log"));
            let file = OpenOptions::new()
                .create_new(true)
                .append(true)
                .open(&path)?;
            inner.segments.push_back(Segment {
                start,
                path,
                len: 0,
            });
            inner.writer = Some(file);
        }
        let len = u32::try_from(data.len()).map_err(|_| io::Error::other("record too long"))?;
        let mut record = Vec::with_capacity(5 + data.len());
        record.push(tag);
        record.extend_from_slice(&len.to_le_bytes());
        record.extend_from_slice(data);
        inner
            .writer
            .as_mut()
            .expect("opened above")
            .write_all(&record)?;
        inner.segments.back_mut().expect("opened above").len += record.len() as u64;
        Ok(())
    }

    /// Drops the oldest segments while more than [`MAX_KEPT`] is kept.
    fn trim(&self, inner: &mut Inner) -> io::Result<()> {
        let mut kept: u64 = inner.segments.iter().map(|s| s.len).sum();
        while kept > MAX_KEPT && inner.segments.len() > 1 {
            let oldest = inner.segments.pop_front().expect("more than one");
            kept -= oldest.len;
            fs::remove_file(&oldest.path)?;
        }
        Ok(())
    }

    /// Deletes the segments that hold only bytes before `offset` (the
    /// reader has them).
    pub fn release_below(&self, offset: u64) -> io::Result<()> {
        let mut inner = self.lock();
        while inner.segments.len() > 1 && inner.segments[1].start <= offset {
            let old = inner.segments.pop_front().expect("more than one");
            fs::remove_file(&old.path)?;
        }
        Ok(())
    }

    /// Reads from output offset `from`: about `max` bytes of output at
    /// most (whole pieces, the first one cut at `from`), and the last
    /// event if the read reaches it.
    pub fn read(&self, from: u64, max: usize) -> io::Result<Result<Batch, BeyondEnd>> {
        let mut inner = self.lock();
        if from > inner.end {
            return Ok(Err(BeyondEnd {
                from,
                end: inner.end,
            }));
        }
        let mut batch = Batch {
            next: from,
            ..Batch::default()
        };
        let kept_from = inner.segments.front().map_or(inner.end, |s| s.start);
        let mut from = from;
        if from < kept_from {
            batch.events.push(ExecEvent::Dropped {
                bytes: kept_from - from,
            });
            from = kept_from;
            batch.next = from;
        }
        let Some(first) = inner.segments.iter().rposition(|s| s.start <= from) else {
            return Ok(Ok(batch));
        };
        let mut taken = 0usize;
        let cursor = inner.cursor;
        for index in first..inner.segments.len() {
            let segment = &inner.segments[index];
            let mut file = BufReader::new(File::open(&segment.path)?);
            let mut pos = segment.start;
            let mut at = 0u64;
            if let Some((offset, start, position)) = cursor {
                if index == first && start == segment.start && offset <= from {
                    file.seek(SeekFrom::Start(position))?;
                    pos = offset;
                    at = position;
                }
            }
            // The cursor may only point at output: a read from the same
            // offset must find the last event again.
            let mut boundary = at;
            while at < segment.len {
                let (tag, data) = read_record(&mut file)?;
                at += 5 + data.len() as u64;
                let stream = match tag {
                    STDOUT => Stream::Stdout,
                    STDERR => Stream::Stderr,
                    LAST => {
                        let last = serde_json::from_slice(&data)
                            .map_err(|e| io::Error::other(format!("a log's last event: {e}")))?;
                        batch.events.push(last);
                        batch.finished = true;
                        continue;
                    }
                    other => return Err(io::Error::other(format!("bad log record tag {other}"))),
                };
                let record_end = pos + data.len() as u64;
                if record_end > from {
                    let skip = from.saturating_sub(pos) as usize;
                    let data = BASE64.encode(&data[skip..]);
                    batch.events.push(match stream {
                        Stream::Stdout => ExecEvent::Stdout { data },
                        Stream::Stderr => ExecEvent::Stderr { data },
                    });
                    taken += (record_end - pos.max(from)) as usize;
                    batch.next = record_end;
                }
                pos = record_end;
                boundary = at;
                if taken >= max {
                    inner.cursor = Some((pos, segment.start, boundary));
                    return Ok(Ok(batch));
                }
            }
            inner.cursor = Some((pos, segment.start, boundary));
        }
        Ok(Ok(batch))
    }
}

impl Drop for OutputLog {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn read_record(file: &mut impl Read) -> io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    file.read_exact(&mut head)?;
    let len = u32::from_le_bytes([head[1], head[2], head[3], head[4]]) as usize;
    let mut data = vec![0u8; len];
    file.read_exact(&mut data)?;
    Ok((head[0], data))
}

/// The directory for the log of `kind` `id` under `root`: ids are chosen
/// by the caller, so the name is a hash of the id, never the id itself.
pub fn dir_for(root: &Path, kind: &str, id: &str) -> PathBuf {
    let hash = stead_sync::hash_chunk(id.as_bytes()).to_string();
    root.join(format!("{kind}-{}", &hash[..32]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stead_sync::{ErrorCode, ErrorDetail};

    fn text(events: &[ExecEvent]) -> String {
        events
            .iter()
            .map(|event| match event {
                ExecEvent::Stdout { data } | ExecEvent::Stderr { data } => {
                    String::from_utf8(BASE64.decode(data).unwrap()).unwrap()
                }
                ExecEvent::Dropped { bytes } => format!("<dropped {bytes}>"),
                _ => "<last>".to_string(),
            })
            .collect()
    }

    fn last() -> ExecEvent {
        ExecEvent::Error(ErrorDetail {
            code: ErrorCode::Io,
            message: "end".into(),
        })
    }

    #[test]
    fn reads_from_any_offset_each_byte_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = OutputLog::create(dir.path().join("l")).unwrap();
        log.append(Stream::Stdout, b"hello ").unwrap();
        log.append(Stream::Stderr, b"world").unwrap();
        let all = log.read(0, 1 << 20).unwrap().unwrap();
        assert_eq!(text(&all.events), "hello world");
        assert_eq!((all.next, all.finished), (11, false));
        let tail = log.read(3, 1 << 20).unwrap().unwrap();
        assert_eq!(text(&tail.events), "lo world");
        assert!(matches!(&tail.events[1], ExecEvent::Stderr { .. }));
        let at_end = log.read(11, 1 << 20).unwrap().unwrap();
        assert!(at_end.events.is_empty());
        assert_eq!(at_end.next, 11);
        assert!(log.read(12, 10).unwrap().is_err());
        log.finish(&last()).unwrap();
        let done = log.read(11, 1 << 20).unwrap().unwrap();
        assert!(done.finished && done.events.len() == 1);
        // Again from the end: the last event is found again.
        let again = log.read(11, 1 << 20).unwrap().unwrap();
        assert!(again.finished && again.events.len() == 1);
        let whole = log.read(0, 1 << 20).unwrap().unwrap();
        assert!(whole.finished);
        let after_whole = log.read(11, 1 << 20).unwrap().unwrap();
        assert!(
            after_whole.finished,
            "a read through the end leaves the cursor before it"
        );
        // A small budget reads whole pieces, and the next read goes on.
        let first = log.read(0, 1).unwrap().unwrap();
        assert_eq!((text(&first.events).as_str(), first.next), ("hello ", 6));
    }

    #[test]
    fn segments_roll_and_are_released_or_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let log = OutputLog::create(dir.path().join("l")).unwrap();
        let piece = vec![b'x'; 64 << 10];
        for _ in 0..40 {
            log.append(Stream::Stdout, &piece).unwrap();
        }
        let files = || fs::read_dir(dir.path().join("l")).unwrap().count();
        assert!(files() >= 2, "{} segments", files());
        let end = log.end();
        assert_eq!(end, 40 * (64 << 10));
        log.release_below(end).unwrap();
        assert_eq!(files(), 1, "everything before the end was released");
        let batch = log.read(0, 1 << 30).unwrap().unwrap();
        let ExecEvent::Dropped { bytes } = batch.events[0] else {
            panic!("{:?}", batch.events[0]);
        };
        assert!(bytes > 0 && bytes < end);
        let read: u64 = batch.events[1..]
            .iter()
            .map(|e| match e {
                ExecEvent::Stdout { data } => BASE64.decode(data).unwrap().len() as u64,
                other => panic!("{other:?}"),
            })
            .sum();
        assert_eq!(bytes + read, end, "dropped and read add up to the end");
        drop(log);
        assert!(
            !dir.path().join("l").exists(),
            "the log goes with its handle"
        );
    }
}
