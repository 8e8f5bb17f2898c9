//! perftest's command line: the flags, short and long, with perftest's meanings and per-tool
//! defaults, and the perftest flags we refuse by name instead of ignoring.

use clap::Args;

use super::{Test, Tool, Verb};
use crate::error::{Error, Result};

/// perftest's flags (perftest 4.5 as Debian ships it, protocol 6.06). Every default that differs
/// between tools is left unset here and resolved per tool by [`super::settings::Settings`].
#[derive(Args, Debug, Clone, Default)]
pub struct PerfArgs {
    /// Server to connect to (this side is the client); none: this side is the server
    #[arg(value_name = "SERVER")]
    pub server: Option<String>,
    /// RDMA device [default: the first device with an ACTIVE port]
    #[arg(short = 'd', long = "ib-dev", value_name = "DEV")]
    pub ib_dev: Option<String>,
    /// Port number on the device (-d, or the first device with an ACTIVE port), as perftest
    #[arg(
        short = 'i',
        long = "ib-port",
        default_value_t = 1,
        value_name = "PORT"
    )]
    pub ib_port: u8,
    /// Source GID index [default on RoCE: perftest's pick, an IPv4-mapped RoCE v2 GID]
    #[arg(short = 'x', long = "gid-index", value_name = "IDX")]
    pub gid_index: Option<u32>,
    /// TCP port of the exchange with the peer
    #[arg(short = 'p', long = "port", default_value_t = 18515)]
    pub port: u16,
    /// Message size in bytes (K and M suffixes) [default: 65536 for BW tests, 2 for latency, 8 for
    /// atomics]
    #[arg(short = 's', long = "size", value_parser = parse_size)]
    pub size: Option<u64>,
    /// Run every size from 2 B to 8 MiB (powers of two) over one connection
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Iterations [default: 5000 for write-bw, 1000 otherwise]
    #[arg(short = 'n', long = "iters", value_parser = parse_number)]
    pub iters: Option<u64>,
    /// Run for this many seconds instead of a number of iterations
    #[arg(short = 'D', long = "duration", value_parser = parse_number)]
    pub duration: Option<u64>,
    /// Seconds left out of the measurement at each end of a -D run [default: duration / 4]
    #[arg(short = 'f', long = "margin", value_parser = parse_number)]
    pub margin: Option<u64>,
    /// Send queue depth [default: 128 for BW tests, 1 for latency]
    #[arg(short = 't', long = "tx-depth", value_parser = parse_number)]
    pub tx_depth: Option<u64>,
    /// Receive queue depth [default: 512 for SEND tests, 1 otherwise]
    #[arg(short = 'r', long = "rx-depth", value_parser = parse_number)]
    pub rx_depth: Option<u64>,
    /// Number of QPs (BW tests)
    #[arg(short = 'q', long = "qp", value_parser = parse_number)]
    pub qps: Option<u64>,
    /// Transport: RC; UC (WRITE and SEND tests); UD (send-bw, send-lat)
    #[arg(
        short = 'c',
        long = "connection",
        default_value = "RC",
        value_name = "RC|UC|UD"
    )]
    pub connection: String,
    /// Post WRs in chains of this many per doorbell (BW tests)
    #[arg(short = 'l', long = "post_list", value_parser = parse_number)]
    pub post_list: Option<u64>,
    /// One signaled completion per this many WRs [default: 100; 1 above 8 KiB; the post list
    /// with -l]
    #[arg(short = 'Q', long = "cq-mod", value_parser = parse_number)]
    pub cq_mod: Option<u64>,
    /// Largest payload sent inline (WRITE and SEND tests) [default: perftest's for the device;
    /// 0 on devices perftest does not know, such as Soft-RoCE]
    #[arg(short = 'I', long = "inline_size", value_parser = parse_number)]
    pub inline_size: Option<u64>,
    /// Outstanding READs / atomics (READ and atomic tests) [default: the device maximum]
    #[arg(short = 'o', long = "outs", value_parser = parse_number)]
    pub outs: Option<u64>,
    /// Atomic operation: FETCH_AND_ADD or CMP_AND_SWAP (atomic tests)
    #[arg(short = 'A', long = "atomic_type", value_name = "TYPE")]
    pub atomic_type: Option<String>,
    /// Do not warn when the CPU frequency looks scaled
    #[arg(short = 'F', long = "CPU-freq")]
    pub cpu_freq: bool,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096 [default: the port's active MTU]
    #[arg(short = 'm', long = "mtu", value_parser = parse_number)]
    pub mtu: Option<u64>,
    /// QP ACK timeout exponent (4.096 µs × 2^N)
    #[arg(short = 'u', long = "qp-timeout", default_value_t = 14)]
    pub qp_timeout: u8,
    /// Service level of the QPs' paths, 0-15 (without -R)
    #[arg(short = 'S', long = "sl", value_parser = parse_number)]
    pub sl: Option<u64>,
    /// Traffic class in the GRH, 0-255 (RoCE v2: the IP TOS byte, DSCP × 4 + ECN) (without -R)
    #[arg(long = "tclass", value_parser = parse_number)]
    pub tclass: Option<u64>,
    /// Flow labels in the GRH, given to the QPs round robin (without -R)
    #[arg(long = "flow_label", value_name = "FL0,FL1,...")]
    pub flow_label: Option<String>,
    /// Type of service of the RDMA CM connections, 0-255 (with -R only; the traffic class of
    /// their packets both ways)
    #[arg(short = 'T', long = "tos", value_parser = parse_number)]
    pub tos: Option<u64>,
    /// Raw Ethernet QPs' hop limit: refused unless 64, as perftest refuses it for RC/UC/UD QPs,
    /// whose GRH carries 255 (on RoCE v2 the kernel replaces that with its route's hop limit)
    #[arg(short = 'L', long = "hop_limit", value_parser = parse_number)]
    pub hop_limit: Option<u64>,
    /// Transport retries of the RDMA CM connections, 0-7 (with -R only)
    #[arg(long = "retry_count", value_parser = parse_number)]
    pub retry_count: Option<u64>,
    /// P_Key table index of the QPs
    #[arg(long = "pkey_index", value_parser = parse_number)]
    pub pkey_index: Option<u64>,
    /// Skip the peak bandwidth (BW tests)
    #[arg(short = 'N', long = "noPeak")]
    pub no_peak: bool,
    /// Print every latency sample, unsorted (latency tests)
    #[arg(short = 'U', long = "report-unsorted")]
    pub report_unsorted: bool,
    /// Report latencies in CPU cycles (latency tests)
    #[arg(short = 'C', long = "report-cycles")]
    pub report_cycles: bool,
    /// Print every latency sample, sorted (latency tests)
    #[arg(short = 'H', long = "report-histogrm", alias = "report-histogram")]
    pub report_histogram: bool,
    /// Bandwidth in Gb/s (10^9 bits) instead of MB/s (2^20 bytes)
    #[arg(long = "report_gbits")]
    pub report_gbits: bool,
    /// Write the results as JSON (to --out_json_file, default perftest_out.json)
    #[arg(long = "out_json")]
    pub out_json: bool,
    /// The JSON file of --out_json
    #[arg(long = "out_json_file", value_name = "FILE")]
    pub out_json_file: Option<String>,
    /// Run until stopped, printing a row every -D seconds (5 by default) (BW tests)
    #[arg(long = "run_infinitely")]
    pub run_infinitely: bool,
    /// Reverse the traffic: the server posts and the client is the passive side (BW tests)
    #[arg(long = "reversed")]
    pub reversed: bool,
    /// The receiving side takes its RECVs from one Shared Receive Queue of -r entries (SEND tests)
    #[arg(long = "use-srq")]
    pub use_srq: bool,
    /// Send to a multicast group over UD: the receiving side's QP joins the group, the posting
    /// side sends to it (SEND tests; one QP, not with -b or -R)
    #[arg(short = 'g', long = "mcg")]
    pub mcg: bool,
    /// The group -g joins: 16 numbers separated by ':' (perftest's form; on RoCE v2 over IPv4
    /// an IPv4-mapped group such as 0:0:0:0:0:0:0:0:0:0:255:255:239:1:1:1); default
    /// ff01:0:2:c985::, one more in the last byte on the client (SEND tests)
    #[arg(short = 'M', long = "MGID", value_name = "GID")]
    pub mgid: Option<String>,
    /// Give each QP a buffer and memory region of its own, instead of one MR for all (BW tests)
    #[arg(long = "mr_per_qp")]
    pub mr_per_qp: bool,
    /// Both sides post at once (BW tests); the table sums both directions
    #[arg(short = 'b', long = "bidirectional")]
    pub bidirectional: bool,
    /// With -b, also print each side's own table after the summed one
    #[arg(long = "report-both")]
    pub report_both: bool,
    /// Post and reap one send queue of WRs per QP (one chain with -l) before measuring (write,
    /// read and atomic BW tests)
    #[arg(long = "perform_warm_up")]
    pub perform_warm_up: bool,
    /// Connect the QPs, and run the exchange, through RDMA CM (give the server's IP address of
    /// the RDMA interface)
    #[arg(short = 'R', long = "rdma_cm")]
    pub rdma_cm: bool,
    /// Run the exchange with the peer over an RDMA CM connection instead of TCP (the test QPs
    /// are connected as without it; -R implies it)
    #[arg(short = 'z', long = "comm_rdma_cm")]
    pub comm_rdma_cm: bool,
    /// Sleep on completion events instead of busy-polling (not WRITE tests)
    #[arg(short = 'e', long = "events")]
    pub events: bool,
    /// The completion vector of -e's events (0 to the device's vectors - 1)
    #[arg(short = 'X', long = "vector", value_name = "N", value_parser = parse_number)]
    pub vector: Option<u64>,
    /// Add a CPU_Util[%] column: the host's busy CPU time over the sampled window (-D runs)
    #[arg(long = "cpu_util")]
    pub cpu_util: bool,
    /// Buffers on hugepages (reserve them first: /proc/sys/vm/nr_hugepages)
    #[arg(long = "use_hugepages")]
    pub use_hugepages: bool,
    /// Seconds a client keeps retrying to reach its server (not a perftest flag: perftest tries
    /// once)
    #[arg(long = "connect-timeout", default_value_t = 10, value_name = "SECS")]
    pub connect_timeout: u64,
    /// Report the change of these counters after each result row, as perftest (paths under the
    /// port's sysfs directory, e.g. "counters/port_xmit_data,hw_counters/out_of_buffer")
    #[arg(short = 'W', long = "report-counters", value_name = "LIST")]
    pub report_counters: Option<String>,
    /// Rate limit, in --rate_units (HW unless --rate_limit_type SW; HW takes perftest's static
    /// rates 2.5 … 300 Gb/s or MAX, and falls back to SW on Ethernet) (BW tests)
    #[arg(long = "rate_limit", value_name = "RATE")]
    pub rate_limit: Option<String>,
    /// The limiter: SW (paced posts), HW (a static rate on the path: InfiniBand) or PP (raw
    /// Ethernet only)
    #[arg(long = "rate_limit_type", value_name = "SW|HW|PP")]
    pub rate_limit_type: Option<String>,
    /// Units of --rate_limit: M (MB/s), g (Gb/s, the default) or p (messages per second)
    #[arg(long = "rate_units", value_name = "M|g|p")]
    pub rate_units: Option<String>,
    /// WRs per burst of the SW limiter [default: the send queue depth]
    #[arg(long = "burst_size", value_name = "N", value_parser = parse_number)]
    pub burst_size: Option<u64>,
    /// Packet pacing's typical packet size (PP only, so refused as perftest refuses it)
    #[arg(long = "typical_pkt_size", value_name = "BYTES", value_parser = parse_number)]
    pub typical_pkt_size: Option<u64>,
    /// RECVs posted per ibv_post_recv, chained (send-bw's receiver; BW tests)
    #[arg(long = "recv_post_list", value_name = "N", value_parser = parse_number)]
    pub recv_post_list: Option<u64>,
    /// Print only one number per size: bandwidth or message_rate (BW tests), latency (the average,
    /// latency tests); no banner, information block, addresses or table headers
    #[arg(long = "output", value_name = "bandwidth|message_rate|latency")]
    pub output: Option<String>,
    /// Fail (exit 1) when the average bandwidth is below this (MB/s, or Gb/s with --report_gbits)
    #[arg(short = 'w', long = "limit_bw", value_name = "BW", value_parser = parse_limit)]
    pub limit_bw: Option<f64>,
    /// Fail (exit 1) when the message rate is below this (Mpps)
    #[arg(short = 'y', long = "limit_msgrate", value_name = "MPPS", value_parser = parse_limit)]
    pub limit_msgrate: Option<f64>,
    /// Seconds to wait after the test before the QPs, CQs and MRs are released
    #[arg(long = "wait_destroy", value_name = "SECS", value_parser = parse_number)]
    pub wait_destroy: Option<u64>,
    /// Microseconds to wait before each ping (latency tests; the gap is part of the reported
    /// latency, as perftest's)
    #[arg(long = "latency_gap", value_name = "USECS", value_parser = parse_number)]
    pub latency_gap: Option<u64>,
    /// Post with ibv_post_send (rdma-bench's tools always do; perftest uses ibv_wr_* on mlx5 and
    /// EFA unless given this)
    #[arg(long = "use_old_post_send")]
    pub use_old_post_send: bool,
    /// Prefer an IPv6 GID (not IPv4-mapped) when picking the source GID (no effect with -x)
    #[arg(long = "ipv6")]
    pub ipv6: bool,
    /// Take the port's link layer as IB or Ethernet (Ethernet on an IB port: GRH addressing, as
    /// -x 0)
    #[arg(long = "force-link", value_name = "IB|Ethernet")]
    pub force_link: Option<String>,
    /// Destination LID of every QP's path instead of the peer's (InfiniBand)
    #[arg(long = "dlid", value_name = "LID", value_parser = parse_number)]
    pub dlid: Option<u64>,
    /// Register the buffers with on-demand paging (the device must support ODP for the test's
    /// transport and verbs)
    #[arg(long = "odp")]
    pub odp: bool,
    /// Register the buffers without PCIe relaxed ordering (rdma-bench never asks for it: its
    /// information block says "PCIe relax order: OFF" either way)
    #[arg(long = "disable_pcie_relaxed")]
    pub disable_pcie_relaxed: bool,
    /// Accepted and ignored, as perftest 4.5 ignores it (it has no effect there either)
    #[arg(long = "inline_recv", value_name = "SIZE", value_parser = parse_number)]
    pub inline_recv: Option<u64>,
    /// Skip the exchange of versions, page/cache-line sizes and MTU (both sides must): each side
    /// assumes the peer's are its own
    #[arg(long = "dont_xchg_versions")]
    pub dont_xchg_versions: bool,
    /// Exchange over IPv6 (SYMMETRIC): the TCP channel, or RDMA CM with -R; the server name and
    /// --source_ip are then IPv6 (the default is IPv4, as perftest)
    #[arg(long = "ipv6-addr")]
    pub ipv6_addr: bool,
    /// Local address of the connection to the peer (IPv6 with --ipv6-addr): a client's connection starts from it,
    /// a server listens on it only (TCP exchange, or RDMA CM with -z/-R)
    #[arg(short = 'j', long = "source_ip", value_name = "IP")]
    pub source_ip: Option<String>,
    /// Buffers in this file, mapped shared (its contents are overwritten, as perftest does)
    #[arg(long = "mmap", value_name = "FILE")]
    pub mmap: Option<String>,
    /// Byte offset of the --mmap mapping in the file (a multiple of the page size)
    #[arg(long = "mmap-offset", value_name = "OFFSET", value_parser = parse_number)]
    pub mmap_offset: Option<u64>,
    /// Not a perftest flag: how much each class of the fabric's counters may move before the
    /// result is questionable (CLASS=N or CLASS=off, comma-separated; classes: retransmission,
    /// rnr, congestion, link, fatal, other)
    #[arg(long = "counter-tolerance", value_name = "CLASS=N,...", value_parser = crate::counters::Tolerance::parse)]
    pub counter_tolerance: Option<crate::counters::Tolerance>,
}

