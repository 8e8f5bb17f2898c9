//! perftest's output, column for column: the test information block, the address lines, the BW
//! and latency tables; and the same facts as valid JSON.

use super::keys::Dest;
use super::settings::{AtomicType, Settings};
use super::stats::{BwRow, LatencyStats};
use super::{Test, Verb};
use crate::stats::JsonObject;
use crate::verbs::Gid;

/// perftest's RESULT_LINE.
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------";
/// The BW table header (MB/s).
pub const BW_HEADER: &str =
    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
/// The BW table header with `--report_gbits`.
pub const BW_HEADER_GBITS: &str =
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
/// The latency table header (note perftest's trailing space).
pub const LAT_HEADER: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
/// The latency table header of a `-D` run.
pub const LAT_DURATION_HEADER: &str = " #bytes        #iterations       t_avg[usec]    tps average";
/// The banner a server prints before it waits.
pub const WAITING_BANNER: &str = "\n************************************\n* Waiting for client to connect... *\n************************************";

/// What the information block shows.
#[derive(Debug, Clone)]
pub struct TestInfo<'a> {
    /// The settings.
    pub settings: &'a Settings,
    /// Device name.
    pub device: &'a str,
    /// Path MTU in bytes.
    pub mtu_bytes: u32,
    /// "IB" or "Ethernet".
    pub link: &'static str,
    /// The source GID index, when GIDs are used.
    pub gid_index: Option<u32>,
    /// The inline limit in effect.
    pub inline: u32,
    /// Outstanding reads in effect.
    pub out_reads: u32,
}

fn verb_name(v: Verb) -> &'static str {
    match v {
        Verb::Send => "Send",
        Verb::Write => "RDMA_Write",
        Verb::Read => "RDMA_Read",
        Verb::Atomic => "Atomic",
    }
}

impl TestInfo<'_> {
    /// perftest's title: "RDMA_Write BW Test", "Atomic FETCH_AND_ADD Latency Test", …
    pub fn title(&self) -> String {
        let s = self.settings;
        let mut t = format!("{} ", verb_name(s.tool.verb));
        if s.tool.verb == Verb::Atomic {
            t.push_str(s.atomic.name());
            t.push(' ');
        }
        match s.tool.test {
            Test::Bw => {
                if s.duplex {
                    t.push_str("Bidirectional ");
                }
                if s.post_list > 1 {
                    t.push_str("Post List ");
                }
                t.push_str("BW ");
            }
            Test::Lat => t.push_str("Latency "),
        }
        if s.mcast_group.is_some() {
            t.push_str("Multicast ");
        }
        t.push_str("Test");
        t
    }

    /// The block between the two result lines (perftest's ctx_print_test_info).
    pub fn block(&self) -> String {
        let s = self.settings;
        let mut o = String::new();
        let mut line = |l: String| {
            o.push_str(&l);
            o.push('\n');
        };
        line(RESULT_LINE.into());
        line(format!("                    {}", self.title()));
        if let Some(v) = s.events {
            line(format!(" Test with events. Using {}_comp{v}", self.device));
        }
        if s.mcast_group.is_some() {
            line(" MultiCast runs on UD!".into());
        }
        line(format!(
            " Dual-port       : OFF\t\tDevice         : {}",
            self.device
        ));
        line(format!(
            " Number of qps   : {}\t\tTransport type : IB",
            s.qps
        ));
        line(format!(
            " Connection type : {}\t\tUsing SRQ      : {}",
            s.qp_type.name(),
            on_off(s.use_srq)
        ));
        // Our MRs never ask for relaxed ordering, and we post with ibv_post_send.
        line(" PCIe relax order: OFF".into());
        line(" ibv_wr* API     : OFF".into());
        if s.is_client || s.duplex {
            line(format!(" TX depth        : {}", s.tx_depth));
        }
        if s.post_list > 1 {
            line(format!(" Post List       : {}", s.post_list));
        }
        if s.tool.verb == Verb::Send && !s.is_client {
            line(format!(" RX depth        : {}", s.rx_depth));
        }
        if s.tool.test == Test::Bw {
            line(format!(" CQ Moderation   : {}", s.cq_mod));
        }
        line(format!(" Mtu             : {}[B]", self.mtu_bytes));
        line(format!(" Link type       : {}", self.link));
        if let Some(g) = self.gid_index {
            line(format!(" GID index       : {g}"));
        }
        match s.tool.verb {
            Verb::Write | Verb::Send => line(format!(" Max inline data : {}[B]", self.inline)),
            Verb::Read | Verb::Atomic => line(format!(" Outstand reads  : {}", self.out_reads)),
        }
        line(format!(" rdma_cm QPs\t : {}", on_off(s.rdma_cm)));
        line(format!(" Data ex. method : {}", exchange_method(s)));
        if s.rdma_cm && !s.is_client {
            line(RESULT_LINE.into());
            line(" Waiting for client rdma_cm QP to connect".into());
            line(" Please run the same command with the IB/RoCE interface IP".into());
        }
        line(RESULT_LINE.into());
        o.pop();
        o
    }

    /// perftest's test_info, as valid JSON.
    pub fn json(&self) -> JsonObject {
        let s = self.settings;
        let mut j = JsonObject::new().str("test", &self.title().replace(' ', "_"));
        if let Some(v) = s.events {
            j = j.str(
                "Test with events",
                &format!("Using_{}_comp{v}", self.device),
            );
        }
        if s.mcast_group.is_some() {
            j = j.str("MultiCast_runs", "on_UD");
        }
        j = j
            .str("Dual_port", "OFF")
            .str("Device", self.device)
            .int("Number_of_qps", u64::from(s.qps))
            .str("Transport_type", "IB")
            .str("Connection_type", s.qp_type.name())
            .str("Using_SRQ", on_off(s.use_srq))
            .str("PCIe_relax_order", "OFF")
            .str("ibv_wr_API", "OFF");
        if s.is_client || s.duplex {
            j = j.int("TX_depth", u64::from(s.tx_depth));
        }
        if s.post_list > 1 {
            j = j.int("Post_List", u64::from(s.post_list));
        }
        if s.tool.test == Test::Bw {
            j = j.int("CQ_Moderation", u64::from(s.cq_mod));
        }
        j = j
            .int("Mtu", u64::from(self.mtu_bytes))
            .str("Link_type", self.link);
        if let Some(g) = self.gid_index {
            j = j.int("GID_index", u64::from(g));
        }
        j = match s.tool.verb {
            Verb::Write | Verb::Send => j.int("Max_inline_data", u64::from(self.inline)),
            Verb::Read | Verb::Atomic => j.int("Outstand_reads", u64::from(self.out_reads)),
        };
        j.str("rdma_cm_QPs", on_off(s.rdma_cm))
            .str("Data_ex_method", exchange_method(s))
    }
}

