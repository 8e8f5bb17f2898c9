//! The process level of rc-swarm: its rank (flags or a launcher's variables), the QP naming rule,
//! the threads, and how a swarm ends together: the first process to finish marks itself done,
//! the others see it and stop too, and nobody destroys its QPs before everyone has stopped
//! posting at it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{worker, Args, Rank};
use crate::control::{install_stop_signals, Attention};
use crate::error::{Error, Result};
use crate::framework;
use crate::registry::Registry;
use crate::stats::JsonObject;

/// The launchers' rank and size variables, in the order they are looked at.
const LAUNCHER_VARS: [(&str, &str, &str); 3] = [
    ("SLURM_PROCID", "SLURM_NTASKS", "Slurm (srun)"),
    (
        "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE",
        "Open MPI (mpirun)",
    ),
    ("PMI_RANK", "PMI_SIZE", "PMI (MPICH/Intel MPI mpirun)"),
];

/// The rank a launcher gave this process, from `var` (a lookup such as `std::env::var`): the
/// first of Slurm's, Open MPI's and PMI's variable pairs that is set, as (rank, size, launcher).
/// A pair that is set but not numeric is an error, not skipped.
pub fn rank_from_env(
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<(usize, usize, &'static str)>> {
    for (rank, size, who) in LAUNCHER_VARS {
        let (Some(r), Some(s)) = (var(rank), var(size)) else {
            continue;
        };
        let parse = |name: &str, v: &str| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| Error::config(format!("{name}={v:?} (set by {who}) is not a number")))
        };
        return Ok(Some((parse(rank, &r)?, parse(size, &s)?, who)));
    }
    Ok(None)
}

/// `--process-id` / `--num-processes`, each from its flag or else from the launcher.
pub(super) fn resolve_rank(
    process_id: Option<usize>,
    num_processes: Option<usize>,
) -> Result<Rank> {
    let env = rank_from_env(|k| std::env::var(k).ok())?;
    let missing = || {
        Error::config(
            "--process-id and --num-processes are required (or start the processes with srun or \
             mpirun, whose SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE \
             or PMI_RANK/PMI_SIZE give them)",
        )
    };
    let (process_id, num_processes, source) = match (process_id, num_processes, env) {
        (Some(p), Some(n), _) => (p, n, "flags"),
        (p, n, Some((er, es, who))) => (p.unwrap_or(er), n.unwrap_or(es), who),
        _ => return Err(missing()),
    };
    Ok(Rank {
        process_id,
        num_processes,
        source,
    })
}

/// The registry name of QP `qp_i` of thread `t` at process `p` (the original's rule: QP `i` is
/// for process `i % N` and VM `i / N`).
pub(super) fn qp_name(p: usize, t: usize, qp_i: usize, n: usize) -> String {
    format!(
        "on_proc_{p}-at_thr_{t}-for_proc_{}-for_vm_{}",
        qp_i % n,
        qp_i / n
    )
}

/// The name of the QP that our QP `qp_i` of thread `t` at process `p` connects to: the one
/// made for us, for the same VM, by the same thread index at process `qp_i % n`.
pub(super) fn peer_qp_name(p: usize, t: usize, qp_i: usize, n: usize) -> String {
    format!(
        "on_proc_{}-at_thr_{t}-for_proc_{p}-for_vm_{}",
        qp_i % n,
        qp_i / n
    )
}

/// The done marker of process `p`: up once it stopped posting.
pub(super) fn done_name(p: usize) -> String {
    format!("rc-swarm-proc-{p}")
}

/// How long a finished process waits for the others' done markers before it leaves anyway.
const LINGER: Duration = Duration::from_secs(10);
/// How often the watcher looks for other processes' done markers.
const WATCH_EVERY: Duration = Duration::from_millis(200);

/// What the threads of one process share.
pub(super) struct Swarm {
    pub rank: Rank,
    /// Each other process's run id, learned from the entries the workers connected to.
    runs: Vec<AtomicU64>,
    /// Connected QPs per thread, for the summary.
    pub connected: Vec<AtomicUsize>,
    /// Threads past their loop (the last one marks the process done).
    finished: AtomicUsize,
    /// A worker failed: this process does not mark itself done, so the others see it lost.
    failed: AtomicBool,
    reg: Arc<Registry>,
    attention: Attention,
}