/// perftest's numbers: decimal, 0x hex or 0 octal (C's strtol with base 0).
pub fn parse_number(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let parsed = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8)
    } else {
        t.parse()
    };
    parsed.map_err(|_| format!("{s:?} is not a non-negative integer"))
}

/// -w and -y: a non-negative number.
fn parse_limit(s: &str) -> std::result::Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("{s:?} is not a non-negative number")),
    }
}

/// The flags `tool` always refuses (see `settings::combinations`), by argument id: its help
/// does not list them. They still parse, so that the refusal names them as perftest does.
pub fn refused_by(tool: Tool) -> Vec<&'static str> {
    let bw = tool.test == Test::Bw;
    let mut ids = Vec::new();
    if !bw {
        ids.extend([
            "qps",
            "no_peak",
            "bidirectional",
            "report_both",
            "run_infinitely",
            "post_list",
            "reversed",
            "mr_per_qp",
        ]);
    } else {
        ids.extend(["report_unsorted", "report_cycles", "report_histogram"]);
    }
    if !bw || tool.verb == Verb::Send {
        ids.push("perform_warm_up");
    }
    match tool.verb {
        Verb::Read | Verb::Atomic => ids.push("inline_size"),
        _ => ids.push("outs"),
    }
    if tool.verb != Verb::Send {
        ids.extend(["rx_depth", "use_srq", "mcg", "mgid"]);
    }
    if tool.verb != Verb::Atomic {
        ids.push("atomic_type");
    } else {
        ids.extend(["size", "all"]);
    }
    if tool.verb == Verb::Write {
        ids.extend(["events", "vector"]);
    }
    ids
}

