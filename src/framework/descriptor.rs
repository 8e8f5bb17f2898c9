//! What a benchmark is, declared once: the binaries run it through [`main`], `rdma-bench list`
//! lists it, `run-local.sh` starts its roles from `<binary> --describe`, the results reader knows
//! which role's rate is its result, and the suite runs its rows.

use serde_json::{json, Value};

use crate::error::Result;

/// What kind of benchmark it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// One of the paper's microbenchmarks (or a user's own), two roles over connected or UD QPs.
    Microbenchmark,
    /// One of the paper's applications (sequencers, echo servers, HERD).
    Application,
    /// A WRITE-ordering probe (latency windows, not rates).
    Probe,
    /// rc-swarm: N equal processes.
    Swarm,
}

impl Family {
    /// Its name in `--describe` and `rdma-bench list`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Microbenchmark => "microbenchmark",
            Family::Application => "application",
            Family::Probe => "probe",
            Family::Swarm => "swarm",
        }
    }
}

/// What its output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Per-thread rates once a second and `main: Total throughput = X Mops`.
    Rate,
    /// Rates, and a latency summary per thread (average, median, 99th percentile).
    RateAndLatency,
    /// Latency windows of a probe.
    Probe,
    /// rc-swarm's `Machine <id> average: X M/s`.
    Machine,
}

impl Output {
    /// Its name in `--describe` and `rdma-bench list`.
    pub fn name(self) -> &'static str {
        match self {
            Output::Rate => "rate",
            Output::RateAndLatency => "rate+latency",
            Output::Probe => "probe",
            Output::Machine => "machine",
        }
    }
}

/// One role of a benchmark: a kind of process.
#[derive(Debug, Clone, Copy)]
pub struct RoleSpec {
    /// As report lines and JSON name it ("server", "client", "worker", "master", "machine").
    pub name: &'static str,
    /// The flags that start a process in this role (e.g. `--is-client 1`).
    pub flags: &'static [&'static str],
    /// Its threads count operations (report lines and a throughput summary).
    pub counts: bool,
    /// It runs until its peers say they are done (a local run gives it a longer `--duration`).
    pub outlives: bool,
    /// `--num-threads` sets its threads (else it has a thread-count flag of its own, such as
    /// `--num-workers`, and a local run gives `--num-threads` to the other roles only).
    pub num_threads: bool,
}

impl RoleSpec {
    /// The servers (no flag starts them) whose threads count operations, with `--num-threads`.
    pub const SERVER: RoleSpec = RoleSpec {
        name: "server",
        flags: &[],
        counts: true,
        outlives: false,
        num_threads: true,
    };
    /// The clients (`--is-client 1`) whose threads count operations, with `--num-threads`.
    pub const CLIENT: RoleSpec = RoleSpec {
        name: "client",
        flags: &["--is-client", "1"],
        ..RoleSpec::SERVER
    };
    /// This role's threads do not count (targets, masters).
    pub const fn passive(self) -> RoleSpec {
        RoleSpec {
            counts: false,
            ..self
        }
    }
    /// This role waits for its peers to say they are done.
    pub const fn outliving(self) -> RoleSpec {
        RoleSpec {
            outlives: true,
            ..self
        }
    }
    /// This role's thread count is a flag of its own (not `--num-threads`).
    pub const fn own_threads(self) -> RoleSpec {
        RoleSpec {
            num_threads: false,
            ..self
        }
    }
    /// The same role under another name, started with `flags`.
    pub const fn named(self, name: &'static str, flags: &'static [&'static str]) -> RoleSpec {
        RoleSpec {
            name,
            flags,
            ..self
        }
    }
}

/// A benchmark, declared once (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct Benchmark {
    /// The binary's name, and the name in every report line and JSON object.
    pub name: &'static str,
    /// Its kind.
    pub family: Family,
    /// Its roles, in the order a local run starts them.
    pub roles: &'static [RoleSpec],
    /// The role whose rate is the benchmark's result (compare, plot, the suite).
    pub reports: &'static str,
    /// What it measures by default, as report lines name the operation (e.g. "WRITE").
    pub op: &'static str,
    /// Its output.
    pub output: Output,
    /// The suite's runs of it (flags), scaled to one host.
    pub suite: &'static [&'static str],
    /// Its command line (clap), for help, man pages and completions.
    pub command: fn() -> clap::Command,
    /// Parses the process's arguments, validates them and runs the role they pick.
    pub entry: fn() -> Result<()>,
}

impl Benchmark {
    /// The role named `name`.
    pub fn role(&self, name: &str) -> Option<&RoleSpec> {
        self.roles.iter().find(|r| r.name == name)
    }

    /// One sentence on what it measures (its command's `about`).
    pub fn about(&self) -> String {
        (self.command)()
            .get_about()
            .map(|a| a.to_string())
            .unwrap_or_default()
    }

    /// `--describe`'s lines, for scripts (`while read -r key rest`): `name`, `family`,
    /// `reports`, `op`, `output`, then `role NAME COUNTS OUTLIVES NUM_THREADS [FLAGS…]` (0/1)
    /// per role in start order, then `suite FLAGS…` per suite row.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "name {}\nfamily {}\nreports {}\nop {}\noutput {}\n",
            self.name,
            self.family.name(),
            self.reports,
            self.op,
            self.output.name()
        );
        for r in self.roles {
            out.push_str(&format!(
                "role {} {} {} {}",
                r.name,
                u8::from(r.counts),
                u8::from(r.outlives),
                u8::from(r.num_threads)
            ));
            for f in r.flags {
                out.push(' ');
                out.push_str(f);
            }
            out.push('\n');
        }
        for s in self.suite {
            out.push_str(&format!("suite {s}\n"));
        }
        out
    }

    /// As one JSON object (`rdma-bench list --json`).
    pub fn json(&self) -> Value {
        let roles: Vec<Value> = self
            .roles
            .iter()
            .map(|r| {
                json!({
                    "name": r.name,
                    "flags": r.flags,
                    "counts": r.counts,
                    "outlives": r.outlives,
                    "num_threads": r.num_threads,
                })
            })
            .collect();
        json!({
            "name": self.name,
            "family": self.family.name(),
            "about": self.about(),
            "roles": roles,
            "reports": self.reports,
            "op": self.op,
            "output": self.output.name(),
            "suite": self.suite,
        })
    }
}

/// A benchmark binary's whole `main`: `--describe` (alone) prints [`Benchmark::describe`];
/// otherwise the original's environment for the provider in use is set where the user has not
/// and `--no-provider-env` is not given ([`crate::verbs::provider_env`]), the benchmark's entry parses the flags (clap exits 2 on bad
/// ones) and runs, and an error becomes one line and its exit code
/// ([`crate::Error::exit_code`]: 1 setup, 3 peer lost, 4 verification, 130 stopped before
/// measuring). Call it from `main` before any thread is spawned (it sets environment variables).
pub fn main(b: &Benchmark) {
    // SAFETY: first thing in main: no other thread of ours exists yet.
    unsafe { crate::verbs::provider_env::set_for_provider_in_use() };
    let mut args = std::env::args_os().skip(1);
    if let (Some(first), None) = (args.next(), args.next()) {
        if first == "--describe" {
            print!("{}", b.describe());
            return;
        }
    }
    if let Err(e) = (b.entry)() {
        eprintln!("{}: {e}", b.name);
        std::process::exit(e.exit_code());
    }
}
