//! Per-thread counters and the once-a-second report in the C suite's shape.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::stability::StabilityLog;
use super::JsonObject;
use crate::error::Result;

/// One cache line per thread, so that counting never bounces lines between cores.
#[repr(align(64))]
#[derive(Debug, Default)]
struct Slot {
    ops: AtomicU64,
    /// Nanoseconds after the epoch at which the thread started its loop, plus one (0: not yet).
    started: AtomicU64,
    /// Same encoding, for when the thread left its loop.
    stopped: AtomicU64,
    /// The count the report clock saw last, and when it last saw it grow (same encoding).
    seen_ops: AtomicU64,
    progress: AtomicU64,
}

/// Operation counts of the worker threads, written by each worker (one relaxed store per batch)
/// and read by the reporter.
#[derive(Debug)]
pub struct Counters {
    epoch: Instant,
    slots: Box<[Slot]>,
    /// Threads that finished their setup ([`Counters::arrive`]).
    arrived: std::sync::atomic::AtomicUsize,
}

impl Counters {
    /// Counters for `threads` workers.
    pub fn new(threads: usize) -> Arc<Counters> {
        Arc::new(Counters {
            epoch: Instant::now(),
            slots: (0..threads).map(|_| Slot::default()).collect(),
            arrived: std::sync::atomic::AtomicUsize::new(0),
        })
    }
    /// Marks thread `t` as started now (its rate is measured from here).
    pub fn start(&self, t: usize) {
        let ns = self.epoch.elapsed().as_nanos() as u64 + 1;
        self.slots[t].started.store(ns, Ordering::Release);
    }
    /// Marks thread `t`'s loop as over: its rate is measured up to here, not up to the summary
    /// Thread setup is over (connected); then waits until every thread of the process says the
    /// same, so that they start measuring together and `--duration` covers all of them. Returns
    /// false if `give_up()` says so first (a failed or stopped run).
    pub fn arrive(&self, give_up: impl Fn() -> bool) -> bool {
        self.arrived.fetch_add(1, Ordering::AcqRel);
        while self.arrived.load(Ordering::Acquire) < self.slots.len() {
            if give_up() {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        true
    }

    /// (which may come after draining, verifying and tearing down).
    pub fn stop(&self, t: usize) {
        let ns = self.epoch.elapsed().as_nanos() as u64 + 1;
        self.slots[t].stopped.store(ns, Ordering::Release);
    }
    /// Notes, for every thread whose count grew since the last call, that it made progress now.
    /// Called by the report clock (every tick, 100 ms), never by the workers: a failed run's rate is
    /// then measured up to the last progress, without the stall that detected the failure.
    /// `now` is the caller's clock read.
    pub fn mark_progress(&self, now: std::time::Instant) {
        let ns = now.saturating_duration_since(self.epoch).as_nanos() as u64 + 1;
        for s in self.slots.iter() {
            let ops = s.ops.load(Ordering::Relaxed);
            if ops != s.seen_ops.swap(ops, Ordering::Relaxed) {
                s.progress.store(ns, Ordering::Release);
            }
        }
    }
    fn progress_at(&self, t: usize) -> Option<f64> {
        match self.slots[t].progress.load(Ordering::Acquire) {
            0 => None,
            ns => Some((ns - 1) as f64 / 1e9),
        }
    }
    /// Undoes [`Counters::stop`] (work resumed after a lull).
    pub fn resume(&self, t: usize) {
        self.slots[t].stopped.store(0, Ordering::Release);
    }
    /// Publishes thread `t`'s running total.
    #[inline(always)]
    pub fn set(&self, t: usize, ops: u64) {
        self.slots[t].ops.store(ops, Ordering::Relaxed);
    }
    /// Where thread `t` publishes its running total, for a loop that only counts.
    pub fn tally(&self, t: usize) -> Tally<'_> {
        Tally(&self.slots[t].ops)
    }
    /// Thread `t`'s running total.
    pub fn get(&self, t: usize) -> u64 {
        self.slots[t].ops.load(Ordering::Relaxed)
    }
    pub(super) fn started_at(&self, t: usize) -> Option<f64> {
        match self.slots[t].started.load(Ordering::Acquire) {
            0 => None,
            ns => Some((ns - 1) as f64 / 1e9),
        }
    }
    pub(super) fn stopped_at(&self, t: usize) -> Option<f64> {
        match self.slots[t].stopped.load(Ordering::Acquire) {
            0 => None,
            ns => Some((ns - 1) as f64 / 1e9),
        }
    }
    pub(super) fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }
    /// Number of threads.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
    /// True with no threads.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// One thread's published running total ([`Counters::tally`]): a relaxed store per update.
#[derive(Debug, Clone, Copy)]
pub struct Tally<'a>(&'a AtomicU64);

impl Tally<'_> {
    /// Publishes the running total.
    #[inline(always)]
    pub fn set(self, ops: u64) {
        self.0.store(ops, Ordering::Relaxed);
    }
}

/// What a run is, for report lines and JSON.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// Benchmark name (as the binary).
    pub bench: &'static str,
    /// "Server" or "Client", as the C suite labels the counting threads.
    pub role: &'static str,
    /// Operation, e.g. "WRITE", "READ", "SEND", "RECV".
    pub op: &'static str,
    /// Payload bytes.
    pub size: u64,
    /// WRs per doorbell.
    pub postlist: u64,
    /// Global id of local thread 0 (thread t reports as `first_id + t`).
    pub first_id: usize,
    /// Also print JSON lines.
    pub json: bool,
}

