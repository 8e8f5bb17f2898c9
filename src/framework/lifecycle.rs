//! One run's lifecycle, the same for every benchmark and application:
//!
//! parse → validate → (per thread) open the port, set up, meet peers → start together →
//! measure → finish → report → tear down.
//!
//! A benchmark's entry function parses and validates its flags and picks the [`Role`] this
//! process plays; [`run`] does the rest in that order. The role fills in the per-thread steps
//! ([`Role::setup`], [`Role::measure`], [`Role::finish`]); everything around them — signals, the
//! per-thread counters, the once-a-second report, `--duration`, stability mode, the registry's
//! heartbeat and peer watches, the summary and its JSON, and the first error deciding the exit —
//! happens here, once, for all of them.
//!
//! A one-thread run stays a one-thread process (see [`crate::control::Attention`] for why): its
//! report clock steps from the worker's own [`Meter::checkpoint`]s. With more workers a reporter
//! thread steps it.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::args::CommonArgs;
use super::clock::ReportClock;
use super::fabric::Fabric;
use super::meter::Meter;
use crate::control::{install_stop_signals, take_failure, Attention};
use crate::error::{Error, Result};
use crate::registry::WaitOptions;
use crate::stats::{Counters, JsonObject, Reporter, RunInfo, Summary};
use crate::verbs::Port;

/// One role of a benchmark, as one process plays it: the steps [`run`] calls on each of its
/// threads, in order. The role itself is shared by the threads (`&self`); what one thread builds
/// and uses lives in its [`Role::Thread`].
pub trait Role: Sync {
    /// What a thread keeps from setup to finish (its QPs, batches, peers).
    type Thread;
    /// What the run is and how many threads it has.
    fn plan(&self) -> Plan;
    /// Thread `ctx.t`: open the port, make the verbs objects and the prebuilt WRs, meet the
    /// peers. Nothing is measured yet.
    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Self::Thread>;
    /// The measured window: the loop. Counts go to `m`, which also says when to stop
    /// ([`Meter::checkpoint`]).
    fn measure(&self, th: &mut Self::Thread, m: &mut Meter<'_>) -> Result<()>;
    /// What an error of the measure step means, given this thread's state: e.g. a transport
    /// error on a connection that has carried traffic (`measured`) means the peer is gone
    /// ([`super::Pair::lost`]). Default: the error as it is.
    fn explain(&self, th: &Self::Thread, e: Error, measured: bool) -> Error {
        let _ = (th, measured);
        e
    }
    /// After the window: reap what is in flight, verify, tell peers we are done. Dropping the
    /// thread's state tears it down (QPs before CQs before PDs, as their owners say).
    fn finish(&self, th: Self::Thread, ctx: &ThreadCtx<'_>) -> Result<()> {
        let _ = (th, ctx);
        Ok(())
    }
}

/// What a process runs: its label for reports and its threads.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Report lines' and JSON's labels.
    pub info: RunInfo,
    /// Worker threads of this process.
    pub threads: usize,
    /// The threads count operations (rates and a throughput summary); else they are passive
    /// (targets, masters): one line at the end, no rates.
    pub counting: bool,
    /// Print the original's `main: Using N threads` first.
    pub banner: bool,
    /// End with the framework's summary (rates, or a passive side's line); off for a role that
    /// reports itself (the probes' latency windows).
    pub summary: bool,
}

impl Plan {
    /// `threads` counting threads, announced with the original's banner.
    pub fn counting(info: RunInfo, threads: usize) -> Plan {
        Plan {
            info,
            threads,
            counting: true,
            banner: true,
            summary: true,
        }
    }
    /// `threads` passive threads, announced with the original's banner.
    pub fn passive(info: RunInfo, threads: usize) -> Plan {
        Plan {
            counting: false,
            ..Plan::counting(info, threads)
        }
    }
    /// Without the banner line.
    pub fn quiet(self) -> Plan {
        Plan {
            banner: false,
            ..self
        }
    }
    /// One thread that counts nothing and prints its own reports and summary (the probes).
    pub fn reporting_itself(info: RunInfo) -> Plan {
        Plan {
            summary: false,
            ..Plan::passive(info, 1).quiet()
        }
    }
}

