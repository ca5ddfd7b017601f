//! The stable-Rust fuzz driver: runs targets on seeds, mutated seeds and
//! random bytes, deterministically from `--seed`, and saves any input that
//! panics (or hangs) under `fuzz/crashes/<target>-<hash>`.
//!
//! ```text
//! cargo run --release -p stead-fuzz -- [all | TARGET...] [--runs N | --seconds S | --quick]
//!     [--seed N] [--max-len N] [--timeout S] [--input FILE [--minimize]] [--list]
//! ```
//!
//! Saved crashes are run again first on every later run, so a fixed bug
//! stays fixed. `--input FILE` runs one target on one file with the normal
//! panic output, for debugging; with `--minimize` it instead shrinks the
//! file to a smaller input that still panics and saves it as `FILE.min`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stead_fuzz::mutate::{mutate, Rng};
use stead_fuzz::{target, Bounds, Target, TARGETS};

/// The most the driver may hold at once. The Worker has 128 MB in all, so
/// a gigabyte is a bug even where the host could serve it, and an amount
/// the host cannot serve would abort the driver without a trace.
const MAX_HEAP: usize = 1 << 30;

/// Heap bytes held now, and the most held since the run in progress began
/// (the driver runs targets on one thread; the watchdog allocates only
/// when it ends the process).
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The input of the run in progress, for the allocator to save: pointer,
/// length and target index, set around each run.
static INPUT_PTR: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static INPUT_LEN: AtomicUsize = AtomicUsize::new(0);
static INPUT_TARGET: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The system allocator, counting what is held: past [`MAX_HEAP`] the
/// input of the run in progress is saved as `<target>-oom-<hash>` and the
/// driver exits; the peak of each run is compared with its target's
/// [`stead_fuzz::Bounds`] after it.
struct Counted;

impl Counted {
    fn grew(size: usize) {
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        if live <= MAX_HEAP {
            return;
        }
        let target = INPUT_TARGET.swap(usize::MAX, Ordering::SeqCst);
        let ptr = INPUT_PTR.load(Ordering::SeqCst);
        let len = INPUT_LEN.load(Ordering::SeqCst);
        if let (Some(t), false) = (TARGETS.get(target), ptr.is_null()) {
            // SAFETY: `fuzz` publishes the pointer and length of an input it
            // keeps alive, unchanged, until it clears them after the run.
            let input = unsafe { std::slice::from_raw_parts(ptr, len) };
            let path = save_crash(t.name, "oom-", input);
            println!(
                "OOM {}: the heap reached {live} bytes\n  input {} ({} bytes): {}",
                t.name,
                path.display(),
                input.len(),
                preview(input)
            );
        } else {
            println!("OOM: the heap reached {live} bytes");
        }
        std::process::exit(4);
    }

