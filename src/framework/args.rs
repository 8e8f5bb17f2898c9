//! Flags every benchmark has (clap `Args` structs to flatten into a benchmark's own), and the
//! checks that refuse impossible combinations before any resource is made.

use std::time::Duration;

use clap::Args;

use crate::control::Attention;
use crate::counters::Tolerance;
use crate::error::{Error, Result};
use crate::hot::{check_batching, Reap, UnsignaledCounter};
use crate::mem::{HugePolicy, Placement};
use crate::registry::WaitOptions;
use crate::verbs::{PathQos, Port};

/// Parses the original suite's numeric booleans (`--is-client 1`).
pub fn flag01(s: &str) -> std::result::Result<bool, String> {
    match s {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(format!("'{s}' is not 0 or 1")),
    }
}

/// Parses `--reap`: `eager` (the original's one signaled WR in flight) or `lazy` (fill the send
/// queue, reap in bulk when full, as perftest).
pub fn parse_reap(s: &str) -> std::result::Result<crate::hot::Reap, String> {
    match s {
        "eager" => Ok(crate::hot::Reap::Eager),
        "lazy" => Ok(crate::hot::Reap::Lazy),
        _ => Err(format!("'{s}' is not eager or lazy")),
    }
}

/// Help text of `--reap`, shared by every selectively-signaled sender.
pub const REAP_HELP: &str = "When send completions are reaped: eager (the original: one signaled WR in flight, \
its CQE reaped before the next signaled WR, so < 2 x unsig_batch WRs in flight) or lazy (perftest's: \
queue_depth / unsig_batch - 1 signaled WRs in flight, all arrived CQEs reaped with one poll when the \
send queue is full)";

