//! write-reordering: a stress test of the left-to-right order in which RDMA WRITEs become visible
//! to the remote CPU.
//!
//! The client fills its 16 × 128 KiB buffer with 8-byte words holding a round counter and WRITEs
//! it to the server as 16 signaled 128 KiB WRITEs to increasing remote offsets, waits for the 16
//! completions, and starts the next round. The server, whose buffer starts zeroed, keeps picking
//! two random words `loc1 < loc2`, reads word `loc2`, then (after a full fence) word `loc1`. If
//! WRITEs land left to right, the later word can never be newer than the earlier one; a check
//! that finds `val(loc2) > val(loc1)` is counted as a violation and the first few are printed.
//! The original asserted on a violation; this one reports it and goes on.

use clap::{CommandFactory, Parser};

use super::{done_when_due, fastrand, full_fence, role_name, summary_json, Pace, Peer, TwoSided};
use crate::error::Result;
use crate::framework::{flag01, peer_lost, Benchmark, CommonArgs, Family, Meter, Output};
use crate::hot::{poll_exact, Op, SendBatch, SendSpec};
use crate::stats::JsonObject;
use crate::verbs::WorkCompletion;

const NAME: &str = "write-reordering";
/// Bytes per WRITE (kAppBufSize).
pub const CHUNK: usize = 128 * 1024;
/// WRITEs per round (kAppNumBufs).
pub const CHUNKS: usize = 16;
/// The buffer both sides register: one round's data.
pub const BUF_SIZE: usize = CHUNK * CHUNKS;
const WORDS: usize = BUF_SIZE / 8;
/// Server checks between two looks at the clock.
const CHECKS_PER_POLL: u32 = 4096;