    fn shrank(size: usize) {
        LIVE.fetch_sub(size, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to `System`; the counters
// only observe sizes (counted before the call, so that a request past
// `MAX_HEAP` ends the driver with the input saved instead of reaching the
// system, and given back if the system refuses).
unsafe impl GlobalAlloc for Counted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Counted::grew(layout.size());
        let ptr = unsafe { System.alloc(layout) };
        if ptr.is_null() {
            Counted::shrank(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Counted::grew(layout.size());
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if ptr.is_null() {
            Counted::shrank(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        Counted::shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old {
            Counted::grew(new_size - old);
        }
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        match (new.is_null(), new_size > old) {
            (true, true) => Counted::shrank(new_size - old),
            (false, false) => Counted::shrank(old - new_size),
            _ => {}
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: Counted = Counted;

/// The run in progress: when it started, its target and its input.
type Current = Arc<Mutex<Option<(Instant, &'static str, Vec<u8>)>>>;

/// Seconds of fuzzing in all in `--quick` mode (CI), shared by the targets.
const QUICK_SECONDS: f64 = 30.0;

struct Options {
    targets: Vec<&'static Target>,
    runs: Option<u64>,
    seconds: Option<f64>,
    seed: u64,
    max_len: usize,
    timeout: Duration,
    input: Option<PathBuf>,
    minimize: bool,
}

fn usage() -> String {
    let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    format!(
        "usage: stead-fuzz [all | TARGET...] [--runs N | --seconds S | --quick] [--seed N] \
         [--max-len N] [--timeout S] [--input FILE [--minimize]] [--list]\ntargets: {}",
        names.join(", ")
    )
}

fn parse_args() -> Result<Option<Options>, String> {
    let mut options = Options {
        targets: Vec::new(),
        runs: None,
        seconds: None,
        seed: 0,
        max_len: 2048,
        timeout: Duration::from_secs(10),
        input: None,
        minimize: false,
    };
    let mut quick = false;
    let mut args = std::env::args().skip(1);
    let value = |args: &mut dyn Iterator<Item = String>, flag: &str| {
        args.next().ok_or_else(|| format!("{flag} needs a value"))
    };
    let number = |text: String, flag: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| format!("{flag}: not a number: {text}"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => options.runs = Some(number(value(&mut args, &arg)?, &arg)? as u64),
            "--seconds" => options.seconds = Some(number(value(&mut args, &arg)?, &arg)?),
            "--quick" => quick = true,
            "--seed" => options.seed = number(value(&mut args, &arg)?, &arg)? as u64,
            "--max-len" => options.max_len = number(value(&mut args, &arg)?, &arg)? as usize,
            "--timeout" => {
                options.timeout = Duration::from_secs_f64(number(value(&mut args, &arg)?, &arg)?)
            }
            "--input" => options.input = Some(PathBuf::from(value(&mut args, &arg)?)),
            "--minimize" => options.minimize = true,
            "--list" => {
                for t in TARGETS {
                    println!("{:<6} {}", t.name, t.about);
                }
                return Ok(None);
            }
            "-h" | "--help" => {
                println!("{}", usage());
                return Ok(None);
            }
            "all" => options.targets.extend(TARGETS.iter()),
            name => options
                .targets
                .push(target(name).ok_or_else(|| format!("unknown target {name:?}"))?),
        }
    }
    if options.targets.is_empty() {
        options.targets.extend(TARGETS.iter());
    }
    if quick {
        options.seconds = Some(QUICK_SECONDS / options.targets.len() as f64);
    }
    if options.runs.is_none() && options.seconds.is_none() {
        options.runs = Some(10_000);
    }
    Ok(Some(options))
}

fn main() -> ExitCode {
    let options = match parse_args() {
        Ok(Some(options)) => options,
        Ok(None) => return ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}\n{}", usage());
            return ExitCode::from(2);
        }
    };
    if let Some(input) = &options.input {
        let data = std::fs::read(input).unwrap_or_else(|e| panic!("{}: {e}", input.display()));
        if options.minimize {
            let t = options.targets[0];
            panic::set_hook(Box::new(|_| {}));
            let small = minimize(t, data);
            let out = input.with_extension("min");
            std::fs::write(&out, &small).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
            println!(
                "{} bytes: {}\nsaved as {}",
                small.len(),
                preview(&small),
                out.display()
            );
            return ExitCode::SUCCESS;
        }
        for t in &options.targets {
            let ((), cost) = measured(|| (t.run)(&data));
            println!(
                "{}: ok, held {} bytes, took {} ms",
                t.name,
                cost.held,
                cost.took.as_millis()
            );
        }
        return ExitCode::SUCCESS;
    }

    // Panics are expected and reported by the driver: keep the message
    // and location, print nothing.
    let last_panic: Arc<Mutex<String>> = Arc::default();
    {
        let last_panic = last_panic.clone();
        panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let location = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            *last_panic.lock().unwrap_or_else(|e| e.into_inner()) =
                format!("{location}: {message}");
        }));
    }
    let current: Current = Arc::default();
    watchdog(current.clone(), options.timeout);

    let started = Instant::now();
    let mut crashed = false;
    println!(
        "stead-fuzz: seed {}, max input {} bytes, {}",
        options.seed,
        options.max_len,
        match (options.runs, options.seconds) {
            (Some(runs), _) => format!("{runs} runs per target"),
            (None, Some(seconds)) => format!("{seconds} s per target"),
            (None, None) => unreachable!("defaults set"),
        }
    );
    for t in &options.targets {
        let report = fuzz(t, &options, &last_panic, &current);
        let bounds = match t.bounds {
            Some(b) => format!(
                ", {} overrun(s); most held {:.1} MiB (bound {:.1}), slowest {} ms (bound {})",
                report.overruns,
                report.worst.held as f64 / 1048576.0,
                b.heap_bytes as f64 / 1048576.0,
                report.worst.took.as_millis(),
                b.run_ms
            ),
            None => String::new(),
        };
        println!(
            "{:<6} {:>9} runs in {:>6.1} s ({:>7.0}/s), corpus {:>3}, {} crash(es){bounds}",
            t.name,
            report.runs,
            report.elapsed.as_secs_f64(),
            report.runs as f64 / report.elapsed.as_secs_f64().max(1e-9),
            report.corpus,
            report.crashes
        );
        crashed |= report.crashes > 0 || report.overruns > 0;
    }
    println!("total {:.1} s", started.elapsed().as_secs_f64());
    if crashed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

struct Report {
    runs: u64,
    elapsed: Duration,
    corpus: usize,
    crashes: usize,
    /// Runs past their target's bounds.
    overruns: u64,
    /// The most any run held and took.
    worst: Cost,
}

fn crash_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crashes")
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Saved crashes of `t`, to run again first.
fn saved_crashes(t: &Target) -> Vec<Vec<u8>> {
    let prefix = format!("{}-", t.name);
    let Ok(dir) = std::fs::read_dir(crash_dir()) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .collect();
    paths.sort();
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

fn fuzz(
    t: &'static Target,
    options: &Options,
    last_panic: &Mutex<String>,
    current: &Current,
) -> Report {
    let index = TARGETS
        .iter()
        .position(|other| other.name == t.name)
        .unwrap_or(usize::MAX);
    let mut rng = Rng::new(options.seed ^ fnv(t.name.as_bytes()));
    let mut corpus = (t.seeds)();
    let replay = saved_crashes(t);
    let mut queue: Vec<Vec<u8>> = replay.iter().chain(&corpus).cloned().collect();
    queue.reverse();
    corpus.extend(replay);
    let started = Instant::now();
    let deadline = options
        .seconds
        .map(|s| started + Duration::from_secs_f64(s));
    let mut runs = 0u64;
    let mut crash_sites: Vec<String> = Vec::new();
    let mut overruns = 0u64;
    let mut worst = Cost::default();
    loop {
        if options.runs.is_some_and(|max| runs >= max)
            || deadline.is_some_and(|d| runs % 16 == 0 && Instant::now() >= d)
        {
            break;
        }
        let input = if let Some(next) = queue.pop() {
            next
        } else if rng.one_in(10) {
            let len = rng.below(options.max_len.min(256) + 1);
            rng.bytes(len)
        } else {
            let base = &corpus[rng.below(corpus.len())];
            mutate(&mut rng, base, &corpus, t.tokens, options.max_len)
        };
        *current.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((Instant::now(), t.name, input.clone()));
        INPUT_PTR.store(input.as_ptr().cast_mut(), Ordering::SeqCst);
        INPUT_LEN.store(input.len(), Ordering::SeqCst);
        INPUT_TARGET.store(index, Ordering::SeqCst);
        let (outcome, cost) = measured(|| panic::catch_unwind(|| (t.run)(&input)));
        INPUT_TARGET.store(usize::MAX, Ordering::SeqCst);
        INPUT_PTR.store(std::ptr::null_mut(), Ordering::SeqCst);
        runs += 1;
        worst.held = worst.held.max(cost.held);
        worst.took = worst.took.max(cost.took);
        if let Some(bounds) = t.bounds.filter(|b| cost.exceeds(b)) {
            overruns += 1;
            if overruns <= 5 {
                let path = save_crash(t.name, "overrun-", &input);
                println!(
                    "OVERRUN {}: held {} bytes (bound {}), took {} ms (bound {})\n  input {} ({} bytes): {}",
                    t.name,
                    cost.held,
                    bounds.heap_bytes,
                    cost.took.as_millis(),
                    bounds.run_ms,
                    path.display(),
                    input.len(),
                    preview(&input)
                );
            }
        }
        if outcome.is_err() {
            let message = last_panic.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let site = message.split(": ").next().unwrap_or_default().to_string();
            if !crash_sites.contains(&site) {
                crash_sites.push(site);
                let path = save_crash(t.name, "", &input);
                println!(
                    "CRASH {}: {message}\n  input {} ({} bytes): {}",
                    t.name,
                    path.display(),
                    input.len(),
                    preview(&input)
                );
            }
        }
    }
    *current.lock().unwrap_or_else(|e| e.into_inner()) = None;
    Report {
        runs,
        elapsed: started.elapsed(),
        corpus: corpus.len(),
        crashes: crash_sites.len(),
        overruns,
        worst,
    }
}

/// What one run cost: the most heap it held above what was held when it
/// started, and its wall time.
#[derive(Debug, Clone, Copy, Default)]
struct Cost {
    held: usize,
    took: Duration,
}

impl Cost {
    fn exceeds(&self, bounds: &Bounds) -> bool {
        self.held > bounds.heap_bytes || self.took > Duration::from_millis(bounds.run_ms)
    }
}

/// Runs `f`, measuring its [`Cost`].
fn measured<T>(f: impl FnOnce() -> T) -> (T, Cost) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let started = Instant::now();
    let out = f();
    let cost = Cost {
        held: PEAK.load(Ordering::Relaxed).saturating_sub(base),
        took: started.elapsed(),
    };
    (out, cost)
}

/// Deletes ever smaller runs of bytes while the input still panics.
fn minimize(t: &Target, mut data: Vec<u8>) -> Vec<u8> {
    let panics = |d: &[u8]| panic::catch_unwind(|| (t.run)(d)).is_err();
    assert!(
        panics(&data),
        "the input does not panic in target {}",
        t.name
    );
    let mut size = data.len().div_ceil(2).max(1);
    loop {
        let mut at = 0;
        while at < data.len() {
            let mut shorter = data.clone();
            shorter.drain(at..(at + size).min(data.len()));
            if panics(&shorter) {
                data = shorter;
            } else {
                at += size;
            }
        }
        if size == 1 {
            return data;
        }
        size /= 2;
    }
}

fn save_crash(target: &str, kind: &str, input: &[u8]) -> PathBuf {
    let dir = crash_dir();
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{target}-{kind}{:016x}", fnv(input)));
    if let Err(e) = std::fs::write(&path, input) {
        eprintln!("cannot save {}: {e}", path.display());
    }
    path
}

fn preview(input: &[u8]) -> String {
    let text: String = input.escape_ascii().to_string();
    if text.len() > 300 {
        format!("{}...", &text[..300])
    } else {
        text
    }
}

/// Ends the process when one execution runs past `timeout`, saving its
/// input as `<target>-hang-<hash>`: a hang is a bug too, and a stuck run
/// would otherwise stall CI silently.
fn watchdog(current: Current, timeout: Duration) {
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(250));
        let guard = current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((since, name, input)) = guard.as_ref() {
            if since.elapsed() > timeout {
                let path = save_crash(name, "hang-", input);
                println!(
                    "HANG {name}: one run took over {:.1} s\n  input {} ({} bytes): {}",
                    timeout.as_secs_f64(),
                    path.display(),
                    input.len(),
                    preview(input)
                );
                std::process::exit(3);
            }
        }
    });
}
