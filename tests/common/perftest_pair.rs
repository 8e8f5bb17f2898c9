//! One perftest-style pair on a device: ours or Debian's perftest on each side, both sides'
//! tables parsed and checked. Shared by the device tests (Soft-RoCE) and the fabric tests
//! (Soft-iWARP), which differ only in the device, GID and address they run on.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

pub const OURS: &str = env!("CARGO_BIN_EXE_rdma-bench");
pub const BW_HEADER: &str =
    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
pub const LAT_HEADER: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------";

/// A TCP port per pair, so that the tests of this binary may run side by side.
pub fn next_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(18600);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

pub fn env(k: &str) -> String {
    std::env::var(k).unwrap_or_else(|_| {
        panic!("{k} is not set: device tests run through bench_scripts/test.sh")
    })
}

/// Where a pair runs: the device (`-d`), its GID index (`-x`, if one is given) and the address
/// the client dials.
pub struct On {
    pub device: String,
    pub gid_index: Option<String>,
    pub ip: String,
}

impl On {
    /// The testbed's device (RDMA_BENCH_DEVICE, _GID_INDEX, _IP).
    pub fn testbed() -> On {
        On {
            device: env("RDMA_BENCH_DEVICE"),
            gid_index: Some(env("RDMA_BENCH_GID_INDEX")),
            ip: env("RDMA_BENCH_IP"),
        }
    }
}

/// Which implementation plays a side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Who {
    Ours,
    Perftest,
}

