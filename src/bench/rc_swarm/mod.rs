//! rc-swarm: N machines × M emulated VMs × W threads, all reading (or writing) each other over
//! RC, to show how connection state in the NIC (its QP cache) limits a cluster.
//!
//! Each worker thread makes N·M QPs, one per (process, VM) of the swarm, so that it holds as many
//! connections as a thread would in a cluster of N·M machines. QP `i` of a thread is for process
//! `i % N` and VM `i / N`; it connects to the QP of the same thread index and VM at that process
//! (the QPs for our own process stay unconnected, as in the original). Every operation goes to a
//! random connected QP, at a random cache-line-aligned offset of that thread's 2 MiB buffer.
//! READs keep `--window-size` outstanding per thread; their completion is seen in memory (the
//! zeroed local slot turns non-zero); WRITEs are bounded by selective signaling per QP.

mod swarm;
mod worker;

use clap::{CommandFactory, Parser};

use crate::error::{Error, Result};
use crate::framework::{
    counts_at_least_one, flag01, require, Benchmark, CommonArgs, Family, Output, RoleSpec,
};
use crate::hot::check_batching;

/// Bytes of each thread's buffer (kAppBufSize).
pub const BUF_SIZE: usize = 2 * 1024 * 1024;
/// Most threads in a process (kAppMaxThreads).
pub const MAX_THREADS: usize = 28;
/// Largest READ window (kAppMaxWindow).
pub const MAX_WINDOW: usize = 64;
/// Most processes in a swarm (kAppMaxProcesses).
pub const MAX_PROCESSES: usize = 256;

/// rc-swarm's command line: the original's flags (its `config` file gives the defaults).
#[derive(Parser, Debug, Clone)]
#[command(
    name = "rc-swarm",
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "Many machines and emulated VMs reading/writing each other over RC (ATC'16 rdma_bench)",
    long_about = "Many machines and emulated VMs reading/writing each other over RC (ATC'16 \
rdma_bench). Start one process per machine, all with the same flags and the same registry \
(HRD_REGISTRY_IP or --registry); each prints its workers' rates once a second and, at the end, \
`Machine <process-id> average: <x> M/s`. Under srun or mpirun, --process-id and --num-processes \
come from the launcher's rank variables."
)]
pub(crate) struct Args {
    /// This process's id in the swarm, 0 ≤ id < num-processes [default: SLURM_PROCID,
    /// OMPI_COMM_WORLD_RANK or PMI_RANK]
    #[arg(long, alias = "process_id", value_name = "ID")]
    pub process_id: Option<usize>,
    /// Processes (physical machines) in the swarm [default: SLURM_NTASKS, OMPI_COMM_WORLD_SIZE or
    /// PMI_SIZE]
    #[arg(long, alias = "num_processes", value_name = "N")]
    pub num_processes: Option<usize>,
    /// Worker threads per process; each makes num-processes × vms-per-process QPs
    #[arg(long, alias = "num_threads", default_value_t = 14, value_parser = crate::units::count::<usize>)]
    pub num_threads: usize,
    /// VMs emulated by each process
    #[arg(long, alias = "vms_per_process", default_value_t = 1, value_parser = crate::units::count::<usize>)]
    pub vms_per_process: usize,
    /// Ports used: thread t makes its QPs on port base-port-index + t % num-ports
    #[arg(long, alias = "num_ports", default_value_t = 1, value_parser = crate::units::count::<usize>)]
    pub num_ports: usize,
    /// 1: RDMA READs, 0: inlined RDMA WRITEs
    #[arg(long, alias = "do_read", default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub do_read: bool,
    /// 1: unreliable connected QPs (WRITEs only; the recorded 16-byte UC WRITE sweep)
    #[arg(long, alias = "use_uc", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub use_uc: bool,
    /// Bytes per READ/WRITE (WRITEs are inline: at most --max-inline)
    #[arg(long, default_value_t = 16, value_parser = crate::units::count::<u64>)]
    pub size: u64,
    /// READs outstanding per thread (across its QPs); with --allsig 1 also the signaled ops
    #[arg(long, alias = "window_size", default_value_t = 16, value_parser = crate::units::count::<usize>)]
    pub window_size: usize,
    /// 1: signal every operation and reap it a window later; 0: selective signaling per QP
    #[arg(long, default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub allsig: bool,
    /// Send queue depth of every QP
    #[arg(long, alias = "sq_depth", default_value_t = 32, value_parser = crate::units::count::<u32>)]
    pub sq_depth: u32,
    /// With --allsig 0: one signaled operation every N per QP
    #[arg(long, alias = "unsig_batch", default_value_t = 16, value_parser = crate::units::count::<u32>)]
    pub unsig_batch: u32,
    /// READs each QP keeps in flight as initiator (and accepts as responder)
    #[arg(long, alias = "max_rd_atomic", default_value_t = 16)]
    pub max_rd_atomic: u8,
    /// Inline limit asked of every QP (the original's kHrdMaxInline 16: one-cache-line WQEs)
    #[arg(long, alias = "max_inline", default_value_t = 16, value_parser = crate::units::count::<u32>)]
    pub max_inline: u32,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// Where this process stands in the swarm, once flags and launcher variables are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rank {
    /// This process's id.
    pub process_id: usize,
    /// Processes in the swarm.
    pub num_processes: usize,
    /// Where they came from (a flag or a launcher's variables), for the startup line.
    pub source: &'static str,
}

