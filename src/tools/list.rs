//! `rdma-bench list`: every benchmark this build has, from its descriptor ([`Benchmark`]), and
//! perftest's tools: for people (a table), for programs (`--json`), for `run-suite.sh`
//! (`--suite`) and for `run-local.sh` (`--describe NAME`, as `<binary> --describe` prints it).

use clap::Args;
use serde_json::{json, Value};

use crate::bench;
use crate::error::{Error, Result};
use crate::framework::Benchmark;
use crate::perf::{Tool, SUITE};

/// `rdma-bench list`'s flags.
#[derive(Args, Debug, Clone)]
pub struct ListArgs {
    /// All of them as one JSON array (name, family, about, roles with their flags and whether
    /// they count, the reporting role, op, output, suite rows)
    #[arg(long, conflicts_with_all = ["suite", "describe"])]
    pub json: bool,
    /// The suite's runs, one line each: `NAME FLAGS…` (what run-suite.sh runs, in its order)
    #[arg(long, conflicts_with = "describe")]
    pub suite: bool,
    /// One benchmark's descriptor as lines for scripts (what `<binary> --describe` prints)
    #[arg(long, value_name = "NAME")]
    pub describe: Option<String>,
}

/// Runs `rdma-bench list`.
pub fn run(a: ListArgs) -> Result<()> {
    if let Some(name) = &a.describe {
        let b = bench::named(name).ok_or_else(|| {
            Error::Usage(format!(
                "--describe {name}: no such benchmark (`rdma-bench list` names them; perftest's \
                 tools are subcommands: rdma-bench {name} --help)"
            ))
        })?;
        print!("{}", b.describe());
    } else if a.suite {
        for line in suite() {
            println!("{line}");
        }
    } else if a.json {
        let mut all: Vec<Value> = bench::ALL.iter().map(|b| b.json()).collect();
        all.extend(Tool::ALL.iter().map(|&t| tool_json(t)));
        let text = serde_json::to_string_pretty(&all)
            .map_err(|e| Error::protocol(format!("JSON: {e}")))?;
        println!("{text}");
    } else {
        print!("{}", table());
    }
    Ok(())
}

/// The suite, in order: the microbenchmarks, perftest's rows, then the applications, rc-swarm
/// and HERD (ALL's order within each).
pub fn suite() -> Vec<String> {
    fn rows(b: &Benchmark) -> impl Iterator<Item = String> + '_ {
        b.suite.iter().map(move |s| format!("{} {s}", b.name))
    }
    let micro = |b: &&&Benchmark| b.family == crate::framework::Family::Microbenchmark;
    let mut out: Vec<String> = bench::ALL
        .iter()
        .filter(micro)
        .flat_map(|b| rows(b))
        .collect();
    out.extend(
        SUITE
            .iter()
            .map(|(t, flags)| format!("{} {flags}", t.name())),
    );
    out.extend(
        bench::ALL
            .iter()
            .filter(|b| !micro(b))
            .flat_map(|b| rows(b)),
    );
    out
}

fn tool_json(t: Tool) -> Value {
    json!({
        "name": t.name(),
        "family": "perftest",
        "about": t.about(),
        "roles": [
            {"name": "server", "flags": [], "counts": true, "outlives": true, "num_threads": false},
            {"name": "client", "flags": ["SERVER"], "counts": true, "outlives": false, "num_threads": false},
        ],
        "reports": "client",
        "op": format!("{:?}", t.verb).to_uppercase(),
        "output": "perftest",
        "suite": SUITE.iter().filter(|(s, _)| *s == t).map(|(_, f)| *f).collect::<Vec<_>>(),
    })
}

/// The table for people: name, family, roles (`*` counts), op, what it measures.
fn table() -> String {
    let mut out = format!(
        "{:<20} {:<15} {:<26} {:<10} about\n",
        "benchmark", "family", "roles (* counts)", "op"
    );
    for b in bench::ALL {
        let roles: Vec<String> = b
            .roles
            .iter()
            .map(|r| format!("{}{}", r.name, if r.counts { "*" } else { "" }))
            .collect();
        out.push_str(&format!(
            "{:<20} {:<15} {:<26} {:<10} {}\n",
            b.name,
            b.family.name(),
            roles.join(" "),
            b.op,
            b.about()
        ));
    }
    for t in Tool::ALL {
        out.push_str(&format!(
            "{:<20} {:<15} {:<26} {:<10} {}\n",
            format!("rdma-bench {}", t.name()),
            "perftest",
            "server* client*",
            format!("{:?}", t.verb).to_uppercase(),
            t.about()
        ));
    }
    out
}
