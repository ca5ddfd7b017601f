//! Timing and summary statistics.

use std::time::{Duration, Instant};

/// Mean and percentiles of a set of latencies.
#[derive(Debug, Clone, Copy)]
pub struct Latency {
    pub mean: Duration,
    pub p50: Duration,
    pub p90: Duration,
    pub p99: Duration,
}

impl Latency {
    /// Summarises `samples` (must not be empty).
    pub fn of(samples: &[Duration]) -> Latency {
        assert!(!samples.is_empty(), "no samples");
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let total: Duration = sorted.iter().sum();
        Latency {
            mean: total / sorted.len() as u32,
            p50: percentile(&sorted, 0.50),
            p90: percentile(&sorted, 0.90),
            p99: percentile(&sorted, 0.99),
        }
    }

    /// The statistics by name, in display order.
    pub fn named(&self) -> [(&'static str, Duration); 3] {
        [("mean", self.mean), ("p50", self.p50), ("p99", self.p99)]
    }
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs `f` and returns how long it took with its result.
pub fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let value = f();
    (start.elapsed(), value)
}

/// Runs `f(run)` `runs` times; returns the fastest time and the result of the
/// last run.
pub fn best_of<T>(runs: usize, mut f: impl FnMut(usize) -> (Duration, T)) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for run in 0..runs {
        let (elapsed, value) = f(run);
        best = best.min(elapsed);
        last = Some(value);
    }
    (best, last.expect("at least one run"))
}

pub const MIB: u64 = 1 << 20;

/// Throughput in MiB/s.
pub fn mib_per_sec(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / MIB as f64 / elapsed.as_secs_f64()
}

pub fn millis(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let latency = Latency::of(&samples);
        assert_eq!(latency.p50, Duration::from_millis(50));
        assert_eq!(latency.p90, Duration::from_millis(90));
        assert_eq!(latency.p99, Duration::from_millis(99));
        assert_eq!(latency.mean, Duration::from_micros(50_500));
        assert_eq!(
            Latency::of(&[Duration::from_millis(3)]).p99,
            Duration::from_millis(3)
        );
    }
}