impl Args {
    /// QPs each thread makes: one per (process, VM) of the swarm.
    pub fn qps_per_thread(&self, rank: &Rank) -> usize {
        rank.num_processes * self.vms_per_process
    }
    /// Bytes at the start of each buffer that READs land in (zeroed; never a READ's source).
    pub fn polling_region(&self) -> usize {
        self.window_size * self.size as usize
    }
}

/// The checks that refuse a run before anything is made.
pub(crate) fn validate(a: &Args, rank: &Rank) -> Result<()> {
    a.common.check()?;
    require(rank.num_processes >= 2, || {
        "num-processes must be at least 2: a process never connects to itself".into()
    })?;
    require(rank.num_processes <= MAX_PROCESSES, || {
        format!("num-processes is at most {MAX_PROCESSES}")
    })?;
    require(rank.process_id < rank.num_processes, || {
        format!(
            "process-id {} is not below num-processes {} ({})",
            rank.process_id, rank.num_processes, rank.source
        )
    })?;
    // Values outside their flags' own ranges: usage errors (exit 2).
    counts_at_least_one(&[
        ("--num-threads", a.num_threads as u64),
        ("--vms-per-process", a.vms_per_process as u64),
        ("--num-ports", a.num_ports as u64),
        ("--window-size", a.window_size as u64),
        ("--size", a.size),
        ("--max-rd-atomic", a.max_rd_atomic as u64),
    ])?;
    if a.num_threads > MAX_THREADS {
        return Err(Error::usage(format!(
            "--num-threads {} is above {MAX_THREADS}",
            a.num_threads
        )));
    }
    if a.window_size > MAX_WINDOW {
        return Err(Error::usage(format!(
            "--window-size {} is above {MAX_WINDOW}",
            a.window_size
        )));
    }
    require(!(a.use_uc && a.do_read), || {
        "UC cannot do READs (--use-uc 1 needs --do-read 0)".into()
    })?;
    if !a.do_read {
        require(a.size <= u64::from(a.max_inline), || {
            format!(
                "size {} is above the inline limit of {} bytes for inlined WRITEs (see --max-inline)",
                a.size, a.max_inline
            )
        })?;
    }
    require(a.polling_region() < BUF_SIZE / 10, || {
        format!(
            "window-size × size = {} bytes: the READ polling region must stay below a tenth of \
             the {BUF_SIZE}-byte buffer",
            a.polling_region()
        )
    })?;
    if a.allsig {
        require(a.sq_depth as usize >= a.window_size, || {
            format!(
                "with --allsig 1 a QP may hold the whole window: sq-depth {} must be at least \
                 window-size {}",
                a.sq_depth, a.window_size
            )
        })?;
    } else {
        check_batching(1, a.unsig_batch, a.sq_depth, 1, "--sq-depth").map_err(Error::Config)?;
    }
    Ok(())
}

fn entry() -> Result<()> {
    let a = Args::parse();
    let rank = swarm::resolve_rank(a.process_id, a.num_processes)?;
    validate(&a, &rank)?;
    swarm::run(&a, rank)
}

/// rc-swarm.
pub static BENCH: Benchmark = Benchmark {
    name: "rc-swarm",
    family: Family::Swarm,
    roles: &[RoleSpec::SERVER.named("machine", &[])],
    reports: "machine",
    op: "READ",
    output: Output::Machine,
    suite: &["--num-threads 1 --vms-per-process 2 --size 32 --window-size 8"],
    command: Args::command,
    entry,
};