/// Totals of a finished run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    /// Operations across threads.
    pub ops: u64,
    /// Sum of per-thread rates, in millions of operations per second.
    pub mops: f64,
    /// Longest per-thread measuring time.
    pub elapsed_s: f64,
}

/// Prints per-thread rates about once a second and the summary at the end.
pub struct Reporter {
    info: RunInfo,
    counters: Arc<Counters>,
    last_ops: Vec<u64>,
    last_t: Vec<f64>,
    stability: Option<StabilityLog>,
}

impl Reporter {
    /// What the run is.
    pub fn info(&self) -> &RunInfo {
        &self.info
    }

    /// A reporter over `counters`.
    pub fn new(info: RunInfo, counters: Arc<Counters>) -> Reporter {
        let n = counters.len();
        Reporter {
            info,
            counters,
            last_ops: vec![0; n],
            last_t: vec![0.0; n],
            stability: None,
        }
    }

    /// Also writes stability-mode rows (`--stats-file`, created here) every `interval_s`.
    pub fn with_stability(mut self, path: &std::path::Path, interval_s: f64) -> Result<Reporter> {
        let log = StabilityLog::create(
            path,
            interval_s,
            &self.counters,
            self.info.first_id,
            self.info.role,
        )?;
        self.stability = Some(log);
        Ok(self)
    }

    /// One stability-mode row per started thread (nothing without `--stats-file`).
    pub fn stability_tick(&mut self) {
        if let Some(log) = &mut self.stability {
            log.tick(&self.counters);
        }
    }

    /// Prints the stability summary, if the run has one.
    fn print_stability(&mut self) {
        let base = self.json_base();
        if let Some(log) = &mut self.stability {
            print!("{}", log.summary(base, self.info.json));
        }
    }

    fn json_base(&self) -> JsonObject {
        JsonObject::new()
            .str("bench", self.info.bench)
            .str("role", &self.info.role.to_lowercase())
            .str("op", self.info.op)
            .int("size", self.info.size)
            .int("postlist", self.info.postlist)
    }

    /// One line per started thread: its rate since the previous tick.
    pub fn tick(&mut self) {
        let now = self.counters.now();
        let mut out = String::new();
        for t in 0..self.counters.len() {
            let Some(started) = self.counters.started_at(t) else {
                continue;
            };
            let ops = self.counters.get(t);
            let since = if self.last_t[t] > 0.0 {
                self.last_t[t]
            } else {
                started
            };
            let dt = now - since;
            if dt <= 0.0 {
                continue;
            }
            let rate = (ops - self.last_ops[t]) as f64 / dt;
            let id = self.info.first_id + t;
            out.push_str(&format!("main: {} {id}: {rate:.2} IOPS\n", self.info.role));
            if self.info.json {
                let o = self
                    .json_base()
                    .int("thread", id as u64)
                    .num("elapsed_s", now - started)
                    .int("ops", ops);
                out.push_str(&o.num("mops", rate / 1e6).finish());
                out.push('\n');
            }
            self.last_ops[t] = ops;
            self.last_t[t] = now;
        }
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(out.as_bytes());
        let _ = stdout.flush();
    }

    /// Totals over every started thread; each thread's time ends at `end(t)`.
    fn totals(&self, end: impl Fn(usize) -> Option<f64>) -> Summary {
        let now = self.counters.now();
        let mut s = Summary {
            ops: 0,
            mops: 0.0,
            elapsed_s: 0.0,
        };
        for t in 0..self.counters.len() {
            let Some(started) = self.counters.started_at(t) else {
                continue;
            };
            let ops = self.counters.get(t);
            let secs = end(t).unwrap_or(now) - started;
            s.ops += ops;
            if secs > 0.0 {
                s.mops += ops as f64 / secs / 1e6;
            }
            s.elapsed_s = s.elapsed_s.max(secs);
        }
        s
    }

    /// The final line (`main: Total throughput = X Mops`) and JSON summary (`"ok": true`, then
    /// `extra`'s fields).
    pub fn finish(&mut self, extra: &JsonObject) -> Summary {
        let s = self.totals(|t| self.counters.stopped_at(t));
        self.print_stability();
        println!("main: Total throughput = {:.4} Mops", s.mops);
        if self.info.json {
            let o = self
                .json_base()
                .bool("summary", true)
                .bool("ok", true)
                .int("threads", self.counters.len() as u64)
                .num("elapsed_s", s.elapsed_s)
                .int("ops", s.ops)
                .num("mops", s.mops)
                .merge(extra);
            println!("{}", o.finish());
        }
        s
    }

    /// A failed run's end: `main: run failed: …`, then what was measured up to each thread's
    /// last progress (never a `Total throughput` line), and a JSON summary with `"ok": false` and
    /// the error.
    pub fn finish_failed(&mut self, error: &str, extra: &JsonObject) -> Summary {
        let s = self.totals(|t| {
            let stopped = self.counters.stopped_at(t);
            match (self.counters.progress_at(t), stopped) {
                (Some(p), Some(st)) => Some(p.min(st)),
                (p, st) => p.or(st),
            }
        });
        println!("main: run failed: {error}");
        self.print_stability();
        if s.ops > 0 {
            println!(
                "main: measured before the failure: {:.4} Mops ({} ops in {:.1} s, up to the last progress)",
                s.mops, s.ops, s.elapsed_s
            );
        }
        if self.info.json {
            let o = self
                .json_base()
                .bool("summary", true)
                .bool("ok", false)
                .str("error", error)
                .int("threads", self.counters.len() as u64)
                .num("elapsed_s", s.elapsed_s)
                .int("ops", s.ops)
                .num("mops", s.mops)
                .merge(extra);
            println!("{}", o.finish());
        }
        s
    }
}