impl Swarm {
    /// The process's registry handle: every entry of this process carries its run id, which is
    /// also the run id of the process's done marker.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.reg
    }

    /// Whether some worker already learned process `p`'s run id.
    pub fn knows(&self, p: usize) -> bool {
        self.runs[p].load(Ordering::Relaxed) != 0
    }

    /// Notes process `p`'s run id (every worker learns the same one).
    pub fn learn_run(&self, p: usize, run: u64) {
        self.runs[p].store(run, Ordering::Relaxed);
    }

    /// Whether process `p` has marked itself done (it stopped posting and may leave).
    pub fn is_done(&self, p: usize) -> bool {
        let run = self.runs[p].load(Ordering::Relaxed);
        run != 0
            && self
                .reg
                .is_ready(&format!("{}-done", done_name(p)), Some(run))
                .unwrap_or(false)
    }

    /// A worker's error on a QP to process `p`: the normal end of the swarm when `p` already
    /// finished (its QPs go away under our last operations), else the error.
    pub fn end_or(&self, p: usize, e: Error) -> Result<()> {
        if self.is_done(p) {
            self.attention.request_stop();
            Ok(())
        } else {
            Err(e)
        }
    }

    /// A worker's failure: the process will not say it is done.
    pub fn fail(&self) {
        self.failed.store(true, Ordering::Relaxed);
    }

    /// A worker failed, or a watcher found a peer lost (then the run ends with that failure).
    fn has_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed) || self.attention.failed()
    }

    /// Called by each worker once it stopped posting (its QPs still alive): the last one marks
    /// the process done; then every worker waits, bounded, until all other processes are done
    /// too, so that no QP of ours disappears under a peer still posting at it.
    pub fn finish_thread(&self) -> Result<()> {
        let n = self.finished.fetch_add(1, Ordering::AcqRel) + 1;
        if n == self.connected.len() && !self.has_failed() {
            self.reg.publish_done(&done_name(self.rank.process_id))?;
        }
        let start = Instant::now();
        while start.elapsed() < LINGER {
            if self.has_failed() || self.others().all(|p| self.is_done(p)) {
                return Ok(());
            }
            std::thread::sleep(WATCH_EVERY);
        }
        if n == self.connected.len() {
            let late: Vec<String> = self
                .others()
                .filter(|&p| !self.is_done(p))
                .map(|p| p.to_string())
                .collect();
            eprintln!(
                "rc-swarm: process(es) {} did not finish within {} of us; leaving anyway",
                late.join(", "),
                crate::error::fmt_secs(LINGER)
            );
        }
        Ok(())
    }

    fn others(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.rank.num_processes).filter(move |&p| p != self.rank.process_id)
    }
}

/// Runs this process's workers, the watcher that ends the swarm together, and the summary.
pub(super) fn run(a: &Args, rank: Rank) -> Result<()> {
    let reg = a.common.registry()?;
    let swarm = Swarm {
        rank,
        runs: (0..rank.num_processes).map(|_| AtomicU64::new(0)).collect(),
        connected: (0..a.num_threads).map(|_| AtomicUsize::new(0)).collect(),
        finished: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        reg,
        attention: install_stop_signals()?,
    };
    let qps = a.qps_per_thread(&rank);
    let first_id = rank.process_id * a.num_threads;
    println!(
        "main: Process {} of {} ({}): {} threads × {qps} QPs ({} VMs per process), {} {} B, \
         window {}, allsig {}",
        rank.process_id,
        rank.num_processes,
        rank.source,
        a.num_threads,
        a.vms_per_process,
        if a.do_read { "READ" } else { "WRITE" },
        a.size,
        a.window_size,
        u8::from(a.allsig),
    );
    let workers = worker::Workers { a, swarm: &swarm };
    let workers_done = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        let watcher = s.spawn(|| watch_peers(&swarm, &workers_done));
        let r = framework::run(&workers, &a.common);
        workers_done.store(true, Ordering::Relaxed);
        let _ = watcher.join();
        r
    });
    let summary = result?;
    let avg = summary.mops;
    // The original's line (two decimals); more where two would round an emulated rate to zero.
    let digits = if avg >= 1.0 { 2 } else { 6 };
    println!("Machine {} average: {avg:.digits$} M/s", rank.process_id);
    if a.common.json {
        let threads: Vec<JsonObject> = swarm
            .connected
            .iter()
            .enumerate()
            .map(|(t, c)| {
                JsonObject::new()
                    .int("thread", (first_id + t) as u64)
                    .int("qps", qps as u64)
                    .int("connected_qps", c.load(Ordering::Relaxed) as u64)
            })
            .collect();
        let o = JsonObject::new()
            .str("bench", super::BENCH.name)
            .bool("machine_summary", true)
            .int("machine", rank.process_id as u64)
            .int("num_processes", rank.num_processes as u64)
            .int("vms_per_process", a.vms_per_process as u64)
            .int("threads", a.num_threads as u64)
            .str("op", if a.do_read { "READ" } else { "WRITE" })
            .int("size", a.size)
            .int("window_size", a.window_size as u64)
            .bool("allsig", a.allsig)
            .int("qps_per_thread", qps as u64)
            .objects("per_thread", &threads)
            .num("elapsed_s", summary.elapsed_s)
            .int("ops", summary.ops)
            .num("average_mops", avg);
        println!("{}", o.finish());
    }
    Ok(())
}

/// Until the workers end: once another process says it is done, stop ours too.
fn watch_peers(swarm: &Swarm, workers_done: &AtomicBool) {
    while !workers_done.load(Ordering::Relaxed) {
        std::thread::sleep(WATCH_EVERY);
        if swarm.attention.stop_requested() {
            continue;
        }
        if let Some(p) = swarm.others().find(|&p| swarm.is_done(p)) {
            println!("main: process {p} finished: stopping");
            swarm.attention.request_stop();
        }
    }
}