/// What a thread's setup and finish get from the run.
pub struct ThreadCtx<'a> {
    /// This process's thread index.
    pub t: usize,
    /// The thread's id across processes (`first_id + t`; report lines use it).
    pub global_id: usize,
    /// The run's attention: hand it to any wait or loop that should end on a stop.
    pub attention: Attention,
    /// The flags every benchmark has.
    pub common: &'a CommonArgs,
    /// The ports the run uses, whose counters are read around the measurement.
    fabric: &'a Fabric,
}

impl ThreadCtx<'_> {
    /// How to wait for a peer in the registry (a stop ends the wait).
    pub fn wait(&self) -> WaitOptions {
        self.common.wait(self.attention)
    }
    /// Opens libhrd's `port_index`-th ACTIVE port (on `--device` if given) with `--gid-index`;
    /// its counters are read around the measurement.
    pub fn open_port(&self, port_index: usize) -> Result<Port> {
        let port = self.common.open_port(port_index)?;
        if let Some(note) = crate::verbs::provider_env::header_note(port.context()) {
            println!("main: {note}");
        }
        // Once per port: the GID picked is not the usual RoCE v2 IPv4 one, and why.
        if let (true, Some(note)) = (self.fabric.add(&port), port.gid_note()) {
            println!("main: {note}");
        }
        Ok(port)
    }
}

/// How often the report clock steps (and so how precisely `--duration` ends; a stability
/// interval shorter than this steps at that interval instead). A one-thread run pays each step
/// from its own loop, and the step's work is per second, not per operation: 10 Hz keeps the
/// heartbeat, the per-second report and `--duration` to a tenth of a second.
const TICK: Duration = Duration::from_millis(100);

/// Runs `role`'s threads through the lifecycle and reports. Returns the summary, or the run's
/// first error (a watcher's diagnosis, such as a peer found gone, before a worker's own).
pub fn run<R: Role>(role: &R, common: &CommonArgs) -> Result<Summary> {
    let attention = install_stop_signals()?;
    let plan = role.plan();
    if plan.banner {
        println!("main: Using {} threads", plan.threads);
    }
    let counters = Counters::new(plan.threads);
    let mut reporter = Reporter::new(plan.info.clone(), Arc::clone(&counters));
    let mut stats_every = None;
    if let (Some((file, secs)), true) = (common.stability(), plan.counting) {
        reporter = reporter.with_stability(file, secs)?;
        stats_every = Some(Duration::from_secs_f64(secs));
    }
    let fabric = Arc::new(Fabric::new(common.counter_tolerance.clone()));
    let clock = ReportClock::new(
        reporter,
        Arc::clone(&counters),
        Arc::clone(&fabric),
        plan.counting,
        common.duration,
        stats_every,
        attention,
    );
    let thread = |t: usize, clock: Option<&RefCell<ReportClock>>| {
        let ctx = ThreadCtx {
            t,
            global_id: plan.info.first_id + t,
            attention,
            common,
            fabric: &fabric,
        };
        let r = thread_lifecycle(role, &ctx, &counters, clock);
        if r.is_err() {
            attention.request_stop();
        }
        r
    };
    let (mut reporter, results) = if plan.threads == 1 {
        run_alone(clock, attention, thread)
    } else {
        run_with_reporter(clock, plan.threads, thread)
    };
    // A watcher's diagnosis (the clock found a peer gone) is explained here; a thread's own
    // failure was explained, and published, while its state still lived.
    let failure = take_failure()
        .map(|e| fabric.explain(e))
        .or_else(|| first_error(results));
    if let Some(e) = failure.as_ref() {
        publish_failure(e);
    }
    let verdict = fabric.finish();
    let extra = verdict.json().merge(&crate::verbs::provider_env::json());
    let summary = match (&failure, plan.counting) {
        _ if !plan.summary => Summary::default(),
        (None, true) => reporter.finish(&extra),
        (Some(e), true) => reporter.finish_failed(&e.to_string(), &extra),
        (f, false) => passive_summary(&plan.info, plan.threads, f.as_ref(), &extra),
    };
    // One line under the summary per port: what the fabric counted meanwhile.
    for r in &verdict.reports {
        println!("{}", r.line());
    }
    if let Some(what) = crate::counters::link::describe(&verdict.links) {
        println!("main: links: {what}");
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(summary),
    }
}

