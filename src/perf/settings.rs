//! A test's settings, resolved from perftest's flags as perftest resolves them (its
//! `force_dependecies`): per-tool defaults, the combinations it refuses, the adjustments it makes
//! without a word. Pure: every rule here is checked on the host, before any resource exists.

use super::args::PerfArgs;
use super::{Test, Tool, Verb};
use crate::error::{Error, Result};
use crate::verbs::QpType;

/// perftest's largest size, the top of a `-a` sweep (MAX_SIZE).
pub const MAX_SIZE: u64 = 8 << 20;
/// perftest's iteration bounds (MIN_ITER, MAX_ITER).
const ITERS_RANGE: (u64, u64) = (5, 100_000_000);
/// perftest's largest inline request (MAX_INLINE).
const MAX_INLINE: u64 = 912;
/// perftest's largest inline request over UD (MAX_INLINE_UD).
const MAX_INLINE_UD: u64 = 884;
/// perftest turns off the peak for iteration runs longer than this (its tposted/tcompleted
/// arrays would be large).
const PEAK_ITERS_LIMIT: u64 = 20_000;

/// The atomic operation of the atomic tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicType {
    /// Fetch-and-add of 1 (perftest's default).
    FetchAndAdd,
    /// Compare-and-swap of 0 with 0.
    CmpAndSwap,
}

impl AtomicType {
    /// perftest's name.
    pub fn name(self) -> &'static str {
        match self {
            AtomicType::FetchAndAdd => "FETCH_AND_ADD",
            AtomicType::CmpAndSwap => "CMP_AND_SWAP",
        }
    }
}

/// `--output`: one number per size instead of perftest's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The average bandwidth (MB/s, or Gb/s with --report_gbits).
    Bandwidth,
    /// The message rate (Mpps).
    MessageRate,
    /// The average latency (usec, or cycles with -C).
    Latency,
}

/// `--force-link`: the link layer the port is taken to have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForcedLink {
    /// InfiniBand: LID addressing unless -x.
    Ib,
    /// Ethernet: GID addressing.
    Ethernet,
}

/// How long a test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// This many iterations per QP.
    Iters(u64),
    /// Seconds, of which `margin` at each end are not measured.
    Duration {
        /// Total seconds.
        secs: u64,
        /// Unmeasured seconds at each end.
        margin: u64,
    },
}

