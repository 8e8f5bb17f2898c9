//! `rdma-bench history`: results over time in an SQLite database. `record` imports what the
//! tools already write (through the results reader), `list` shows the runs, `baseline` names
//! some, `check` finds regressions against a baseline or the median of earlier runs, `prom`
//! writes the latest of each as a Prometheus textfile; `plot --trend` draws a metric over time.
//!
//! `db` is the schema and the one place that opens a database (refusing, untouched, one that is
//! not ours or is of another schema version).

pub mod check;
pub mod db;
pub mod list;
pub mod prom;
pub mod record;
pub mod trend;

pub use prom::write_prom;

use crate::error::Result;

const AFTER: &str = "\
Importing is the route into the history: run a benchmark with --json (or perftest with \
--out_json, a sweep, the suite) as usual, then `history record DB FILE…`; no tool takes a \
--record flag. A run is one result point: one row of the suite's results.csv, one sweep point, \
one size of a perftest -a run. Same parameters = same canonical JSON text of them (op, size, \
postlist, threads, a sweep's other parameters, a suite row's role and flags).

check compares each run of the latest record (or --run) with the same host, device, tool and \
parameters in --baseline NAME, or with the median of the last --median-of N (5) earlier runs \
that were not questionable. Throughput (mops, bw_mbps) regresses below -max-drop %, latency \
(lat_avg/median/p99/p999) above +max-rise %; lat_min and lat_max are stored, not checked.

Exit codes: 0 fine (check: no regression), 1 the database cannot be written (read-only path), \
2 unusable input (no such file, run or baseline, nothing to compare with, a file that is not our \
database or of a newer schema: left untouched), 4 check found a regression (one line each).

Examples:
  rw-tput-sender --size 32 --json … > run.json; rdma-bench history record h.db run.json
  rdma-bench history record h.db target/suite/results.csv target/sweep/write.json
  rdma-bench history list h.db --tool rw-tput-sender --last 10
  rdma-bench history baseline h.db --name good
  rdma-bench history check h.db --baseline good --max-drop 5
  rdma-bench history prom h.db /var/lib/prometheus/node-exporter/rdma_bench.prom
  rdma-bench plot --trend h.db --metric mops -o trend.svg";

/// `rdma-bench history`'s flags.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = AFTER)]
pub struct HistoryArgs {
    /// What to do
    #[command(subcommand)]
    pub command: HistoryCommand,
}

/// `rdma-bench history`'s subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum HistoryCommand {
    /// Imports result files (benchmarks' --json output, perftest's JSON or output, sweep files,
    /// the suite's results.csv) with this host's device, firmware, driver, kernel and rdma-core
    Record(record::RecordArgs),
    /// One line per run: id, time, host, device, tool, parameters, main metric, trusted
    List(list::ListArgs),
    /// Names runs (default: the latest record's) as a baseline
    Baseline(check::BaselineArgs),
    /// Compares the latest runs with a baseline or the median of earlier runs; exit 6 on a
    /// regression
    Check(check::CheckArgs),
    /// Writes the latest run of each shape as a Prometheus textfile-collector file
    Prom(prom::PromArgs),
}

/// Runs `rdma-bench history`.
pub fn run(a: HistoryArgs) -> Result<()> {
    match &a.command {
        HistoryCommand::Record(r) => record::run(r),
        HistoryCommand::List(l) => list::run(l),
        HistoryCommand::Baseline(b) => check::baseline(b),
        HistoryCommand::Check(c) => check::check(c),
        HistoryCommand::Prom(p) => prom::run(p),
    }
}
