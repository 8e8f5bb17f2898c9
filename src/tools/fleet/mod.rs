//! `rdma-bench fleet`: bandwidth and latency between every pair of a batch of hosts, as an
//! operator accepts new machines or hunts a bad link. The perftest-compatible tools measure
//! (write-bw and write-lat over ssh, each pair in both directions); the pairs meet in n − 1
//! rounds of disjoint pairs run at once ([`schedule`]); bad pairs are judged against the fleet's
//! own best ([`verdict`]), measured again alone, and a host whose every pair stays bad is named
//! the suspect. Outputs: a table on stdout, N×N matrices (CSV, JSON) and heatmaps ([`report`]).

mod remote;
mod report;
mod schedule;
mod verdict;

use std::io::IsTerminal;
use std::path::PathBuf;

use crate::control;
use crate::error::{Error, Result};
use remote::{Launcher, Test};
use verdict::{Direction, HostVerdict, PairResult, Thresholds};

const AFTER_HELP: &str = "\
HOSTS: a file with one host per line (as ssh reaches it; the tools' clients reach the servers by
the same name), `#` comments; or a comma-separated list. Every host needs rdma-bench at --bin and
passwordless ssh (BatchMode). A host that ssh cannot reach becomes a row \"unreachable\" and the
rest is measured.

Each pair (a, b) is measured three times: write-bw with a as the client (sender) and b as the
server, write-lat (a round trip: one run per pair, both cells of lat.csv), then write-bw the
other way round. Pairs of one round run at once, each on its own
TCP port (--port, --port + 1, …). A pair is bad when, in either direction, its bandwidth is below
--bw-min-pct of the fleet's best or its latency above --lat-max-factor × the fleet's best (the
defaults are NVIDIA ClusterKit's), or a run failed; bad pairs are measured again alone (--retest
times) and judged again. A host whose every pair is bad is the suspect; a bad pair between hosts
with good pairs elsewhere is a link.

