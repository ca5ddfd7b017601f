//! Measure 2: streamed write and read of one large file, in MiB/s, against
//! fixed aims, with local-disk figures for scale.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;
use std::time::Duration;

use crate::agent::Agent;
use crate::gen::Noise;
use crate::report::{Aim, Report, Row, Unit};
use crate::stats::{best_of, mib_per_sec, timed, MIB};

const PATH: &str = "/big.bin";
const RUNS: usize = 3;
const WRITE_AIM_MIB_S: f64 = 200.0;
const READ_AIM_MIB_S: f64 = 600.0;

/// Each run writes other bytes (seed = run), so no run is helped by
/// chunks stored by an earlier one.
fn seed(run: usize) -> u64 {
    1000 + run as u64
}

/// Reads `reader` to its end; returns how many bytes it gave.
pub(crate) fn drain(mut reader: impl Read) -> io::Result<u64> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0;
    loop {
        match reader.read(&mut buf)? {
            0 => return Ok(total),
            n => total += n as u64,
        }
    }
}

/// Whether two streams hold the same bytes.
pub(crate) fn same_bytes(mut a: impl Read, mut b: impl Read) -> io::Result<bool> {
    let (mut buf_a, mut buf_b) = (vec![0u8; 256 * 1024], vec![0u8; 256 * 1024]);
    loop {
        let n = a.read(&mut buf_a)?;
        if n == 0 {
            return Ok(b.read(&mut buf_b)? == 0);
        }
        if b.read_exact(&mut buf_b[..n]).is_err() || buf_a[..n] != buf_b[..n] {
            return Ok(false);
        }
    }
}

fn check_length(got: u64, want: u64, what: &str) {
    assert_eq!(got, want, "{what}: got {got} bytes, expected {want}");
}

/// Best write and read times for the agent.
fn agent_times(agent: &Agent, bytes: u64) -> (Duration, Duration) {
    let (write, ()) = best_of(RUNS, |run| {
        eprintln!("large file: write {} MiB, run {}", bytes / MIB, run + 1);
        timed(|| agent.upload_sized(PATH, bytes, Noise::new(seed(run), bytes)))
    });
    let (read, ()) = best_of(RUNS, |run| {
        eprintln!("large file: read {} MiB, run {}", bytes / MIB, run + 1);
        let (elapsed, got) = timed(|| drain(agent.download(PATH)).expect("download body"));
        check_length(got, bytes, "download");
        (elapsed, ())
    });
    (write, read)
}

/// One untimed read, compared byte for byte with what the last run wrote.
fn verify(agent: &Agent, bytes: u64, report: &mut Report) {
    let expected = Noise::new(seed(RUNS - 1), bytes);
    if !same_bytes(agent.download(PATH), expected).expect("download body") {
        report.warn(format!("{PATH} read back differs from what was written"));
    }
}

/// Best write+fsync and read times for a local temporary file.
fn disk_times(bytes: u64) -> (Duration, Duration) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.bin");
    let (write, ()) = best_of(RUNS, |run| {
        timed(|| write_synced(&path, Noise::new(seed(run), bytes)).expect("local write"))
    });
    let (read, ()) = best_of(RUNS, |_| {
        let (elapsed, got) = timed(|| drain(File::open(&path)?));
        check_length(got.expect("local read"), bytes, "local read");
        (elapsed, ())
    });
    (write, read)
}

fn write_synced(path: &Path, mut data: impl Read) -> io::Result<()> {
    let mut file = File::create(path)?;
    io::copy(&mut data, &mut file)?;
    file.flush()?;
    file.sync_all()
}

/// A row of `bytes` moved in `elapsed`, in MiB/s, against a baseline in
/// MiB/s and its label.
pub(crate) fn throughput_row(
    section: &str,
    bytes: u64,
    measure: &str,
    elapsed: Duration,
    (baseline, label): (f64, &str),
    aim: Option<Aim>,
) -> Row {
    Row {
        section: section.to_string(),
        measure: measure.into(),
        figure: Ok(mib_per_sec(bytes, elapsed)),
        unit: Unit::MibPerSec,
        baseline: Ok(baseline),
        baseline_label: label.into(),
        aim,
    }
}

pub fn run(agent: &Agent, bytes: u64, report: &mut Report) {
    let (write, read) = agent_times(agent, bytes);
    verify(agent, bytes, report);
    eprintln!("large file: local disk");
    let (disk_write, disk_read) = disk_times(bytes);
    let section = format!(
        "large file: {} MiB streamed PUT / GET, best of {RUNS}; vs aims, and a local file",
        bytes / MIB
    );
    let row = |measure: &str, elapsed: Duration, baseline: f64, label: &str, aim| {
        throughput_row(&section, bytes, measure, elapsed, (baseline, label), aim)
    };
    let at_aim = Some(Aim::AtLeast(1.0));
    report.rows.extend([
        row("write", write, WRITE_AIM_MIB_S, "aim", at_aim),
        row("read", read, READ_AIM_MIB_S, "aim", at_aim),
        row(
            "write",
            write,
            mib_per_sec(bytes, disk_write),
            "local write+fsync",
            None,
        ),
        row(
            "read",
            read,
            mib_per_sec(bytes, disk_read),
            "local read (page cache)",
            None,
        ),
    ]);
}