/// write-reordering's command line: the original's `--is-client`, plus the common flags.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "write-reordering",
    // Stability mode is for the rate benchmarks: refused here, so not listed.
    mut_arg("stats_interval", |a| a.hide(true)),
    mut_arg("stats_file", |a| a.hide(true)),
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "Left-to-right ordering of RDMA WRITEs (ATC'16 rdma_bench): the client WRITEs rounds of \
             16 x 128 KiB, the server checks that no later word is ever newer than an earlier one \
             and reports the violations it observes"
)]
pub(crate) struct Args {
    /// 1: this process is the client (it WRITEs), 0: the server (it checks)
    #[arg(long, alias = "is_client", default_value = "0", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub is_client: bool,
    /// Server: print the first N violations as they are found (all of them are counted)
    #[arg(long, alias = "max_print", default_value_t = 10, value_name = "N", value_parser = crate::units::count::<usize>)]
    pub max_print: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

fn entry() -> Result<()> {
    let a = Args::parse();
    a.common.check()?;
    a.common.refuse_stability(NAME)?;
    TwoSided::run(NAME, &a, &a.common, a.is_client, BUF_SIZE, client, server)
}

/// A violation: word `loc2` (to the right) was newer than word `loc1`.
#[derive(Debug, Clone, Copy)]
struct Violation {
    loc1: u64,
    loc2: u64,
    val1: u64,
    val2: u64,
}

impl Violation {
    fn json(&self) -> JsonObject {
        JsonObject::new()
            .int("loc1", self.loc1)
            .int("loc2", self.loc2)
            .int("val1", self.val1)
            .int("val2", self.val2)
    }
}

struct Checks {
    checks: u64,
    violations: u64,
    /// The last value read from a word (the original's "counter sample").
    sample: u64,
    first: Vec<Violation>,
}

fn server(a: &Args, peer: &Peer, m: &mut Meter<'_>) -> Result<()> {
    let mr = peer.ep.mr();
    println!("main: Server ready: checking {WORDS} words of 8 bytes");
    let mut c = Checks {
        checks: 0,
        violations: 0,
        sample: 0,
        first: Vec::with_capacity(a.max_print.min(1024)),
    };
    let mut seed = 0xdead_beef_u64;
    let mut pace = Pace::new();
    let ended = loop {
        for _ in 0..CHECKS_PER_POLL {
            let mut loc1 = fastrand(&mut seed) as usize % WORDS;
            let mut loc2 = fastrand(&mut seed) as usize % WORDS;
            if loc1 == loc2 {
                continue;
            }
            if loc1 > loc2 {
                std::mem::swap(&mut loc1, &mut loc2);
            }
            // Here loc1 < loc2: read the right-hand word first.
            let val2 = mr.load_u64(loc2 * 8);
            full_fence();
            let val1 = mr.load_u64(loc1 * 8);
            c.checks += 1;
            c.sample = val2;
            if val2 > val1 {
                c.violations += 1;
                if c.first.len() < a.max_print {
                    let v = Violation {
                        loc1: loc1 as u64,
                        loc2: loc2 as u64,
                        val1,
                        val2,
                    };
                    println!(
                        "main: Server: violation: word {} = {val2} is newer than word {} = {val1}",
                        v.loc2, v.loc1
                    );
                    c.first.push(v);
                }
            }
        }
        if !m.checkpoint() {
            break Ok(());
        }
        let due = pace.poll();
        if due.report {
            report_checks(&c, pace.elapsed_s(), a.common.json);
        }
        match done_when_due(peer, &due) {
            Ok(false) => {}
            Ok(true) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    summarize_checks(&c, pace.elapsed_s(), a.common.json, ended.as_ref().err());
    ended
}

fn report_checks(c: &Checks, elapsed_s: f64, json: bool) {
    println!(
        "main: Server: {} checks, {} violations, counter sample = {}",
        c.checks, c.violations, c.sample
    );
    if json {
        let o = JsonObject::new()
            .str("bench", NAME)
            .str("role", "server")
            .num("elapsed_s", elapsed_s)
            .int("checks", c.checks)
            .int("violations", c.violations)
            .int("counter_sample", c.sample);
        println!("{}", o.finish());
    }
}

fn summarize_checks(c: &Checks, elapsed_s: f64, json: bool, error: Option<&crate::Error>) {
    if let Some(e) = error {
        println!("main: run failed: {e}");
    }
    if c.violations == 0 {
        println!(
            "main: Server: no violation observed in {} checks over {elapsed_s:.1} s (counter sample = {})",
            c.checks, c.sample
        );
    } else {
        println!(
            "main: Server: {} violations observed in {} checks over {elapsed_s:.1} s: a word was \
             seen newer than a word to its left (counter sample = {})",
            c.violations, c.checks, c.sample
        );
    }
    if json {
        let first: Vec<JsonObject> = c.first.iter().map(Violation::json).collect();
        let o = summary_json(NAME, Some("server"), error)
            .num("elapsed_s", elapsed_s)
            .int("checks", c.checks)
            .int("violations", c.violations)
            .int("counter_sample", c.sample)
            .objects("first_violations", &first);
        println!("{}", o.finish());
    }
}

fn client(a: &Args, peer: &mut Peer, m: &mut Meter<'_>) -> Result<()> {
    let remote = peer.remote_buf();
    let spec = SendSpec {
        op: Op::Write,
        postlist: CHUNKS,
        size: CHUNK as u32,
        stride: CHUNK, // WRITE i: local and remote offset i × 128 KiB, increasing
        local_offset: 0,
        remote_offset: 0,
        inline: false,
    };
    let peer_name = peer.peer.clone();
    let (qp, mr) = peer.ep.parts();
    let mut batch = SendBatch::new(qp, mr, spec, Some(remote))?;
    for i in 0..CHUNKS {
        batch.set_signaled(i, true);
    }
    println!("main: Client ready: rounds of {CHUNKS} WRITEs of {CHUNK} bytes");
    let timeout = m.poll_timeout();
    let mut wcs = [WorkCompletion::default(); CHUNKS];
    let limit = a.common.op_limit();
    let mut pace = Pace::new();
    let (mut round, mut last_round, mut last_s) = (0u64, 0u64, 0.0);
    let ended: Result<()> = loop {
        if round >= limit {
            break Ok(());
        }
        round += 1;
        for w in 0..WORDS {
            mr.store_u64(w * 8, round);
        }
        // One doorbell per WRITE, in increasing order, as the original posts them.
        let posted = (0..CHUNKS).try_for_each(|i| batch.post_one(qp, i));
        if let Err(e) = posted.and_then(|()| poll_exact(qp.send_cq(), &mut wcs, timeout)) {
            break Err(peer_lost(e, &peer_name, round > 1));
        }
        if pace.poll().report {
            let now = pace.elapsed_s();
            let rate = (round - last_round) as f64 / (now - last_s);
            report_rounds(round, rate, now, a.common.json);
            (last_round, last_s) = (round, now);
        }
        if !m.checkpoint() {
            break Ok(());
        }
    };
    let elapsed_s = pace.elapsed_s();
    if let Err(e) = &ended {
        println!("main: run failed: {e}");
    }
    let rate = round as f64 / elapsed_s;
    println!(
        "main: {}: wrote {round} rounds of {CHUNKS} x {CHUNK} bytes in {elapsed_s:.1} s ({rate:.1} rounds/s, {:.1} MB/s)",
        role_name(true),
        rate * BUF_SIZE as f64 / 1e6
    );
    if a.common.json {
        let o = summary_json(NAME, Some("client"), ended.as_ref().err())
            .num("elapsed_s", elapsed_s)
            .int("rounds", round)
            .num("rounds_per_s", rate)
            .num("mbytes_per_s", rate * BUF_SIZE as f64 / 1e6);
        println!("{}", o.finish());
    }
    ended
}

fn report_rounds(round: u64, rate: f64, elapsed_s: f64, json: bool) {
    println!(
        "main: Client: {round} rounds, {rate:.1} rounds/s ({:.1} MB/s)",
        rate * BUF_SIZE as f64 / 1e6
    );
    if json {
        let o = JsonObject::new()
            .str("bench", NAME)
            .str("role", "client")
            .num("elapsed_s", elapsed_s)
            .int("rounds", round)
            .num("rounds_per_s", rate);
        println!("{}", o.finish());
    }
}

/// write-reordering.
pub static BENCH: Benchmark = Benchmark {
    name: NAME,
    family: Family::Probe,
    roles: super::ROLES,
    reports: "server",
    op: "WRITE",
    output: Output::Probe,
    suite: &[],
    command: Args::command,
    entry,
};