/// One thread, top to bottom: set up (and meet the peers), wait for the other threads, measure,
/// finish.
fn thread_lifecycle<R: Role>(
    role: &R,
    ctx: &ThreadCtx<'_>,
    counters: &Counters,
    clock: Option<&RefCell<ReportClock>>,
) -> Result<()> {
    let mut th = role.setup(ctx)?;
    // Threads start measuring together, so that --duration covers all of them.
    if !counters.arrive(|| ctx.attention.stop_requested()) {
        return Err(Error::Stopped(
            "stopped while the other threads were connecting".into(),
        ));
    }
    ctx.fabric.start();
    let mut m = Meter::new(counters, ctx.t, ctx.attention, clock);
    let measured = role.measure(&mut th, &mut m);
    m.stop();
    if let Err(e) = measured {
        ctx.fabric.failed();
        let e = ctx.fabric.explain(role.explain(&th, e, m.ops() > 0));
        // Before the thread's state (and with it, maybe, the last registry handle) goes.
        publish_failure(&e);
        return Err(e);
    }
    role.finish(th, ctx)
}

/// Leaves `e` where peers that watch us look (a passive side has no traffic to notice our end
/// by): they end with why. A stop is no failure.
fn publish_failure(e: &Error) {
    if !matches!(e, Error::Stopped(_)) {
        crate::registry::publish_failure(&e.to_string());
    }
}

/// The error that explains the run: a thread's own failure rather than the "stopped" of the
/// threads that wound down because of it.
fn first_error(results: Vec<Result<()>>) -> Option<Error> {
    let mut errors: Vec<Error> = results.into_iter().filter_map(Result::err).collect();
    let real = errors.iter().position(|e| !matches!(e, Error::Stopped(_)));
    match real {
        Some(i) => Some(errors.swap_remove(i)),
        None => errors.into_iter().next(),
    }
}

/// One worker and no second thread at all: the worker's own checkpoints step the clock.
fn run_alone(
    clock: ReportClock,
    attention: Attention,
    thread: impl Fn(usize, Option<&RefCell<ReportClock>>) -> Result<()>,
) -> (Reporter, Vec<Result<()>>) {
    let tick = clock.period(TICK);
    let clock = RefCell::new(clock.ticking(attention.arm_ticks(tick)));
    let r = thread(0, Some(&clock));
    (clock.into_inner().into_reporter(), vec![r])
}

/// Worker 0 on this thread, the others on their own, and a reporter thread for the clock.
fn run_with_reporter(
    clock: ReportClock,
    threads: usize,
    thread: impl Fn(usize, Option<&RefCell<ReportClock>>) -> Result<()> + Sync,
) -> (Reporter, Vec<Result<()>>) {
    let finished = AtomicUsize::new(0);
    let counted = |t| {
        let r = thread(t, None);
        finished.fetch_add(1, Ordering::Release);
        r
    };
    let fallback = clock.spare_reporter();
    let tick = clock.period(TICK);
    std::thread::scope(|s| {
        let counted = &counted;
        let others: Vec<_> = (1..threads).map(|t| s.spawn(move || counted(t))).collect();
        let report = s.spawn(|| clock.step_every(tick, &finished, threads));
        let mut results = vec![counted(0)];
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

/// A passive side's end: one line (and a JSON object, with `extra`'s fields), no rates.
fn passive_summary(
    info: &RunInfo,
    threads: usize,
    failure: Option<&Error>,
    extra: &JsonObject,
) -> Summary {
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
            .num("mops", 0.0)
            .merge(extra);
        println!("{}", o.finish());
    }
    Summary {
        ops: 0,
        mops: 0.0,
        elapsed_s: 0.0,
    }
}