/// perftest's "Data ex. method": over RDMA CM (`-z`, `-R`) or TCP.
fn exchange_method(s: &Settings) -> &'static str {
    if s.exchange_over_cm {
        "rdma_cm"
    } else {
        "Ethernet"
    }
}

/// C's `%#0Nx`: `0x` and zero padding to N characters in all, but a bare zero has no prefix.
fn c_alt_hex(v: u64, width: usize) -> String {
    if v == 0 {
        format!("{:0width$}", 0)
    } else {
        format!("{v:#0width$x}")
    }
}

/// One side's address line and GID line (perftest's ctx_print_pingpong_data).
pub fn address_lines(side: &str, d: &Dest, verb: Verb, with_gid: bool) -> String {
    let mut s = format!(
        " {side} address: LID {} QPN {} PSN {}",
        c_alt_hex(u64::from(d.lid), 4),
        c_alt_hex(u64::from(d.qpn), 6),
        c_alt_hex(u64::from(d.psn), 6)
    );
    if verb == Verb::Read {
        s.push_str(&format!(" OUT {}", c_alt_hex(u64::from(d.out_reads), 4)));
    }
    if matches!(verb, Verb::Read | Verb::Write) {
        s.push_str(&format!(
            " RKey {} VAddr {}",
            c_alt_hex(u64::from(d.rkey), 8),
            c_alt_hex(d.vaddr, 16)
        ));
    }
    if with_gid {
        let g: Vec<String> = d.gid.iter().map(|b| format!("{b:02}")).collect();
        // A multicast group (the receiving side's address with -g) is labelled as perftest's.
        let label = if Gid(d.gid).is_multicast() {
            "MGID"
        } else {
            "GID"
        };
        s.push_str(&format!("\n {label}: {}", g.join(":")));
    }
    s
}

/// A BW row as perftest prints it (REPORT_FMT, or REPORT_FMT_EXT for small Gb/s figures).
pub fn bw_row(r: &BwRow, gbits: bool) -> String {
    let row = if gbits && r.avg < 0.1 {
        format!(
            " {:<7}    {}           {:<7.6}            {:<7.6}            {:<7.6}",
            r.size, r.iters, r.peak, r.avg, r.msg_rate
        )
    } else {
        format!(
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t   {:<7.6}",
            r.size, r.iters, r.peak, r.avg, r.msg_rate
        )
    };
    row + &cpu_cell(r.cpu)
}

/// The header's CPU column (`--cpu_util`), after the BW or `-D` latency header.
pub const CPU_HEADER: &str = "    CPU_Util[%]";

/// A row's CPU cell, as perftest's REPORT_EXT_CPU_UTIL (nothing without `--cpu_util`).
fn cpu_cell(cpu: Option<f64>) -> String {
    cpu.map_or(String::new(), |c| format!("\t    {c:<3.2}"))
}

/// A BW row as JSON.
pub fn bw_json(r: &BwRow) -> JsonObject {
    JsonObject::new()
        .int("MsgSize", r.size)
        .int("n_iterations", r.iters)
        .num("BW_peak", r.peak)
        .num("BW_average", r.avg)
        .num("MsgRate", r.msg_rate)
        .opt_num("CPU_util", r.cpu)
}