Files in --out: bw.csv and lat.csv (N×N, row = sender, column = receiver), fleet.json (hosts,
matrices, every pair with its counter lines and trust verdict, bad pairs, host verdicts),
bw.svg and lat.svg (heatmaps), logs/ (every run's output on both ends).

Exit codes: 0 no bad pair; 6 bad pairs found (or an unreachable host); 1 fewer than two hosts
could be measured; 2 usage error; 130 stopped (Ctrl-C keeps and writes what was measured).

Example (the tools' flags after --):
  rdma-bench fleet hosts.txt --out fleet-out -- -d mlx5_0 -x 3";

/// `rdma-bench fleet`'s flags.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = AFTER_HELP)]
pub struct FleetArgs {
    /// The hosts: a file (one per line) or a comma-separated list
    #[arg(value_name = "HOSTS")]
    pub hosts: String,
    /// write-bw's message size in bytes
    #[arg(short = 's', long, default_value_t = 65536)]
    pub size: u64,
    /// write-bw's duration (-D) in seconds
    #[arg(short = 'D', long, default_value_t = 5)]
    pub duration: u64,
    /// write-lat's iterations (-n)
    #[arg(short = 'n', long = "lat-iters", default_value_t = 1000)]
    pub lat_iters: u64,
    /// A pair is bad below this percentage of the fleet's best bandwidth
    #[arg(long = "bw-min-pct", default_value_t = 93.0, value_name = "PCT")]
    pub bw_min_pct: f64,
    /// A pair is bad above this multiple of the fleet's best latency
    #[arg(long = "lat-max-factor", default_value_t = 2.1, value_name = "X")]
    pub lat_max_factor: f64,
    /// How many times a bad pair is measured again alone before it is reported
    #[arg(long, default_value_t = 1)]
    pub retest: u32,
    /// The ssh command and its options
    #[arg(long, default_value = "ssh -o BatchMode=yes -o ConnectTimeout=10")]
    pub ssh: String,
    /// rdma-bench on the hosts [default: this binary's path]. Tip for big fleets: ssh's
    /// connection sharing (-o ControlMaster=auto -o ControlPath=… -o ControlPersist=60 in --ssh)
    /// saves a handshake per run
    #[arg(long)]
    pub bin: Option<String>,
    /// The first pair's TCP port; pair i of a round uses PORT + i
    #[arg(short = 'p', long, default_value_t = 18515)]
    pub port: u16,
    /// Where the matrices, heatmaps, JSON and logs go
    #[arg(long, default_value = "fleet-out")]
    pub out: PathBuf,
    /// Also write every measured value to FILE in the Prometheus textfile-collector format
    /// (rdma_bench_gbps, rdma_bench_latency_seconds, rdma_bench_trusted; labels host = sender,
    /// peer, test, size), atomically (a temporary file renamed over FILE)
    #[arg(long, value_name = "FILE")]
    pub prom: Option<PathBuf>,
    /// Flags for every tool run (device, port, GID index, …), after --
    #[arg(last = true, value_name = "TOOL FLAGS")]
    pub tool_flags: Vec<String>,
}

/// The hosts of `spec`: a file's lines or a comma-separated list, checked.
fn hosts_of(spec: &str) -> Result<Vec<String>> {
    let text = if std::path::Path::new(spec).exists() {
        std::fs::read_to_string(spec)
            .map_err(|e| Error::Usage(format!("HOSTS: cannot read {spec}: {e}")))?
    } else if spec.contains(',') {
        spec.replace(',', "\n")
    } else {
        return Err(Error::Usage(format!(
            "HOSTS: {spec} is neither a file nor a comma-separated list of hosts"
        )));
    };
    let hosts: Vec<String> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    if hosts.len() < 2 {
        return Err(Error::Usage(format!(
            "HOSTS: {spec} names {} host(s); a fleet check needs at least 2",
            hosts.len()
        )));
    }
    for (i, h) in hosts.iter().enumerate() {
        if h.split_whitespace().count() != 1 {
            return Err(Error::Usage(format!(
                "HOSTS: one host per line, not \"{h}\""
            )));
        }
        if hosts[..i].contains(h) {
            return Err(Error::Usage(format!("HOSTS: {h} is listed twice")));
        }
    }
    Ok(hosts)
}

fn check(a: &FleetArgs) -> Result<()> {
    if !(a.bw_min_pct > 0.0 && a.bw_min_pct <= 100.0) {
        return Err(Error::Usage("--bw-min-pct must be in (0, 100]".into()));
    }
    if !(a.lat_max_factor >= 1.0 && a.lat_max_factor.is_finite()) {
        return Err(Error::Usage("--lat-max-factor must be at least 1".into()));
    }
    if a.duration == 0 || a.lat_iters == 0 || a.size == 0 {
        return Err(Error::Usage(
            "--duration, --lat-iters and --size must be at least 1".into(),
        ));
    }
    if let Some(p) = &a.prom {
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if !dir.is_dir() {
            return Err(Error::Usage(format!(
                "--prom: {} is not a directory",
                dir.display()
            )));
        }
    }
    if a.ssh.split_whitespace().next().is_none() {
        return Err(Error::Usage("--ssh is empty".into()));
    }
    Ok(())
}

/// One direction's bandwidth, and with `lat` the pair's latency (write-lat measures a round
/// trip, which has no direction: one run per pair).
fn direction(
    l: &Launcher,
    (client, server): (&str, &str),
    port: u16,
    lat: bool,
    logs: &mut String,
) -> Direction {
    let (mut d, log) = l.measure(Test::Bw, client, server, port);
    logs.push_str(&format!("### write-bw {client} → {server}\n{log}"));
    if lat {
        let (t, log) = l.measure(Test::Lat, client, server, port);
        logs.push_str(&format!("### write-lat {client} ↔ {server}\n{log}"));
        d.lat_us = t.lat_us;
        d.errors.extend(t.errors);
        d.counters.extend(t.counters);
        d.trusted &= t.trusted;
    }
    d
}

/// Measures pair `(a, b)` on `port`: bandwidth both ways, latency once; its logs go under
/// `logs/`.
fn measure_pair(
    l: &Launcher,
    hosts: &[String],
    (a, b): (usize, usize),
    port: u16,
    logs: &std::path::Path,
    retested: bool,
) -> PairResult {
    let mut log = String::new();
    let ab = direction(l, (&hosts[a], &hosts[b]), port, true, &mut log);
    let ba = direction(l, (&hosts[b], &hosts[a]), port, false, &mut log);
    let name = format!(
        "{}-{}{}.log",
        hosts[a],
        hosts[b],
        if retested { "-retest" } else { "" }
    );
    let _ = std::fs::write(logs.join(name), log);
    PairResult {
        a,
        b,
        ab,
        ba,
        retested,
    }
}

/// Prints a progress line on a terminal (stderr), one per round.
fn progress(line: &str) {
    if std::io::stderr().is_terminal() {
        eprintln!("fleet: {line}");
    }
}

/// Runs `rdma-bench fleet`.
pub fn run(a: FleetArgs) -> Result<()> {
    check(&a)?;
    let hosts = hosts_of(&a.hosts)?;
    let attention = control::install_stop_signals()?;
    let bin = match &a.bin {
        Some(b) => b.clone(),
        None => std::env::current_exe()
            .map_err(|e| Error::config(format!("--bin: cannot tell this binary's path: {e}")))?
            .display()
            .to_string(),
    };
    let launcher = Launcher {
        ssh: a.ssh.split_whitespace().map(str::to_string).collect(),
        bin,
        tool_flags: a.tool_flags.clone(),
        size: a.size,
        duration: a.duration,
        lat_iters: a.lat_iters,
        attention,
    };
    let logs = a.out.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| Error::Usage(format!("--out: cannot create {}: {e}", logs.display())))?;

    // Who can be reached: all at once, each bounded by ssh's connect timeout.
    let unreachable: Vec<Option<String>> = std::thread::scope(|s| {
        let probes: Vec<_> = hosts
            .iter()
            .map(|h| s.spawn(|| launcher.unreachable(h)))
            .collect();
        probes
            .into_iter()
            .map(|p| p.join().unwrap_or(Some("the probe died".into())))
            .collect()
    });
    for (h, why) in hosts.iter().zip(&unreachable) {
        if let Some(why) = why {
            eprintln!("fleet: {h} is unreachable: {why}");
        }
    }
    let reachable: Vec<bool> = unreachable.iter().map(Option::is_none).collect();
    let live: Vec<usize> = (0..hosts.len()).filter(|&h| reachable[h]).collect();
    let thresholds = Thresholds {
        bw_min_pct: a.bw_min_pct,
        lat_max_factor: a.lat_max_factor,
    };
    let mut fleet = report::Fleet {
        hosts: hosts.clone(),
        unreachable,
        pairs: Vec::new(),
        bad: Vec::new(),
        verdicts: Vec::new(),
        thresholds,
        interrupted: false,
    };
    if live.len() < 2 {
        report::write(&mut fleet, &a.out)?;
        return Err(Error::config(format!(
            "only {} of {} hosts could be reached: nothing to measure",
            live.len(),
            hosts.len()
        )));
    }

    let rounds = schedule::rounds(live.len());
    for (r, round) in rounds.iter().enumerate() {
        if attention.stop_requested() {
            break;
        }
        let names: Vec<String> = round
            .iter()
            .map(|&(x, y)| format!("{}–{}", hosts[live[x]], hosts[live[y]]))
            .collect();
        progress(&format!(
            "round {}/{}: {}",
            r + 1,
            rounds.len(),
            names.join(", ")
        ));
        let measured: Vec<PairResult> = std::thread::scope(|s| {
            let runs: Vec<_> = round
                .iter()
                .enumerate()
                .map(|(i, &(x, y))| {
                    let (l, h, logs) = (&launcher, &hosts, &logs);
                    let port = a.port.saturating_add(i as u16);
                    let pair = (live[x], live[y]);
                    s.spawn(move || measure_pair(l, h, pair, port, logs, false))
                })
                .collect();
            runs.into_iter().filter_map(|t| t.join().ok()).collect()
        });
        fleet.pairs.extend(measured);
    }
    // Judged only on what was measured: a stopped run's missing pairs are not bad.
    fleet.judge();

    // Bad pairs again, one at a time: a pair that was bad only because its round was busy, or
    // by chance, is judged on the retest.
    for _ in 0..a.retest {
        let again: Vec<usize> = (0..fleet.pairs.len()).filter(|&i| fleet.bad[i]).collect();
        if again.is_empty() || attention.stop_requested() {
            break;
        }
        for i in again {
            if attention.stop_requested() {
                break;
            }
            let p = &fleet.pairs[i];
            progress(&format!("retest: {}–{}", hosts[p.a], hosts[p.b]));
            fleet.pairs[i] = measure_pair(&launcher, &hosts, (p.a, p.b), a.port, &logs, true);
        }
        fleet.judge();
    }
    fleet.interrupted = attention.stop_requested();
    print!("{}", report::table(&fleet));
    report::write(&mut fleet, &a.out)?;
    if let Some(path) = &a.prom {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        crate::tools::history::write_prom(path, &report::runs(&fleet, a.size, now))?;
    }
    println!("fleet: files in {}", a.out.display());
    if fleet.interrupted {
        return Err(Error::Stopped(
            "stopped: what was measured is in the table and the files".into(),
        ));
    }
    let n_bad = fleet.bad.iter().filter(|&&b| b).count();
    let n_unreachable = fleet
        .verdicts
        .iter()
        .filter(|&&v| v == HostVerdict::Unreachable)
        .count();
    if n_bad > 0 || n_unreachable > 0 {
        return Err(Error::Finding(format!(
            "{n_bad} bad pair(s), {n_unreachable} unreachable host(s) of {}",
            hosts.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::hosts_of;

    #[test]
    fn host_lists_are_checked() {
        assert_eq!(hosts_of("a,b,c").unwrap(), ["a", "b", "c"]);
        let e = |s: &str| hosts_of(s).unwrap_err().to_string();
        assert!(e("a,").contains("names 1 host(s)"), "{}", e("a,"));
        assert!(e("a,b,a").contains("a is listed twice"));
        assert!(e("nosuchfile").contains("neither a file nor"));
        let dir = std::env::temp_dir().join(format!("fleet-hosts-{}", std::process::id()));
        std::fs::write(&dir, "# rack 1\nn0\n\n n1  # spare\n").unwrap();
        assert_eq!(hosts_of(dir.to_str().unwrap()).unwrap(), ["n0", "n1"]);
        std::fs::write(&dir, "").unwrap();
        assert!(hosts_of(dir.to_str().unwrap())
            .unwrap_err()
            .to_string()
            .contains("names 0 host(s)"));
        let _ = std::fs::remove_file(&dir);
    }
}