/// Everything a run needs to know, resolved and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Which test.
    pub tool: Tool,
    /// `--use-srq` was given (the information block says so on both sides).
    pub use_srq: bool,
    /// This side takes its RECVs from a shared receive queue of `rx_depth` entries.
    pub srq_here: bool,
    /// `--mr_per_qp`: each QP's buffer is an MR of its own.
    pub mr_per_qp: bool,
    /// `-g`: the multicast group this side receives on, when it receives (`-M`, or perftest's
    /// default, one more in the last byte on the client). The QP type is then UD.
    pub mcast_group: Option<crate::verbs::Gid>,
    /// True on the side that posts (perftest's CLIENT machine): the one given a server to
    /// connect to, or with `--reversed` the other. The TCP exchange keeps its own roles.
    pub is_client: bool,
    /// The sizes to run, in order (one, or 2 … 8 MiB with `-a`).
    pub sizes: Vec<u64>,
    /// The size buffers are laid out for (the largest of `sizes`).
    pub alloc_size: u64,
    /// `-s` was given (over UD a larger size than the MTU is then an error, not clamped).
    pub explicit_size: bool,
    /// Iterations or duration.
    pub length: Length,
    /// Send queue depth.
    pub tx_depth: u32,
    /// Receive queue depth (SEND tests).
    pub rx_depth: u32,
    /// QPs (BW tests).
    pub qps: u32,
    /// WRs per doorbell.
    pub post_list: u32,
    /// One signaled WR per this many.
    pub cq_mod: u32,
    /// `-I` as given (None: the device's default, resolved when the device is open).
    pub inline_request: Option<u32>,
    /// `-o` as given (None: the device maximum).
    pub out_reads_request: Option<u32>,
    /// The atomic operation.
    pub atomic: AtomicType,
    /// No peak bandwidth.
    pub no_peak: bool,
    /// Gb/s instead of MB/s.
    pub gbits: bool,
    /// Latency in cycles.
    pub cycles: bool,
    /// Print the unsorted samples.
    pub unsorted: bool,
    /// Print the sorted samples.
    pub histogram: bool,
    /// Requested path MTU (`ibv_mtu` value 1..=5).
    pub mtu: Option<u32>,
    /// JSON output file.
    pub json_file: Option<String>,
    /// `-R`: QPs and exchange through RDMA CM.
    pub rdma_cm: bool,
    /// `-z` or `-R`: the exchange runs over RDMA CM.
    pub exchange_over_cm: bool,
    /// RC, UC or UD.
    pub qp_type: QpType,
    /// Warm-up posts before each measured size.
    pub warm_up: bool,
    /// `-b`: both sides post.
    pub duplex: bool,
    /// `--run_infinitely`: a row every `-D` seconds until stopped.
    pub infinite: bool,
    /// `--report-both`: each side's table too.
    pub report_both: bool,
    /// `-e`: sleep on completion events, on this completion vector.
    pub events: Option<u32>,
    /// `--cpu_util` in a `-D` run: the CPU_Util[%] column.
    pub cpu_util: bool,
    /// The QoS and path flags.
    pub qos: super::qos::Qos,
    /// Lines perftest prints when it adjusts a setting (printed before the run, as it does).
    pub notices: Vec<String>,
    /// The rate limiter (`--rate_limit` and its companions).
    pub rate: Option<super::rate::RateLimit>,
    /// RECVs per post (`--recv_post_list`), chained.
    pub recv_post_list: u32,
    /// `--output`: one number per size, nothing else of perftest's decoration.
    pub output: Option<Output>,
    /// `-w`: the least average bandwidth that passes (in the printed unit).
    pub limit_bw: Option<f64>,
    /// `-y`: the least message rate that passes (Mpps).
    pub limit_msgrate: Option<f64>,
    /// `--wait_destroy`: seconds between the end of the test and the release of its resources.
    pub wait_destroy: u64,
    /// `--latency_gap`: microseconds of busy wait before each ping.
    pub latency_gap_us: u64,
    /// `--ipv6`: the picked source GID is an IPv6 one where the port has one.
    pub prefer_ipv6: bool,
    /// `--force-link`.
    pub force_link: Option<ForcedLink>,
    /// `--dlid`: the destination LID of every path.
    pub dlid: Option<u16>,
    /// `--odp`: the MR is registered on demand.
    pub odp: bool,
    /// `--dont_xchg_versions`: no exchange of versions, sizes and MTU.
    pub exchange_versions: bool,
    /// `--source_ip`: the local address of the connection to the peer.
    pub source_ip: Option<std::net::IpAddr>,
    /// `--ipv6-addr`: the exchange (TCP, or RDMA CM with -R) over IPv6.
    pub family: super::family::Family,
    /// `--mmap FILE` and `--mmap-offset`: the buffer is this file's, from this offset.
    pub mmap: Option<(String, u64)>,
}

/// perftest's default multicast group (MCG_GID): ff01:0:2:c985:: on the server, with one
/// more in the last byte on the client, so that a latency test's two sides listen on two groups.
pub fn default_mgid(client: bool) -> crate::verbs::Gid {
    let mut g = [255, 1, 0, 0, 0, 2, 201, 133, 0, 0, 0, 0, 0, 0, 0, 0];
    if client {
        g[15] += 1;
    }
    crate::verbs::Gid(g)
}

