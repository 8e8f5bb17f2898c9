//! Runs a benchmark's worker threads, prints the once-a-second report from the main thread, and
//! stops everything on `--duration`, SIGINT/SIGTERM, or the first error — always with a summary.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

use super::common::CommonArgs;
use crate::error::Result;
use crate::hot::{install_stop_signals, request_stop, stop_requested};
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
    install_stop_signals();
    let counters = Counters::new(threads);
    let reporter = Reporter::new(info.clone(), Arc::clone(&counters));
    let finished = AtomicUsize::new(0);
    let mut results = Vec::with_capacity(threads);
    let run_worker = |t: usize| {
        let r = worker(t, &counters);
        if r.is_err() {
            request_stop();
        }
        finished.fetch_add(1, Ordering::Release);
        r
    };
    let mut reporter = std::thread::scope(|s| {
        // Worker 0 runs on this (the main) thread: glibc gives threads other than main a
        // cancellable-syscall path for write(), and rxe rings every doorbell with write().
        let run_worker = &run_worker;
        let others: Vec<_> = (1..threads)
            .map(|t| s.spawn(move || run_worker(t)))
            .collect();
        let report = s.spawn(|| report_loop(reporter, role, threads, common, &counters, &finished));
        results.push(run_worker(0));
        for h in others {
            results.push(
                h.join().unwrap_or_else(|_| {
                    Err(crate::Error::Config("a worker thread panicked".into()))
                }),
            );
        }
        report
            .join()
            .unwrap_or_else(|_| Reporter::new(info.clone(), Arc::clone(&counters)))
    });
    let summary = match role {
        Role::Counting => reporter.finish(),
        Role::Passive => {
            println!("main: {} threads 0..{threads}: done", info.role);
            if info.json {
                let o = JsonObject::new()
                    .str("bench", info.bench)
                    .str("role", &info.role.to_lowercase())
                    .bool("summary", true)
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
    };
    results.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(summary)
}

/// Once a second, the per-thread report; also ends the run at `--duration`. Returns the reporter
/// for the summary once every worker has finished.
fn report_loop(
    mut reporter: Reporter,
    role: Role,
    threads: usize,
    common: &CommonArgs,
    counters: &Counters,
    finished: &AtomicUsize,
) -> Reporter {
    let mut deadline: Option<Instant> = None;
    let mut next_tick = Instant::now() + Duration::from_secs(1);
    while finished.load(Ordering::Acquire) < threads {
        std::thread::sleep(Duration::from_millis(50));
        let now = Instant::now();
        if deadline.is_none() && (0..threads).any(|t| counters.get(t) > 0 || role == Role::Passive)
        {
            deadline = common.duration.map(|d| now + Duration::from_secs_f64(d));
        }
        if deadline.is_some_and(|d| now >= d) {
            request_stop();
        }
        if now >= next_tick && role == Role::Counting && !stop_requested() {
            reporter.tick();
            next_tick = now + Duration::from_secs(1);
        }
    }
    reporter
}

/// A benchmark binary's whole `main`: parse flags (clap exits 2 on bad ones), run, and turn an
/// error into one line and exit code 1.
pub fn main<A: Parser>(name: &str, run: fn(A) -> Result<()>) {
    let args = A::parse();
    if let Err(e) = run(args) {
        eprintln!("{name}: {e}");
        std::process::exit(1);
    }
}
