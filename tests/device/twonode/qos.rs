//! QoS on the wire (and, in its own test, UD multicast across the link): the traffic class a
//! run asks for is what its RoCE v2 packets carry, read by tcpdump on node 0's netdev (the IP
//! header's TOS byte) in both directions: a paper benchmark (`--traffic-class`), perftest's flags
//! on our tools (`--tclass` over the TCP exchange and over UD, `-T/--tos` over RDMA CM), and ours
//! against perftest's ib_write_bw. The TTL is the kernel's: its route's hop limit, whatever the
//! address vector says (so `--hop-limit` is refused on RoCE v2, and a route with `hoplimit 9`
//! shows on the wire). Runs on both guests of `softroce.sh run --nodes 2` (bench_scripts/test.sh
//! does); outside that testbed it fails, never skips.

use crate::common::twonode;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use twonode::{against_perftest, env, netdev, node, outcome, rw_pair, tool_pair, Registry};

/// RoCE v2 packets other than QP1's (the CM's MADs, sent with the default class whatever the
/// connection asks for): the BTH's destination QP is the low 24 bits of UDP payload bytes 4-7.
const ROCE_DATA: &str = "udp dst port 4791 and (udp[12:4] & 0x00ffffff) != 1";

/// One RoCE v2 packet's IP header as tcpdump printed it.
#[derive(Debug)]
struct Seen {
    src: String,
    tos: String,
    ttl: u32,
}

/// Where node 0's capture goes (the guest's own /tmp).
const PCAP: &str = "/tmp/twonode_qos.pcap";

/// tcpdump on node 0's netdev while it lives, writing headers only to [`PCAP`];
/// [`Capture::packets`] stops it and reads the file back.
struct Capture(Child);

impl Capture {
    fn start() -> Capture {
        let dev = netdev();
        let mut c = Command::new("tcpdump")
            // --immediate-mode: packets leave the kernel's ring as they come, not in blocks
            // that a stop can catch half full.
            .args([
                "-i",
                &dev,
                "-nn",
                "--immediate-mode",
                "-s",
                "96",
                "-c",
                "3000",
                "-w",
                PCAP,
            ])
            .arg(ROCE_DATA)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump runs (softroce.sh setup installs it)");
        // It says "listening on …" once the socket is up: nothing sent after that is missed.
        let mut err = BufReader::new(c.stderr.take().unwrap());
        let mut line = String::new();
        while !line.contains("listening on") {
            line.clear();
            let n = err.read_line(&mut line).unwrap();
            assert!(n > 0, "tcpdump ended before it listened");
        }
        Capture(c)
    }

    fn packets(mut self) -> Vec<Seen> {
        // SIGINT: tcpdump writes out what it captured and exits.
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
        let _ = self.0.wait();
        let o = Command::new("tcpdump")
            .args(["-r", PCAP, "-nn", "-v"])
            .output()
            .expect("tcpdump reads its file");
        let _ = std::fs::remove_file(PCAP);
        parse(&String::from_utf8_lossy(&o.stdout))
    }
}

/// `HH:MM:SS.us IP (tos 0xb8, ttl 9, id …)` then `    SRC.PORT > DST.4791: UDP, length N`.
fn parse(out: &str) -> Vec<Seen> {
    let mut seen = Vec::new();
    let mut lines = out.lines();
    while let Some(l) = lines.next() {
        let Some(head) = l.split(" IP (").nth(1) else {
            continue;
        };
        let field = |name: &str| {
            head.split(", ")
                .find_map(|f| f.strip_prefix(name))
                .unwrap_or_else(|| panic!("no {name} in {l}"))
                .to_string()
        };
        let src = lines.next().unwrap_or("").trim();
        let src = src.rsplit_once(" > ").map_or(src, |(s, _)| s);
        let src = src.rsplit_once('.').map_or(src, |(ip, _port)| ip);
        seen.push(Seen {
            src: src.to_string(),
            tos: field("tos "),
            ttl: field("ttl ").parse().unwrap(),
        });
    }
    seen
}

/// Node 0 captures around `run` (node 1 only runs it), and checks that RoCE packets went both
/// ways, every one with traffic class `tos` and, from node 0 and node 1, the TTLs `ttl`.
fn on_the_wire(what: &str, tos: &str, ttl: [u32; 2], run: impl FnOnce() -> Child) {
    let capture = (node() == 0).then(Capture::start);
    let (code, out, err) = outcome(run());
    assert_eq!(code, 0, "{what}: node {}\n{out}\n{err}", node());
    let Some(capture) = capture else {
        return;
    };
    let seen = capture.packets();
    let (me, peer) = (env("RDMA_BENCH_IP"), env("SOFTROCE_PEER"));
    for (from, ttl) in [(&me, ttl[0]), (&peer, ttl[1])] {
        let from_it: Vec<&Seen> = seen.iter().filter(|s| &s.src == from).collect();
        assert!(
            from_it.len() >= 5,
            "{what}: {} RoCE packets from {from}",
            from_it.len()
        );
        let wrong: Vec<&&Seen> = from_it
            .iter()
            .filter(|s| s.tos != tos || s.ttl != ttl)
            .take(5)
            .collect();
        assert!(
            wrong.is_empty(),
            "{what}: packets from {from} not at tos {tos}, ttl {ttl}: {wrong:?}"
        );
    }
    println!(
        "{what}: {} RoCE v2 packets, every one with tos {tos}; ttl {} from node 0, {} from node 1",
        seen.len(),
        ttl[0],
        ttl[1]
    );
}