/// `-M`'s group in perftest's form: 16 numbers (decimal, or 0x… hex), separated by ':'.
fn parse_mgid(s: &str) -> Result<crate::verbs::Gid> {
    let bytes: Vec<u8> = s
        .split(':')
        .map(|b| {
            super::args::parse_number(b.trim())
                .ok()
                .and_then(|n| u8::try_from(n).ok())
        })
        .collect::<Option<_>>()
        .unwrap_or_default();
    let raw: [u8; 16] = bytes.try_into().map_err(|_| {
        Error::config(format!(
            "-M/--MGID {s:?}: give 16 numbers of 0 to 255 separated by ':', e.g. \
             0:0:0:0:0:0:0:0:0:0:255:255:239:1:1:1"
        ))
    })?;
    if !crate::verbs::Gid(raw).is_multicast() {
        return Err(Error::config(format!(
            "-M/--MGID {s:?} is not a multicast group: an IPv6 one starts with 255, an \
             IPv4-mapped one is 0:…:0:255:255 then 224 to 239"
        )));
    }
    Ok(crate::verbs::Gid(raw))
}

pub(super) fn refuse(msg: &str) -> Error {
    Error::config(msg.to_string())
}

/// `v`, the value of `flag`, within perftest's range for it (`what`: perftest's own words).
fn in_range(v: u64, lo: u64, hi: u64, flag: &str, what: &str) -> Result<u32> {
    if v < lo || v > hi {
        return Err(Error::usage(format!(
            "{flag} {v}: {what} should be between {lo} and {hi}"
        )));
    }
    Ok(v as u32)
}