/// `cmd` (a perftest tool's subcommand) with the flags `tool` refuses hidden from its help.
pub fn help_for(tool: Tool, cmd: clap::Command) -> clap::Command {
    refused_by(tool)
        .into_iter()
        .fold(cmd, |c, id| c.mut_arg(id, |a| a.hide(true)))
}

/// Sizes take one K (×1024) or M (×1048576) suffix, as perftest's -s does.
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let (num, mult) = match s.trim().as_bytes().last() {
        Some(b'K' | b'k') => (&s.trim()[..s.trim().len() - 1], 1024),
        Some(b'M' | b'm') => (&s.trim()[..s.trim().len() - 1], 1 << 20),
        _ => (s.trim(), 1),
    };
    let n = parse_number(num)?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// perftest flags that rdma-bench does not implement (yet), and why, so that they are refused
/// by name rather than taken for something else or ignored.
const REFUSED: &[(Option<char>, &str, &str)] = &[
    (Some('O'), "dualport", "dual-port mode"),
    (Some('B'), "source_mac", "raw Ethernet"),
    (Some('E'), "dest_mac", "raw Ethernet"),
    (Some('J'), "dest_ip", "raw Ethernet"),
    (Some('K'), "dest_port", "raw Ethernet"),
    (Some('k'), "source_port", "raw Ethernet"),
    (Some('Z'), "server", "raw Ethernet"),
    (Some('P'), "client", "raw Ethernet"),
    (Some('v'), "mac_fwd", "raw Ethernet"),
    (None, "report-per-port", "per-port reports"),
    (None, "use_rss", "raw Ethernet"),
    (None, "ethertype", "raw Ethernet"),
    (None, "use_cuda", "GPU memory"),
    (None, "use_rocm", "GPU memory"),
];