/// Flags shared by all benchmarks (new in this suite; the original had none of them).
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Stop after SECS seconds and print the summary [default: run until SIGINT/SIGTERM, as the
    /// original does]
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    pub duration: Option<f64>,
    /// RDMA device to use (as `ibv_devices` names it) [default: the --port-index-th ACTIVE port
    /// across all devices, libhrd's rule]
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,
    /// libhrd's port index: the N-th ACTIVE port across all devices (with --device: that device's
    /// N-th port). The multi-port benchmarks call it --base-port-index
    #[arg(long, aliases = ["port_index", "base-port-index", "base_port_index"], default_value_t = 0, value_name = "N")]
    pub port_index: usize,
    /// GID index for RoCE [default: the port's RoCE v2 IPv4-mapped GID]
    #[arg(long, alias = "gid_index", value_name = "N")]
    pub gid_index: Option<u32>,
    /// QP registry (memcached) [default: $HRD_REGISTRY_IP, else 127.0.0.1; port 11211]
    #[arg(long, value_name = "HOST[:PORT]")]
    pub registry: Option<String>,
    /// Hugepage-backed buffers: auto (fall back with a warning), require, or off
    #[arg(long, default_value = "auto", value_name = "POLICY")]
    pub hugepages: HugePolicy,
    /// Bind buffers to this NUMA node (with --hugepages auto, a node short of free hugepages
    /// gets ordinary pages on it and one warning; with require, the run is refused)
    #[arg(long, alias = "numa_node", value_name = "N")]
    pub numa_node: Option<u32>,
    /// Also print one JSON object per line (per-thread rates, then a summary)
    #[arg(long)]
    pub json: bool,
    /// Check the data that moved once the run ends (WRITE/READ contents, SEND immediates)
    #[arg(long, default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub verify: bool,
    /// Stop each counting thread after N operations (like perftest's -n) [default: no limit]
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub iters: Option<u64>,
    /// Prefix every registry key with NAME, so that independent runs share one memcached without
    /// seeing each other [default: no prefix, libhrd's keys]
    #[arg(
        long,
        alias = "run_name",
        env = "RDMA_BENCH_RUN_NAME",
        value_name = "NAME"
    )]
    pub run_name: Option<String>,
    /// Seconds to wait for peers in the registry before giving up
    #[arg(
        long,
        alias = "connect_timeout",
        default_value_t = 60,
        value_name = "SECS",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub connect_timeout: u64,
    /// Service level of every QP's path, 0-15 (InfiniBand's SL; some RoCE drivers map it to a
    /// VLAN priority)
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=15))]
    pub sl: u8,
    /// Traffic class in every packet's GRH, 0-255 (RoCE v2: the IP header's TOS byte, DSCP × 4 +
    /// ECN: 184 is DSCP 46, EF; 104 is DSCP 26, a common lossless class)
    #[arg(long, alias = "traffic_class", default_value_t = 0, value_name = "N")]
    pub traffic_class: u8,
    /// Flow label in every packet's GRH, 20 bits (0-1048575)
    #[arg(long, alias = "flow_label", default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=0xF_FFFF))]
    pub flow_label: u32,
    /// Hop limit in every packet's GRH (InfiniBand's with a GRH, RoCE v1). RoCE v2 takes its IP
    /// TTL from the kernel's route to the peer instead, and refuses a value other than 64
    #[arg(long, alias = "hop_limit", default_value_t = crate::verbs::defaults::HOP_LIMIT, value_name = "N")]
    pub hop_limit: u8,
    /// P_Key table index every QP takes
    #[arg(long, alias = "pkey_index", default_value_t = 0, value_name = "N")]
    pub pkey_index: u16,
    /// RC's local ACK timeout exponent: each try waits 4.096 µs × 2^N, 7 retries (libhrd's 14:
    /// about 67 ms a try, half a second in all; 18 rides out a 3 s link flap; 0 waits forever)
    #[arg(long, alias = "qp_timeout", default_value_t = crate::verbs::defaults::TIMEOUT, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=31))]
    pub qp_timeout: u8,
    /// Stability mode: every SECS seconds, write each counting thread's rate over the interval
    /// to --stats-file, and judge drift at the end [default with --stats-file: 1]
    #[arg(long, alias = "stats_interval", value_name = "SECS", value_parser = positive_secs, requires = "stats_file")]
    pub stats_interval: Option<f64>,
    /// Stability mode's CSV (`unix_time_s,elapsed_s,thread,interval_s,ops,mops`, flushed every
    /// row); the summary flags drift of the total rate beyond 5 % from the first to the last
    /// tenth of the run, or a coefficient of variation beyond 10 %. Written by a counting side
    /// only (a passive side ignores it); locked while written, so a second counting process
    /// given the same name writes NAME.<role>.csv instead
    #[arg(long, alias = "stats_file", value_name = "FILE.csv")]
    pub stats_file: Option<std::path::PathBuf>,
    /// The fabric's counters (hw_counters, port counters, the netdev's statistics) are read at
    /// the start and end of the measurement; the result is questionable when retransmission,
    /// RNR, link or fatal counters moved. CLASS=N lets a class move by N (CLASS=off: report
    /// only); classes: retransmission, rnr, congestion, link, fatal, other
    #[arg(long, alias = "counter_tolerance", value_name = "CLASS=N,...", value_parser = Tolerance::parse, default_value = "")]
    pub counter_tolerance: Tolerance,
    /// Keep the environment as it is. By default the variables the original's scripts export
    /// for the provider in use are set where you have not set them (mlx5:
    /// MLX5_SINGLE_THREADED=1, MLX_QP_ALLOC_TYPE and MLX_CQ_ALLOC_TYPE=PREFER_HUGE; mlx4:
    /// MLX4_SINGLE_THREADED=1; other providers read none); the run header and the summary's
    /// JSON say which were in effect
    #[arg(long)]
    pub no_provider_env: bool,
}

/// Parses a count that is at least 1, with the suffixes of [`crate::units::count`].
pub fn at_least_one(s: &str) -> std::result::Result<u64, String> {
    match crate::units::count::<u64>(s)? {
        0 => Err("0 is not a count: it takes 1 or more".into()),
        n => Ok(n),
    }
}

