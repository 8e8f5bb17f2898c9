//! Runs a benchmark's worker threads, prints the once-a-second report, and stops everything on
//! `--duration`, SIGINT/SIGTERM, or the first error — always with a summary. A one-thread run
//! stays a one-thread process (the report runs from the worker's stop checks, see
//! [`crate::control::Ticker`]); with more workers a reporter thread does it.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

use super::common::CommonArgs;
use crate::control::{
    fail, install_stop_signals, request_stop, stop_requested, take_failure, Ticker,
};
use crate::error::{Error, Result};
use crate::stats::{Counters, JsonObject, Reporter, RunInfo, Summary};

/// How a process's threads take part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Threads count operations: per-thread lines and the throughput summary.
    Counting,
    /// Threads only serve as targets: no rates, just a clean exit.
    Passive,
}

/// Runs `threads` workers (`worker(t, counters)`) under the report loop.
pub fn run_threads<F>(
    info: RunInfo,
    role: Role,
    threads: usize,
    common: &CommonArgs,
    worker: F,
) -> Result<Summary>
where
    F: Fn(usize, &Counters) -> Result<()> + Sync,
{
    install_stop_signals()?;
    let counters = Counters::new(threads);
    let mut reporter = Reporter::new(info.clone(), Arc::clone(&counters));
    let mut stats_every = None;
    if let (Some((file, secs)), Role::Counting) = (common.stability(), role) {
        reporter = reporter.with_stability(file, secs)?;
        stats_every = Some(Duration::from_secs_f64(secs));
    }
    let clock = ReportClock {
        reporter,
        stats_every,
        next_stats: Instant::now(),
        counters: Arc::clone(&counters),
        role,
        duration: common.duration,
        measuring: false,
        deadline: None,
        next_tick: Instant::now() + Duration::from_secs(1),
    };
    let run_worker = |t: usize| {
        let r = worker(t, &counters);
        if r.is_err() {
            request_stop();
        }
        r
    };
    let (mut reporter, results) = if threads == 1 {
        run_alone(clock, run_worker)?
    } else {
        run_with_reporter(clock, threads, run_worker)
    };
    // A watcher's diagnosis (e.g. the peer's entry expired) explains a worker's own error (a
    // wait it abandoned), so it comes first.
    let failure = take_failure().or_else(|| results.into_iter().find_map(Result::err));
    let summary = match (&failure, role) {
        (None, Role::Counting) => reporter.finish(),
        (Some(e), Role::Counting) => reporter.finish_failed(&e.to_string()),
        (f, Role::Passive) => passive_summary(&info, threads, f.as_ref()),
    };
    match failure {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// One worker and no second thread at all (see [`Ticker`]): the worker's own stop checks run the
/// clock.
fn run_alone(
    clock: ReportClock,
    run_worker: impl Fn(usize) -> Result<()>,
) -> Result<(Reporter, Vec<Result<()>>)> {
    let clock = Rc::new(RefCell::new(clock));
    let ticker = Ticker::start(TICK, {
        let clock = Rc::clone(&clock);
        Box::new(move || clock.borrow_mut().step())
    });
    let r = run_worker(0);
    drop(ticker);
    let clock = Rc::try_unwrap(clock).map_err(|_| Error::protocol("the report ticker leaked"))?;
    Ok((clock.into_inner().reporter, vec![r]))
}

/// Worker 0 on this thread, the others on their own, and a reporter thread for the clock.
fn run_with_reporter(
    clock: ReportClock,
    threads: usize,
    run_worker: impl Fn(usize) -> Result<()> + Sync,
) -> (Reporter, Vec<Result<()>>) {
    let finished = AtomicUsize::new(0);
    let run_counted = |t| {
        let r = run_worker(t);
        finished.fetch_add(1, Ordering::Release);
        r
    };
    let fallback = Reporter::new(clock.reporter.info().clone(), Arc::clone(&clock.counters));
    std::thread::scope(|s| {
        let run_worker = &run_counted;
        let others: Vec<_> = (1..threads)
            .map(|t| s.spawn(move || run_worker(t)))
            .collect();
        let report = s.spawn(|| clock.run_until(&finished, threads));
        let mut results = vec![run_worker(0)];
        for h in others {
            results.push(
                h.join()
                    .unwrap_or_else(|_| Err(Error::protocol("a worker thread panicked"))),
            );
        }
        let reporter = report.join().unwrap_or(fallback);
        (reporter, results)
    })
}

/// A passive side's end: one line (and a JSON object), no rates.
fn passive_summary(info: &RunInfo, threads: usize, failure: Option<&Error>) -> Summary {
    match failure {
        None => println!("main: {} threads 0..{threads}: done", info.role),
        Some(e) => println!("main: run failed: {e}"),
    }
    if info.json {
        let mut o = JsonObject::new()
            .str("bench", info.bench)
            .str("role", &info.role.to_lowercase())
            .bool("summary", true)
            .bool("ok", failure.is_none());
        if let Some(e) = failure {
            o = o.str("error", &e.to_string());
        }
        let o = o
            .bool("passive", true)
            .int("threads", threads as u64)
            .int("ops", 0)
            .num("mops", 0.0);
        println!("{}", o.finish());
    }
    Summary {
        ops: 0,
        mops: 0.0,
        elapsed_s: 0.0,
    }
}

/// How often the report clock looks at the counters (and so how precisely `--duration` ends).
const TICK: Duration = Duration::from_millis(50);

/// The once-a-second per-thread report, and the end of the run at `--duration` (counted from the
/// first operation).
struct ReportClock {
    reporter: Reporter,
    counters: Arc<Counters>,
    role: Role,
    duration: Option<f64>,
    /// The first operation was seen (or the role is passive).
    measuring: bool,
    deadline: Option<Instant>,
    next_tick: Instant,
    /// Stability mode's interval, and when its next row is due.
    stats_every: Option<Duration>,
    next_stats: Instant,
}

impl ReportClock {
    fn step(&mut self) {
        // Keep our registry entries alive and check the peers we depend on.
        if let Err(e) = crate::registry::tend() {
            fail(e);
        }
        self.counters.mark_progress();
        let now = Instant::now();
        let threads = self.counters.len();
        if !self.measuring {
            if self.role == Role::Counting && (0..threads).all(|t| self.counters.get(t) == 0) {
                return;
            }
            // The clock starts with the first operation: deadline and report ticks count from it.
            self.measuring = true;
            self.deadline = self.duration.map(|d| now + Duration::from_secs_f64(d));
            self.next_tick = now + Duration::from_secs(1);
            self.next_stats = now + self.stats_every.unwrap_or_default();
        }
        let deadline_hit = self.deadline.is_some_and(|d| now >= d);
        if deadline_hit {
            request_stop();
        }
        // After a stop (other than the deadline's own step) threads are winding down: no rows.
        let stats_open = deadline_hit || !stop_requested();
        if let Some(every) = self.stats_every.filter(|_| stats_open) {
            // Rows fall on the interval's grid (from the first operation), so that --duration
            // D and --stats-interval I give exactly D / I rows per thread; a late step writes
            // one row for the time it covers, not one per missed slot.
            if now >= self.next_stats {
                self.reporter.stability_tick();
                while self.next_stats <= now {
                    self.next_stats += every;
                }
            }
        }
        if now >= self.next_tick && self.role == Role::Counting && !stop_requested() {
            self.reporter.tick();
            self.next_tick = now + Duration::from_secs(1);
        }
    }

    /// Steps every [`TICK`] on its own thread until all `threads` workers finished; returns the
    /// reporter for the summary.
    fn run_until(mut self, finished: &AtomicUsize, threads: usize) -> Reporter {
        while finished.load(Ordering::Acquire) < threads {
            std::thread::sleep(TICK);
            self.step();
        }
        self.reporter
    }
}

/// A benchmark binary's whole `main`: parse flags (clap exits 2 on bad ones), run, and turn an
/// error into one line and its exit code ([`Error::exit_code`]: 1 setup, 3 peer lost,
/// 4 verification, 130 stopped before measuring).
pub fn main<A: Parser>(name: &str, run: fn(A) -> Result<()>) {
    let args = A::parse();
    if let Err(e) = run(args) {
        eprintln!("{name}: {e}");
        std::process::exit(e.exit_code());
    }
}