/// Refuses a perftest flag we do not implement, by name, before clap sees the command line
/// (`args` are the subcommand's arguments, without the program and subcommand names).
pub fn refuse_unimplemented(tool: Tool, args: &[String]) -> Result<()> {
    for a in args {
        if a == "--" {
            break;
        }
        let hit = if let Some(long) = a.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            REFUSED.iter().find(|(_, l, _)| *l == name)
        } else if let Some(shorts) = a.strip_prefix('-') {
            // A cluster of short flags (-aF) or a flag with its value attached (-s64): only the
            // first letter is surely a flag.
            shorts
                .chars()
                .next()
                .and_then(|c| REFUSED.iter().find(|(s, _, _)| *s == Some(c)))
        } else {
            None
        };
        if let Some((short, long, what)) = hit {
            let name = match short {
                Some(s) => format!("-{s}/--{long}"),
                None => format!("--{long}"),
            };
            return Err(Error::config(format!(
                "perftest's {name} ({what}) is not implemented in rdma-bench {} yet",
                tool.name()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_as_strtol_base_0() {
        assert_eq!(parse_number("100"), Ok(100));
        assert_eq!(parse_number("0x10"), Ok(16));
        assert_eq!(parse_number("010"), Ok(8));
        assert_eq!(parse_number("0"), Ok(0));
        assert!(parse_number("1e3").is_err());
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("8M"), Ok(8 << 20));
    }

    #[test]
    fn unimplemented_perftest_flags_are_refused_by_name() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let e = refuse_unimplemented(Tool::WRITE_BW, &v(&["-s", "8", "-O"]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "perftest's -O/--dualport (dual-port mode) is not implemented in rdma-bench write-bw yet"
        );
        let e = refuse_unimplemented(Tool::SEND_BW, &v(&["--report-per-port"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("perftest's --report-per-port (per-port reports)"),
            "{e}"
        );
        assert!(refuse_unimplemented(Tool::WRITE_BW, &v(&["-aF", "-s", "-5", "host"])).is_ok());
        assert!(refuse_unimplemented(Tool::WRITE_BW, &v(&["--", "-b"])).is_ok());
    }
}