impl Settings {
    /// Resolves `a` for `tool`.
    pub fn resolve(tool: Tool, a: &PerfArgs) -> Result<Settings> {
        let bw = tool.test == Test::Bw;
        let verb = tool.verb;
        let qp_type = match a.connection.as_str() {
            // perftest's -g runs on UD whatever -c says (its information block says so).
            _ if a.mcg && verb == Verb::Send => QpType::Ud,
            "RC" => QpType::Rc,
            "UC" => {
                if a.rdma_cm {
                    return Err(refuse("UC is not supported in librdmacm"));
                }
                if matches!(verb, Verb::Read | Verb::Atomic) {
                    return Err(refuse("UC connection not possible in READ/ATOMIC verbs"));
                }
                QpType::Uc
            }
            "UD" => {
                if verb != Verb::Send {
                    return Err(refuse("UD connection only possible in SEND verb"));
                }
                QpType::Ud
            }
            other => {
                return Err(Error::config(format!(
                    "invalid connection type {other:?}: RC, UC or UD"
                )))
            }
        };
        refuse_combinations(tool, a)?;
        let output = match a.output.as_deref() {
            None => None,
            Some("bandwidth") if bw => Some(Output::Bandwidth),
            Some("message_rate") if bw => Some(Output::MessageRate),
            Some("latency") if !bw => Some(Output::Latency),
            Some("bandwidth" | "message_rate") => {
                return Err(refuse("Output verbosity level for LAT can be: latency"))
            }
            Some("latency") => {
                return Err(refuse(
                    "Output verbosity level for BW can be: bandwidth, message_rate",
                ))
            }
            Some(_) => return Err(refuse(
                "Invalid verbosity level output flag. Please use bandwidth, latency, message_rate",
            )),
        };
        let force_link = match a.force_link.as_deref() {
            None => None,
            Some(l) if l.len() >= 2 && l[..2].eq_ignore_ascii_case("IB") => Some(ForcedLink::Ib),
            Some(l) if l.len() >= 8 && l[..8].eq_ignore_ascii_case("Ethernet") => {
                Some(ForcedLink::Ethernet)
            }
            Some(_) => return Err(refuse("Invalid link layer value should be IB or ETHERNET.")),
        };
        let dlid = match a.dlid {
            None | Some(0) => None,
            Some(l) if l > u64::from(u16::MAX) => {
                return Err(Error::config(format!(
                    "--dlid {l}: a LID is 16 bits (1 to 65535)"
                )))
            }
            Some(l) => Some(l as u16),
        };
        let family = super::family::Family::from_flag(a.ipv6_addr);
        let source_ip = a
            .source_ip
            .as_deref()
            .map(|ip| family.parse_source(ip))
            .transpose()?;
        let qos = super::qos::Qos::resolve(a)?;
        let events = match (a.events, a.vector) {
            (false, _) => None,
            (true, v) => Some(in_range(v.unwrap_or(0), 0, 2048, "-X/--vector", "EQN")?),
        };
        let atomic = match a.atomic_type.as_deref() {
            None | Some("FETCH_AND_ADD") => AtomicType::FetchAndAdd,
            Some("CMP_AND_SWAP") => AtomicType::CmpAndSwap,
            Some(_) => {
                return Err(refuse(
                    "Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}",
                ))
            }
        };
        if let Some(s) = a.size {
            in_range(s, 1, u64::from(u32::MAX / 2), "-s/--size", "Message Size")?;
        }
        let default_size = match (verb, bw) {
            (Verb::Atomic, _) => 8,
            (_, true) => 65536,
            (_, false) => 2,
        };
        let sizes: Vec<u64> = if a.all {
            (1..24).map(|i| 1u64 << i).collect()
        } else {
            vec![a.size.unwrap_or(default_size)]
        };
        let alloc_size = if a.all { MAX_SIZE } else { sizes[0] };
        // --run_infinitely reports every -D seconds (5 by default), its windows without margins.
        let duration = match (a.run_infinitely, a.duration) {
            (true, None) => Some(5),
            (_, d) => d,
        };
        let length = match duration {
            Some(0) => {
                return Err(Error::usage(
                    "-D/--duration 0: Duration period must be positive",
                ))
            }
            Some(secs) => {
                // perftest's are C ints.
                in_range(secs, 1, i32::MAX as u64, "-D/--duration", "Duration")?;
                let margin = if a.run_infinitely {
                    0
                } else {
                    a.margin.unwrap_or(secs / 4)
                };
                in_range(margin, 0, i32::MAX as u64, "-f/--margin", "Margin")?;
                if secs <= 2 * margin {
                    return Err(refuse("please check that DURATION > 2*MARGIN"));
                }
                Length::Duration { secs, margin }
            }
            None => {
                let def = if tool == Tool::WRITE_BW { 5000 } else { 1000 };
                let n = a.iters.unwrap_or(def);
                in_range(
                    n,
                    ITERS_RANGE.0,
                    ITERS_RANGE.1,
                    "-n/--iters",
                    "Iteration num",
                )?;
                Length::Iters(n)
            }
        };
        let mut tx_depth = in_range(
            a.tx_depth.unwrap_or(if bw { 128 } else { 1 }),
            1,
            15000,
            "-t/--tx-depth",
            "Tx depth",
        )?;
        let mut rx_depth = in_range(
            a.rx_depth
                .unwrap_or(if verb == Verb::Send { 512 } else { 1 }),
            1,
            16384,
            "-r/--rx-depth",
            "Rx depth",
        )?;
        let qps = in_range(a.qps.unwrap_or(1), 1, 16384, "-q/--qp", "Number of QPs")?;
        let post_list = match a.post_list {
            None => 1,
            Some(0) => {
                return Err(Error::usage(
                    "-l/--post_list 0: Post list size must be positive",
                ))
            }
            Some(_) if !bw => return Err(refuse("Post list is supported in BW tests only")),
            Some(p) => in_range(p, 1, 15000, "-l/--post_list", "Post list size")?,
        };
        let recv_post_list = match a.recv_post_list {
            None => 1,
            Some(0) => {
                return Err(Error::usage(
                    "--recv_post_list 0: Receive post list size must be positive",
                ))
            }
            Some(r) if r > 1 && !bw => {
                return Err(refuse("Receive post list is supported in BW tests only"))
            }
            Some(r) => in_range(r, 1, 16384, "--recv_post_list", "Receive post list size")?,
        };
        let mut notices = Vec::new();
        if let Length::Iters(n) = length {
            if recv_post_list > 1 && n % u64::from(recv_post_list) != 0 {
                return Err(refuse(
                    "Number of iterations must be a multiple of receive post list size",
                ));
            }
            tx_depth = tx_depth.min(n as u32);
            if verb == Verb::Send {
                rx_depth = rx_depth.min(n as u32);
            }
            // An unreliable SEND finds a RECV or is lost: perftest posts them all up front.
            if qp_type != QpType::Rc && a.rx_depth.is_none() {
                rx_depth = n.min(16000) as u32;
            }
            if post_list > 1 && n % u64::from(post_list) != 0 {
                return Err(refuse(
                    "Number of iterations must be a multiple of post list size",
                ));
            }
        }
        if post_list > tx_depth {
            return Err(Error::config(format!(
                "post list {post_list} is deeper than the send queue (-t {tx_depth}): nothing \
                 could be posted (perftest would hang)"
            )));
        }
        let mut cq_mod = match a.cq_mod {
            Some(q) => in_range(q, 1, 1024, "-Q/--cq-mod", "CQ moderation")?,
            None => 100,
        };
        if sizes[0] > 8192 && !a.all && qp_type != QpType::Ud && events.is_none() {
            if a.cq_mod.is_none() {
                cq_mod = 1;
            } else if cq_mod > 1 {
                notices.push(
                    "Warning: Large message requested and CQ moderation enabled\n\
                     Warning: It can lead to inaccurate results"
                        .into(),
                );
            }
        }
        cq_mod = cq_mod.min(tx_depth);
        if post_list > 1 {
            if a.cq_mod.is_none() {
                cq_mod = post_list;
                notices.push(
                    "Post List requested - CQ moderation will be the size of the post list".into(),
                );
            } else if post_list % cq_mod != 0 {
                return Err(refuse("Post list size must be a multiple of CQ moderation"));
            }
        }
        if a.use_srq && qps > rx_depth {
            return Err(refuse(
                "Using SRQ depth should be greater than number of QPs.",
            ));
        }
        if verb == Verb::Send && recv_post_list > rx_depth {
            return Err(Error::config(format!(
                "--recv_post_list {recv_post_list} is longer than the receive queue (-r \
                 {rx_depth}): no chain would fit"
            )));
        }
        let rate = super::rate::RateLimit::resolve(tool, a, tx_depth)?;
        let cpu_util = a.cpu_util && matches!(length, Length::Duration { .. });
        if a.cpu_util && !cpu_util {
            notices.push(" CPU Utilization works only with Duration mode.".into());
        }
        // perftest's work-around: an even number of RECVs.
        if verb == Verb::Send && rx_depth % 2 == 1 && !a.all && matches!(length, Length::Iters(_)) {
            rx_depth += 1;
        }
        let inline_request = match a.inline_size {
            Some(i) if qp_type == QpType::Ud && i > MAX_INLINE_UD => {
                in_range(i, 0, MAX_INLINE, "-I/--inline_size", "Max inline")?;
                notices.push(format!(
                    "Setting inline size to {MAX_INLINE_UD} (Max inline size in UD)"
                ));
                Some(MAX_INLINE_UD as u32)
            }
            Some(i) => Some(in_range(
                i,
                0,
                MAX_INLINE,
                "-I/--inline_size",
                "Max inline",
            )?),
            None => None,
        };
        // perftest reads 0 as "the device's maximum", as no -o at all.
        let out_reads_request = match a.outs {
            Some(0) | None => None,
            Some(o) => Some(in_range(o, 1, 255, "-o/--outs", "Outstanding reads")?),
        };
        let mtu = match a.mtu {
            None => None,
            Some(m @ (256 | 512 | 1024 | 2048 | 4096)) => {
                Some((m as u32 / 256).trailing_zeros() + 1)
            }
            Some(m) => {
                return Err(Error::config(format!(
                    "Invalid MTU - {m}: choose from 256, 512, 1024, 2048, 4096"
                )))
            }
        };
        // perftest's limit is per QP; ours counts every QP's messages, as the peak's cost grows
        // with their square.
        // perftest's machine: the client posts, unless --reversed makes the server post.
        let posts = a.server.is_some() != a.reversed;
        let no_peak = a.no_peak
            || matches!(length, Length::Duration { .. })
            || matches!(length, Length::Iters(n) if bw && n * u64::from(qps) > PEAK_ITERS_LIMIT)
            || (verb == Verb::Send && bw && !posts && !a.bidirectional);
        Ok(Settings {
            tool,
            is_client: posts,
            sizes,
            alloc_size,
            explicit_size: a.size.is_some(),
            length,
            tx_depth,
            rx_depth,
            qps,
            post_list,
            cq_mod,
            inline_request,
            out_reads_request,
            atomic,
            no_peak,
            gbits: a.report_gbits,
            cycles: a.report_cycles,
            unsorted: a.report_unsorted,
            histogram: a.report_histogram,
            mtu,
            json_file: a.out_json.then(|| {
                a.out_json_file
                    .clone()
                    .unwrap_or("perftest_out.json".into())
            }),
            qos,
            notices,
            rdma_cm: a.rdma_cm,
            exchange_over_cm: a.rdma_cm || a.comm_rdma_cm,
            use_srq: a.use_srq,
            mr_per_qp: a.mr_per_qp,
            mcast_group: match (a.mcg, &a.mgid) {
                (false, _) => None,
                (true, Some(m)) => Some(parse_mgid(m)?),
                (true, None) => Some(default_mgid(posts)),
            },
            // perftest's receiving sides: both of a latency test, a BW server, -b's both.
            srq_here: a.use_srq && (!bw || !posts || a.bidirectional),
            qp_type,
            // perftest warms up the write, read and atomic BW tests only, and ignores the flag
            // elsewhere (run says so).
            warm_up: a.perform_warm_up && bw && verb != Verb::Send,
            duplex: a.bidirectional,
            infinite: a.run_infinitely,
            report_both: a.report_both,
            events,
            cpu_util,
            recv_post_list,
            rate,
            output,
            limit_bw: a.limit_bw,
            limit_msgrate: a.limit_msgrate,
            wait_destroy: a.wait_destroy.unwrap_or(0),
            latency_gap_us: a.latency_gap.unwrap_or(0),
            prefer_ipv6: a.ipv6,
            force_link,
            dlid,
            odp: a.odp,
            exchange_versions: !a.dont_xchg_versions,
            source_ip,
            family,
            mmap: a.mmap.clone().map(|f| (f, a.mmap_offset.unwrap_or(0))),
        })
    }

