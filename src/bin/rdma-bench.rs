//! rdma-bench: perftest's tools on rdma-bench's core, and the tools around the benchmarks; one
//! subcommand each.
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use rdma_bench::perf::{self, args::PerfArgs, Tool};
use rdma_bench::tools::{compare, doctor, fleet, history, list, man, plot, sweep};

#[derive(Parser, Debug)]
#[command(
    name = "rdma-bench",
    version,
    propagate_version = true,
    about = "rdma-bench's tools: perftest-compatible bandwidth and latency tests, and host checks \
             (the paper's benchmarks are binaries of their own: rw-tput-sender, herd, …)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const PERF_AFTER: &str = "Server: `rdma-bench <tool> [flags]`; client: `rdma-bench <tool> [flags] SERVER`, with the \
same flags on both sides. Either side may be perftest's matching ib_* tool (protocol 6.06, TCP port 18515).";

#[derive(Subcommand, Debug)]
enum Command {
    /// RDMA WRITE bandwidth, as perftest's ib_write_bw
    #[command(name = "write-bw", after_help = PERF_AFTER, allow_negative_numbers = true)]
    WriteBw(PerfArgs),
    /// RDMA WRITE latency (ping-pong), as perftest's ib_write_lat
    #[command(name = "write-lat", after_help = PERF_AFTER, allow_negative_numbers = true)]
    WriteLat(PerfArgs),
    /// RDMA READ bandwidth, as perftest's ib_read_bw
    #[command(name = "read-bw", after_help = PERF_AFTER, allow_negative_numbers = true)]
    ReadBw(PerfArgs),
    /// RDMA READ latency, as perftest's ib_read_lat
    #[command(name = "read-lat", after_help = PERF_AFTER, allow_negative_numbers = true)]
    ReadLat(PerfArgs),
    /// SEND bandwidth, as perftest's ib_send_bw
    #[command(name = "send-bw", after_help = PERF_AFTER, allow_negative_numbers = true)]
    SendBw(PerfArgs),
    /// SEND latency (ping-pong), as perftest's ib_send_lat
    #[command(name = "send-lat", after_help = PERF_AFTER, allow_negative_numbers = true)]
    SendLat(PerfArgs),
    /// Atomic (fetch-and-add / compare-and-swap) bandwidth, as perftest's ib_atomic_bw
    #[command(name = "atomic-bw", after_help = PERF_AFTER, allow_negative_numbers = true)]
    AtomicBw(PerfArgs),
    /// Atomic latency, as perftest's ib_atomic_lat
    #[command(name = "atomic-lat", after_help = PERF_AFTER, allow_negative_numbers = true)]
    AtomicLat(PerfArgs),
    /// Is this host set up to benchmark RDMA? Devices, ports, GIDs, PCIe, NUMA, hugepages,
    /// memlock, CPU governor, SMT: one verdict line each (ok / warn / fail) with a fix; exit 1
    /// if something will make a benchmark fail. Reads only, changes nothing.
    Doctor(doctor::DoctorArgs),
    /// Runs a benchmark over a grid of flag values, N repetitions per point in alternating
    /// order; median, min/max and a 95 % confidence interval per point, as CSV and JSON
    Sweep(sweep::SweepArgs),
    /// Charts (SVG, PNG) of sweep and suite results: rate vs size, latency percentiles,
    /// scaling, several files overlaid, error bars from the repetitions
    Plot(plot::PlotArgs),
    /// Side-by-side table of results from ours, perftest and the original C suite, with ratios
    /// per matched point
    Compare(compare::CompareArgs),
    /// Bandwidth and latency between every pair of a batch of hosts over ssh (round-robin rounds
    /// of disjoint pairs): bad pairs, suspect hosts, N×N matrices and heatmaps
    Fleet(fleet::FleetArgs),
    /// Results over time in an SQLite database: record result files, list runs, name
    /// baselines, check for regressions (exit 6), write a Prometheus textfile
    History(history::HistoryArgs),
    /// Every benchmark and tool this build has: roles, the side that counts, op, suite rows
    /// (a table; --json for programs, --suite and --describe NAME for scripts)
    List(list::ListArgs),
    /// The MICA-style key-value store behind HERD alone, without RDMA: the original's
    /// mica/test.c workload or HERD's GET/PUT mix, on one core or N threads, Mops per pass
    #[command(name = "kv-bench")]
    KvBench(rdma_bench::kv::bench::KvBenchArgs),
    /// Man pages of rdma-bench, its subcommands and every benchmark binary, into DIR
    Man(man::ManArgs),
    /// Shell completion script of rdma-bench (or, with --out DIR, of every binary)
    Completions(man::CompletionsArgs),
}

/// The command line, each perftest tool's help listing only the flags that tool takes (as
/// `--help`, the man pages and the completions all show it).
fn cli_command() -> clap::Command {
    Tool::ALL.into_iter().fold(Cli::command(), |c, t| {
        c.mut_subcommand(t.name(), |sc| perf::args::help_for(t, sc))
    })
}

fn parse_cli() -> Cli {
    Cli::from_arg_matches(&cli_command().get_matches()).unwrap_or_else(|e| e.exit())
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let sub = argv.get(1).cloned().unwrap_or_default();
    let tool = Tool::named(&sub);
    let name = if sub.is_empty()
        || (tool.is_none()
            && ![
                "doctor",
                "sweep",
                "plot",
                "compare",
                "list",
                "fleet",
                "history",
                "kv-bench",
                "man",
                "completions",
            ]
            .contains(&sub.as_str()))
    {
        "rdma-bench".to_string()
    } else {
        format!("rdma-bench {sub}")
    };
    // perftest's -V/--version: its protocol version, which is what a peer checks.
    if tool.is_some() && argv[2..].iter().any(|a| a == "-V" || a == "--version") {
        println!(
            "Version: {} (rdma-bench {})",
            perf::channel::PROTOCOL_VERSION,
            env!("CARGO_PKG_VERSION")
        );
        return;
    }
    let result = match tool {
        // perftest flags we do not implement are refused by name before clap sees them (clap
        // would call them unknown).
        Some(t) => perf::args::refuse_unimplemented(t, &argv[2..]),
        None => Ok(()),
    }
    .and_then(|()| match parse_cli().command {
        Command::WriteBw(a) => perf::run::run(Tool::WRITE_BW, a),
        Command::WriteLat(a) => perf::run::run(Tool::WRITE_LAT, a),
        Command::ReadBw(a) => perf::run::run(Tool::READ_BW, a),
        Command::ReadLat(a) => perf::run::run(Tool::READ_LAT, a),
        Command::SendBw(a) => perf::run::run(Tool::SEND_BW, a),
        Command::SendLat(a) => perf::run::run(Tool::SEND_LAT, a),
        Command::AtomicBw(a) => perf::run::run(Tool::ATOMIC_BW, a),
        Command::AtomicLat(a) => perf::run::run(Tool::ATOMIC_LAT, a),
        Command::Doctor(a) => doctor::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Plot(a) => plot::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Fleet(a) => fleet::run(a),
        Command::History(a) => history::run(a),
        Command::List(a) => list::run(a),
        Command::KvBench(a) => rdma_bench::kv::bench::run(a),
        Command::Man(a) => man::man(&a, cli_command()).map(|_| ()),
        Command::Completions(a) => man::completions(&a, cli_command()),
    });
    if let Err(e) = result {
        eprintln!("{name}: {e}");
        std::process::exit(e.exit_code());
    }
}