/// Parses a positive, finite number of seconds.
pub fn positive_secs(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

impl CommonArgs {
    /// Where buffers go.
    pub fn placement(&self) -> Placement {
        Placement {
            huge: self.hugepages,
            numa_node: self.numa_node,
        }
    }
    /// Stability mode's file and interval, when asked for.
    pub fn stability(&self) -> Option<(&std::path::Path, f64)> {
        let file = self.stats_file.as_deref()?;
        Some((file, self.stats_interval.unwrap_or(1.0)))
    }
    /// Refuses stability mode in a benchmark that does not count operations per thread.
    pub fn refuse_stability(&self, bench: &str) -> Result<()> {
        match self.stats_file {
            Some(_) => Err(Error::config(format!(
                "{bench} measures latency windows, not per-thread rates: --stats-file/--stats-interval \
                 (stability mode) is for the rate benchmarks"
            ))),
            None => Ok(()),
        }
    }
    /// Operations after which a counting thread stops.
    pub fn op_limit(&self) -> u64 {
        self.iters.unwrap_or(u64::MAX)
    }
    /// How to wait for a peer in the registry (a stop request ends the wait).
    pub fn wait(&self, attention: Attention) -> WaitOptions {
        WaitOptions {
            timeout: Duration::from_secs(self.connect_timeout),
            stop: Some(attention),
            ..WaitOptions::default()
        }
    }
    /// Connects to the registry (`--registry`, `--run-name`).
    pub fn registry(&self) -> Result<std::sync::Arc<crate::registry::Registry>> {
        crate::registry::Registry::connect_named(self.registry.as_deref(), self.run_name.as_deref())
    }
    /// Opens the port of libhrd's `port_index` (on `--device` if given) with `--gid-index`,
    /// the QoS flags and `--pkey-index`.
    pub fn open_port(&self, port_index: usize) -> Result<Port> {
        let port = Port::open_by(self.device.as_deref(), port_index, self.gid_index)?
            .with_ack_timeout(self.qp_timeout);
        if port.context().is_iwarp() {
            return Err(crate::verbs::iwarp::needs_rdma_cm(port.context().name()));
        }
        let qos = PathQos {
            sl: self.sl,
            traffic_class: self.traffic_class,
            flow_label: self.flow_label,
            hop_limit: self.hop_limit,
        };
        if qos.hop_limit != crate::verbs::defaults::HOP_LIMIT && port.is_roce_v2() {
            return Err(Error::config(format!(
                "--hop-limit {}: {}:{} sends RoCE v2, whose hop limit (the IP TTL) the kernel \
                 takes from its route to the peer: set it there (`ip route replace PEER/32 dev \
                 NETDEV hoplimit N`, or sysctl net.ipv4.ip_default_ttl)",
                qos.hop_limit,
                port.context().name(),
                port.num()
            )));
        }
        let port = port.with_qos(qos).map_err(|e| {
            Error::config(format!(
                "--traffic-class, --flow-label and --hop-limit: {e}"
            ))
        })?;
        check_pkey_index(port, self.pkey_index, "--pkey-index")
    }
    /// Checks the common flags.
    pub fn check(&self) -> Result<()> {
        // --duration, --iters and --connect-timeout are range-checked by their parsers (exit 2).
        if let Some(n) = self.numa_node {
            // Without NUMA support the kernel lists no nodes, and there is node 0 only.
            let nodes = crate::mem::numa_nodes().unwrap_or_else(|| vec![0]);
            if !nodes.contains(&n) {
                let list: Vec<String> = nodes.iter().map(u32::to_string).collect();
                return Err(Error::config(format!(
                    "--numa-node {n}: this host has no NUMA node {n} (its nodes: {}; numactl -H)",
                    list.join(", ")
                )));
            }
        }
        if let Some(file) = &self.stats_file {
            let dir = match file.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => std::path::Path::new("."),
            };
            if !dir.is_dir() {
                return Err(Error::usage(format!(
                    "--stats-file {}: directory {} does not exist",
                    file.display(),
                    dir.display()
                )));
            }
        }
        // An iWARP device cannot run these benchmarks at all: said before anything starts. A
        // device that does not open is left to the port's own error.
        let ctx = match &self.device {
            Some(d) => crate::verbs::Context::open(d).ok(),
            None => crate::verbs::Context::open_port_index(self.port_index)
                .ok()
                .map(|(c, _)| c),
        };
        if let Some(ctx) = ctx.filter(|c| c.is_iwarp()) {
            return Err(crate::verbs::iwarp::needs_rdma_cm(ctx.name()));
        }
        Ok(())
    }
}