    /// Over UD a message must fit the path MTU (`mtu` bytes): a sweep stops there and a default
    /// size shrinks to it (with perftest's notice); a larger `-s` is refused.
    pub fn fit_ud_to_mtu(&mut self, mtu: u64) -> Result<Option<String>> {
        if self.qp_type != QpType::Ud || self.alloc_size <= mtu {
            return Ok(None);
        }
        if self.explicit_size {
            return Err(refuse("Max message size in UD cannot be greater than MTU"));
        }
        if self.sizes.len() > 1 {
            self.sizes.retain(|&s| s <= mtu);
        } else {
            self.sizes = vec![mtu];
        }
        self.alloc_size = mtu;
        Ok(Some(format!(
            " Max msg size in UD is MTU {mtu}\n Changing to this MTU"
        )))
    }

    /// `(secs, margin)` of a `-D` run; None for an iteration run.
    pub fn window(&self) -> Option<(u64, u64)> {
        match self.length {
            Length::Duration { secs, margin } => Some((secs, margin)),
            Length::Iters(_) => None,
        }
    }

    /// Iterations per QP of an iteration run (0 for a duration run).
    pub fn iters(&self) -> u64 {
        match self.length {
            Length::Iters(n) => n,
            Length::Duration { .. } => 0,
        }
    }
}

mod combinations;
use combinations::refuse_combinations;

#[cfg(test)]
mod tests;