/// `tool` is ours ("write-bw"); perftest's is ib_write_bw.
pub fn command(
    on: &On,
    who: Who,
    tool: &str,
    args: &[&str],
    port: u16,
    server: Option<&str>,
) -> Command {
    let mut c = Command::new("timeout");
    c.arg("120");
    match who {
        Who::Ours => {
            c.arg(OURS).arg(tool);
        }
        Who::Perftest => {
            c.arg(format!("ib_{}", tool.replace('-', "_"))).arg("-F");
        }
    }
    c.args(["-d", &on.device]);
    if let Some(g) = &on.gid_index {
        c.args(["-x", g]);
    }
    c.args(["-p", &port.to_string()]).args(args);
    if let Some(s) = server {
        c.arg(s);
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

pub struct Ran {
    pub code: i32,
    pub out: String,
    pub err: String,
}

pub fn wait(c: Child) -> Ran {
    let (code, out, err) = super::output_of(c.wait_with_output().unwrap());
    Ran { code, out, err }
}

/// Waits (30 s at most) until something listens on `port`: an RDMA CM id in LISTEN
/// (`rdma res show cm_id`) with `cm`, else a TCP socket (`ss`). A fixed sleep is not enough when
/// the guest's two cores are busy with the other test thread.
pub fn wait_listening(port: u16, cm: bool) {
    let (cmd, args): (&str, &[&str]) = if cm {
        ("rdma", &["res", "show", "cm_id"])
    } else {
        ("ss", &["-ltnH"])
    };
    let needle = format!(":{port} ");
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        let out = Command::new(cmd)
            .args(args)
            .output()
            .expect("iproute2 runs");
        let text = String::from_utf8_lossy(&out.stdout);
        if text
            .lines()
            .any(|l| l.contains("LISTEN") && (l.to_string() + " ").contains(&needle))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on port {port} after 30 s ({cmd} {args:?})");
}

/// Runs a server and its client; both must succeed.
pub fn pair(on: &On, tool: &str, server: Who, client: Who, args: &[&str]) -> (String, String) {
    let port = next_port();
    let s = command(on, server, tool, args, port, None).spawn().unwrap();
    // perftest's client tries once: wait for its server to listen (ours retries on its own).
    if client == Who::Perftest {
        wait_listening(port, args.contains(&"-R"));
    }
    let c = command(on, client, tool, args, port, Some(&on.ip))
        .spawn()
        .unwrap();
    let (c, s) = (wait(c), wait(s));
    both_ok(
        &format!("{tool} {args:?}, server {server:?}, client {client:?}"),
        &s,
        &c,
    );
    (s.out, c.out)
}

/// Both sides of `what` exited 0; else both sides' output.
pub fn both_ok(what: &str, s: &Ran, c: &Ran) {
    assert!(
        s.code == 0 && c.code == 0,
        "{what}: server exit {}, client exit {}\n--- server\n{}{}\n--- client\n{}{}",
        s.code,
        c.code,
        s.out,
        s.err,
        c.out,
        c.err
    );
}

/// The rows of the table under `header`, as numbers.
pub fn table(out: &str, header: &str) -> Vec<Vec<f64>> {
    out.lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| *l != RESULT_LINE)
        .map(|l| {
            l.split_whitespace()
                .map(|w| {
                    w.parse()
                        .unwrap_or_else(|_| panic!("not a number in {l:?}:\n{out}"))
                })
                .collect()
        })
        .collect()
}

/// Checks a BW pair: the client's rows have the sizes and iterations asked for; the server's rows
/// (its own for send-bw, the client's report otherwise) agree; our rows have positive rates
/// (perftest's own multi-QP client sometimes prints 0.000000 under load: its numbers are not
/// ours to check).
pub fn check_bw(tool: &str, s: &str, c: &str, sizes: &[u64], iters: u64, who: (Who, Who)) {
    let (server_ours, client_ours) = (who.0 == Who::Ours, who.1 == Who::Ours);
    let (srows, crows) = (table(s, BW_HEADER), table(c, BW_HEADER));
    assert_eq!(crows.len(), sizes.len(), "{tool} client rows:\n{c}");
    for (r, &size) in crows.iter().zip(sizes) {
        assert_eq!((r[0] as u64, r[1] as u64), (size, iters), "{tool}:\n{c}");
        // MsgRate has six decimals; a 2-byte row's MB/s may round to 0.00.
        assert!(!client_ours || r[4] > 0.0, "{tool}: no rate\n{c}");
    }
    if tool == "send-bw" {
        assert_eq!(srows.len(), sizes.len(), "{tool} server rows:\n{s}");
        for (sr, cr) in srows.iter().zip(&crows) {
            assert_eq!((sr[0], sr[1]), (cr[0], cr[1]), "{tool}:\n{s}\n{c}");
            assert!(
                !server_ours || sr[4] > 0.0,
                "{tool}: server saw no rate\n{s}"
            );
            // Our receiver's span holds every RECV, so its rate stays near the sender's even
            // when the RECVs all arrive in one poll (perftest's then reads near infinity).
            assert!(
                !server_ours || cr[4] <= 0.0 || sr[4] <= 10.0 * cr[4],
                "{tool}: the receiver's rate is far above the sender's\n{s}\n{c}"
            );
        }
    } else {
        // The server prints the client's last row, as perftest's does.
        assert_eq!(srows.len(), 1, "{tool} server rows:\n{s}");
        let last = crows.last().unwrap();
        assert_eq!(
            (srows[0][0], srows[0][1]),
            (last[0], last[1]),
            "{tool}:\n{s}\n{c}"
        );
        assert!((srows[0][4] - last[4]).abs() <= 1e-6, "{tool}:\n{s}\n{c}");
    }
}

/// Checks a latency pair: rows with the sizes and iterations asked for, ordered statistics.
pub fn check_lat(tool: &str, s: &str, c: &str, sizes: &[u64], iters: u64) {
    let both = !matches!(tool, "read-lat" | "atomic-lat");
    for (side, out) in [("client", c), ("server", s)] {
        let rows = table(out, LAT_HEADER);
        if side == "server" && !both {
            assert!(
                rows.is_empty(),
                "{tool}: the passive server printed a table:\n{out}"
            );
            continue;
        }
        assert_eq!(rows.len(), sizes.len(), "{tool} {side} rows:\n{out}");
        for (r, &size) in rows.iter().zip(sizes) {
            assert_eq!(
                (r[0] as u64, r[1] as u64),
                (size, iters),
                "{tool} {side}:\n{out}"
            );
            let (min, max, typ, avg) = (r[2], r[3], r[4], r[5]);
            assert!(
                min > 0.0 && min <= typ && typ <= max && min <= avg,
                "{tool} {side}: {r:?}"
            );
        }
    }
}

pub fn run_bw(on: &On, tool: &str, server: Who, client: Who, extra: &[&str]) {
    let iters = 1024u64;
    let n = iters.to_string();
    let mut args = vec!["-n", &n];
    let given = extra.iter().position(|a| *a == "-s").map(|i| extra[i + 1]);
    let size: u64 = match (tool, given) {
        ("atomic-bw", _) => 8,
        (_, Some(g)) => g.parse().unwrap(),
        _ => 32,
    };
    let s = size.to_string();
    if tool != "atomic-bw" && given.is_none() {
        args.extend(["-s", &s]);
    }
    args.extend(extra);
    // perftest counts every QP's iterations.
    let qps: u64 = extra
        .iter()
        .position(|a| *a == "-q")
        .map_or(1, |i| extra[i + 1].parse().unwrap());
    let (so, co) = pair(on, tool, server, client, &args);
    check_bw(tool, &so, &co, &[size], iters * qps, (server, client));
    println!("{}", row_of(tool, server, client, &co, size));
}

/// The client's table row for `size`, labelled with who played which side (shown with
/// --nocapture: the interop matrix's numbers).
pub fn row_of(tool: &str, server: Who, client: Who, client_out: &str, size: u64) -> String {
    let row = client_out
        .lines()
        .find(|l| l.split_whitespace().next() == Some(&size.to_string()))
        .unwrap_or("(no row)");
    format!(
        "{tool}: {server:?} server, {client:?} client: {}",
        row.trim()
    )
}

pub fn run_lat(on: &On, tool: &str, server: Who, client: Who) {
    // Atomics are 8 bytes, and perftest refuses -s for them.
    let mut args = vec!["-n", "200"];
    if tool != "atomic-lat" {
        args.extend(["-s", "8"]);
    }
    let (so, co) = pair(on, tool, server, client, &args);
    check_lat(tool, &so, &co, &[8], 200);
}