/// A latency row as perftest prints it (REPORT_FMT_LAT).
pub fn lat_row(size: u64, iters: u64, s: &LatencyStats) -> String {
    format!(
        " {:<7} {}          {:<7.2}        {:<7.2}      {:<7.2}  \t       {:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}",
        size, iters, s.min, s.max, s.typical, s.avg, s.stdev, s.p99, s.p99_9
    )
}

/// A latency row as JSON (perftest's keys).
pub fn lat_json(size: u64, iters: u64, s: &LatencyStats) -> JsonObject {
    JsonObject::new()
        .int("MsgSize", size)
        .int("n_iterations", iters)
        .num("t_min", s.min)
        .num("t_max", s.max)
        .num("t_typical", s.typical)
        .num("t_avg", s.avg)
        .num("t_stdev", s.stdev)
        .num("percentile_99", s.p99)
        .num("percentile_99.9", s.p99_9)
}

/// A `-D` latency row (REPORT_FMT_LAT_DUR).
pub fn lat_duration_row(size: u64, iters: u64, avg_us: f64, tps: f64, cpu: Option<f64>) -> String {
    format!(" {size:<7}       {iters}            {avg_us:<7.2}        {tps:<7.2}") + &cpu_cell(cpu)
}

/// A `-D` latency row as JSON.
pub fn lat_duration_json(
    size: u64,
    iters: u64,
    avg_us: f64,
    tps: f64,
    cpu: Option<f64>,
) -> JsonObject {
    JsonObject::new()
        .int("MsgSize", size)
        .int("n_iterations", iters)
        .num("t_avg", avg_us)
        .num("tps_average", tps)
        .opt_num("CPU_util", cpu)
}

/// The whole JSON document: perftest's `test_info` and `results` (the last row, as perftest
/// keeps it), plus every row of a `-a` sweep in `all_results`.
pub fn json_document(info: &JsonObject, rows: &[JsonObject], extra: &JsonObject) -> String {
    let mut doc = JsonObject::new().object("test_info", info);
    if let Some(last) = rows.last() {
        doc = doc.object("results", last);
    }
    doc.objects("all_results", rows).merge(extra).finish()
}

/// `-A`'s operation name for messages.
pub fn atomic_name(a: AtomicType) -> &'static str {
    a.name()
}

/// perftest's word for a flag's state.
fn on_off(on: bool) -> &'static str {
    if on {
        "ON"
    } else {
        "OFF"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_lines_use_cs_alternate_hex() {
        let d = Dest {
            lid: 0,
            out_reads: 16,
            qpn: 0x11,
            psn: 0x6b8e2a,
            rkey: 0x214,
            vaddr: 0x7f3a_5c2d_1000,
            gid: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 192, 168, 122, 10],
            srqn: 0,
        };
        assert_eq!(
            address_lines("local", &d, Verb::Write, true),
            " local address: LID 0000 QPN 0x0011 PSN 0x6b8e2a RKey 0x000214 VAddr 0x007f3a5c2d1000\n \
             GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:168:122:10"
        );
        assert_eq!(
            address_lines("remote", &d, Verb::Read, false),
            " remote address: LID 0000 QPN 0x0011 PSN 0x6b8e2a OUT 0x10 RKey 0x000214 VAddr 0x007f3a5c2d1000"
        );
        assert_eq!(
            address_lines("local", &d, Verb::Send, false),
            " local address: LID 0000 QPN 0x0011 PSN 0x6b8e2a"
        );
    }

    #[test]
    fn rows_match_perftests_printf() {
        let r = BwRow {
            size: 32,
            iters: 5000,
            peak: 13.52,
            avg: 12.87,
            msg_rate: 0.421715,
            cpu: None,
        };
        assert_eq!(
            bw_row(&r, false),
            " 32         5000             13.52              12.87  \t\t   0.421715"
        );
        // --cpu_util's cell: perftest's "\t    %-3.2f".
        let with_cpu = BwRow {
            cpu: Some(87.5),
            ..r
        };
        assert!(bw_row(&with_cpu, false).ends_with("0.421715\t    87.50"));
        let s = LatencyStats {
            min: 11.62,
            max: 74.31,
            typical: 13.05,
            avg: 13.44,
            stdev: 1.02,
            p99: 19.87,
            p99_9: 74.31,
        };
        assert_eq!(
            lat_row(8, 1000, &s),
            " 8       1000          11.62          74.31        13.05    \t       13.44       \t1.02   \t\t19.87   \t\t74.31  "
        );
    }

    #[test]
    fn json_is_valid_and_keeps_every_row() {
        let info = JsonObject::new().str("Device", "rxe0");
        let rows = [
            bw_json(&BwRow::default()),
            bw_json(&BwRow {
                size: 4,
                ..BwRow::default()
            }),
        ];
        let doc = json_document(&info, &rows, &JsonObject::new());
        assert!(
            doc.starts_with(r#"{"test_info":{"Device":"rxe0"},"results":{"MsgSize":4,"#),
            "{doc}"
        );
        assert!(doc.contains(r#""all_results":[{"MsgSize":0,"#), "{doc}");
    }
}