/// Node 0's route to node 1 with hop limit `n` while it lives.
struct RouteHopLimit(String);

impl RouteHopLimit {
    fn set(n: &str) -> RouteHopLimit {
        let to = format!("{}/32", env("SOFTROCE_PEER"));
        let o = Command::new("ip")
            .args(["route", "replace", &to, "dev", &netdev(), "hoplimit", n])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        RouteHopLimit(to)
    }
}

impl Drop for RouteHopLimit {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["route", "del", &self.0, "dev", &netdev()])
            .status();
    }
}

#[test]
fn traffic_class_and_hop_limit_on_the_wire() {
    let _reg = Registry::start(11413);
    // DSCP 46 (EF), SL 3: RC WRITEs through the registry path, both sides asking. The TTL is
    // the kernel's (its route's hop limit, 64), whatever the address vector says.
    on_the_wire(
        "rw-tput-sender --traffic-class 184",
        "0xb8",
        [64, 64],
        || rw_pair(&["--traffic-class", "184", "--sl", "3"], "2", "2"),
    );
    // Hence a hop limit of our own is refused on RoCE v2, with where to set it instead.
    if node() == 0 {
        let (code, _, err) = outcome(twonode::spawn(
            env!("CARGO_BIN_EXE_rw-tput-sender"),
            &["--hop-limit", "9"],
            "1",
        ));
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("--hop-limit 9: ") && err.contains("hoplimit N"),
            "{err}"
        );
    }
    // perftest's flags: DSCP 26 over the TCP exchange (perftest's GRH hop limit of 255 is
    // replaced by the kernel's as well); node 0's route to node 1 at hop limit 9 shows whose
    // TTL the packets carry.
    let small = ["-s", "1024", "-n", "400"];
    {
        let _route = (node() == 0).then(|| RouteHopLimit::set("9"));
        on_the_wire(
            "write-bw --tclass 0x68, route hoplimit 9",
            "0x68",
            [9, 64],
            || {
                tool_pair(
                    "write-bw",
                    18811,
                    &[
                        &small[..],
                        &["--tclass", "0x68", "-S", "2", "--flow_label", "7"],
                    ]
                    .concat(),
                )
            },
        );
    }
    // UD: the address handle carries the class (-b: both sides send).
    on_the_wire("send-bw -c UD -b --tclass 0x68", "0x68", [64, 64], || {
        tool_pair(
            "send-bw",
            18812,
            &[
                "-c", "UD", "-b", "-s", "512", "-n", "400", "--tclass", "0x68",
            ],
        )
    });
    // RDMA CM: the client's -T is the connection's class, the server's packets included.
    on_the_wire("write-bw -R -T 0x48", "0x48", [64, 64], || {
        let tos: &[&str] = if node() == 1 { &["-T", "0x48"] } else { &[] };
        tool_pair("write-bw", 18813, &[&small[..], &["-R"], tos].concat())
    });
    // Ours against perftest, both asking for DSCP 10.
    on_the_wire(
        "write-bw ↔ ib_write_bw --tclass 0x28",
        "0x28",
        [64, 64],
        || {
            let args = [&small[..], &["--tclass=0x28"]].concat();
            against_perftest("ib_write_bw", "write-bw", 18814, &args)
        },
    );
}

#[test]
fn multicast_across_the_link() {
    // send-bw -g between the nodes: node 0's QP joins an IPv4-mapped group, and node 0 joins the
    // group's IP address on its netdev (IGMP), without which its NIC filter and IP layer drop
    // the group's frames; node 1 sends to the group (through the 224.0.0.0/4 route). Every
    // datagram must arrive.
    let group = "0:0:0:0:0:0:0:0:0:0:255:255:239:1:1:3";
    let (code, out, err) = outcome(tool_pair(
        "send-bw",
        18815,
        &["-g", "-M", group, "-n", "500", "-s", "512"],
    ));
    assert_eq!(code, 0, "send-bw -g node {}\n{out}\n{err}", node());
    assert!(out.contains("Send BW Multicast Test"), "{out}");
    if node() == 0 {
        assert!(
            out.contains("local address: LID 0000 QPN 0xffffff")
                && out.contains("MGID: 00:00:00:00:00:00:00:00:00:00:255:255:239:01:01:03"),
            "{out}"
        );
        assert!(
            !err.contains("were lost"),
            "multicast receiver:\n{out}\n{err}"
        );
    }
}