/// `port` with P_Key index `index` (the flag `flag`), if its P_Key table has that entry.
pub fn check_pkey_index(port: Port, index: u16, flag: &str) -> Result<Port> {
    let (name, num, len) = (
        port.context().name().to_string(),
        port.num(),
        port.attr().pkey_tbl_len,
    );
    port.with_pkey_index(index).ok_or_else(|| {
        Error::config(format!(
            "{flag} {index}: the P_Key table of {name}:{num} has {len} entries (0..={})",
            len.max(1) - 1
        ))
    })
}

/// Refuses a count below 1 (each `(flag, value)` as the user types the flag): outside the flag's
/// range, so a usage error (exit 2) whatever the host.
pub fn counts_at_least_one(counts: &[(&str, u64)]) -> Result<()> {
    match counts.iter().find(|(_, v)| *v == 0) {
        Some((flag, _)) => Err(Error::usage(format!("{flag} 0: it must be at least 1"))),
        None => Ok(()),
    }
}

/// Refuses `cond` with `msg`.
pub fn require(cond: bool, msg: impl FnOnce() -> String) -> Result<()> {
    if cond {
        Ok(())
    } else {
        Err(Error::config(msg()))
    }
}

/// The inline rule: inlined WRITEs/SENDs carry at most `max_inline` bytes.
pub fn check_inline(size: u64, max_inline: u32, what: &str) -> Result<()> {
    require(size <= u64::from(max_inline), || {
        format!("size {size} is above the inline limit of {max_inline} bytes for inlined {what} (see --max-inline)")
    })
}

/// The UD rule: a UD message is one packet, so `size` (the `--size` flag) fits the MTU of the
/// port that sends it (`mtu`, an `ibv_mtu` value, of `whose` port: "rxe0:1", "client-0's port").
pub fn check_ud_size(size: u64, mtu: u32, whose: &str) -> Result<()> {
    let Some(bytes) = crate::verbs::mtu_bytes(mtu) else {
        return Ok(());
    };
    require(size <= u64::from(bytes), || {
        format!(
            "--size {size} is above the {bytes}-byte active MTU of {whose}: a UD message is one \
             packet (a smaller --size, or a larger MTU on the netdev)"
        )
    })
}

/// The byte a side fills its buffer with, so that `--verify` can tell whose data arrived.
pub fn fill_byte(active: bool, global_id: usize) -> u8 {
    (if active { 0x40 } else { 0x80 }) | (global_id as u8 & 0x3f)
}

/// Per-thread port for `--dual-port`: consecutive threads alternate between two ports.
pub fn port_index_for(common: &CommonArgs, dual_port: bool, global_id: usize) -> usize {
    common.port_index + if dual_port { global_id % 2 } else { 0 }
}

/// The selective-signaling and queue flags every sender shares (one declaration, flattened into
/// each benchmark; a benchmark whose original default differs changes it with `mut_arg`).
#[derive(Args, Debug, Clone)]
pub struct QueueArgs {
    /// One signaled WR every N (selective signaling)
    #[arg(long, alias = "unsig_batch", default_value_t = 64, value_parser = crate::units::count::<u32>)]
    pub unsig_batch: u32,
    /// Send queue depth (libhrd's kHrdSQDepth)
    #[arg(long, alias = "queue_depth", default_value_t = 128, value_parser = crate::units::count::<u32>)]
    pub queue_depth: u32,
    /// When send completions are reaped (the text is REAP_HELP).
    #[arg(long, default_value = "eager", value_parser = parse_reap, value_name = "eager|lazy", help = REAP_HELP)]
    pub reap: Reap,
    /// Inline limit requested from the QP (libhrd's kHrdMaxInline)
    #[arg(long, alias = "max_inline", default_value_t = 60, value_parser = crate::units::count::<u32>)]
    pub max_inline: u32,
}

