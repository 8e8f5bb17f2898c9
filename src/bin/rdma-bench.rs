//! rdma-bench: the tools around the paper's benchmarks, one subcommand each.
use clap::{Parser, Subcommand};
use rdma_bench::tools::doctor;

#[derive(Parser, Debug)]
#[command(
    name = "rdma-bench",
    version,
    about = "rdma-bench's tools (the paper's benchmarks are binaries of their own: rw-tput-sender, herd, …)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Is this host set up to benchmark RDMA? Devices, ports, GIDs, PCIe, NUMA, hugepages,
    /// memlock, CPU governor, SMT: one verdict line each (ok / warn / fail) with a fix; exit 1
    /// if something will make a benchmark fail. Reads only, changes nothing.
    Doctor(doctor::DoctorArgs),
}

fn run(cli: Cli) -> rdma_bench::Result<()> {
    match cli.command {
        Command::Doctor(a) => doctor::run(a),
    }
}

fn main() {
    rdma_bench::bench::runner::main::<Cli>("rdma-bench", run);
}