impl QueueArgs {
    /// The selective-signaling counter these flags ask for.
    pub fn counter(&self) -> UnsignaledCounter {
        UnsignaledCounter::with_reap(self.unsig_batch, self.reap, self.queue_depth)
    }
    /// The paper's invariants for a postlist of `postlist` WRs (at most `max_postlist`).
    pub fn check(&self, postlist: u32, max_postlist: u32) -> Result<()> {
        check_batching(
            postlist,
            self.unsig_batch,
            self.queue_depth,
            max_postlist,
            "--queue-depth",
        )
        .map_err(Error::Config)
    }
}

/// The most threads one benchmark process runs: far above a NIC's useful parallelism, and
/// below what an OS refuses to spawn (which would otherwise end the run in a panic).
pub const MAX_THREADS: usize = 1024;

/// Who runs where: the original's thread/role/machine flags, shared by the benchmarks.
#[derive(Args, Debug, Clone)]
pub struct Topology {
    /// Threads in this process (one QP each) [default: 1]
    #[arg(long, alias = "num_threads", value_name = "N", value_parser = crate::units::count::<usize>)]
    pub num_threads: Option<usize>,
    /// 1: alternate threads between two ports
    #[arg(long, alias = "dual_port", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub dual_port: bool,
    /// 1: this process runs the client threads
    #[arg(long, alias = "is_client", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub is_client: bool,
    /// Client machine index (client global ids are machine-id × num-threads + t)
    #[arg(long, alias = "machine_id", default_value_t = 0)]
    pub machine_id: usize,
}

impl Topology {
    /// One thread, as the server or the client (two-party tools).
    pub fn single(is_client: bool) -> Topology {
        Topology {
            num_threads: Some(1),
            dual_port: false,
            is_client,
            machine_id: 0,
        }
    }
    /// Threads of this process (`--num-threads`, default 1).
    pub fn threads(&self) -> usize {
        self.num_threads.unwrap_or(1)
    }
    /// Global id of this process's thread 0.
    pub fn first_id(&self) -> usize {
        if self.is_client {
            self.machine_id * self.threads()
        } else {
            0
        }
    }
    /// "Client" or "Server", as the report lines say.
    pub fn role_name(&self) -> &'static str {
        if self.is_client {
            "Client"
        } else {
            "Server"
        }
    }
    /// Refuses zero threads, and more than [`MAX_THREADS`], before any is spawned.
    pub fn check(&self) -> Result<()> {
        // Outside the flag's own range: a usage error (exit 2), whatever the host.
        counts_at_least_one(&[("--num-threads", self.threads() as u64)])?;
        if self.threads() > MAX_THREADS {
            return Err(Error::usage(format!(
                "--num-threads {} is above {MAX_THREADS}, the threads one process runs (each \
                 drives its own QP and buffer): run more processes (--machine-id) instead",
                self.threads()
            )));
        }
        Ok(())
    }

    /// For the applications, whose servers have thread counts of their own: a client process's
    /// global ids must stay below `clients` (`flag` names that limit), and a server process
    /// takes no `--num-threads` (`servers` says what it runs instead).
    pub fn check_roles(&self, clients: usize, flag: &str, servers: &str) -> Result<()> {
        if self.is_client {
            let last = self.first_id() + self.threads() - 1;
            require(last < clients, || {
                format!(
                    "client {last} (machine-id {} × num-threads {} + t) is beyond {flag} {clients}",
                    self.machine_id,
                    self.threads()
                )
            })
        } else {
            require(self.num_threads.is_none(), || {
                format!("{servers}; --num-threads is for clients")
            })
        }
    }
}
