//! write-incomplete: does an RDMA WRITE's completion at the sender come before the written data is
//! visible to the remote CPU? InfiniBand allows it (IB spec 1.3 §9.7.5.1.6: a WRITE may complete
//! once the responder has acknowledged it, which may be before the data reaches memory).
//!
//! One process, two threads, two RC QPs connected directly to each other (no registry), each on
//! its own port if asked (the original needed two NICs to show it). A shared counter holds the
//! last value whose WRITE has completed. The client thread fills the first 8 MiB of its 32 MiB
//! buffer with `counter + 1`, WRITEs them to the server's buffer (unsignaled) with a signaled
//! 8-byte READ of the buffer's last word behind (`--do-read 1`, the original's kDoRead; with 0
//! the WRITE itself is signaled), waits for the completion, fences, and bumps the counter. The
//! server thread reads the counter (the minimum value allowed), fences, and reads the last word
//! of the written range: a smaller value is an observation of a completion that came before
//! remote CPU visibility. Zero observations prove nothing about the hardware.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clap::{CommandFactory, Parser};

use super::{full_fence, probe_plan, summary_json, Pace};
use crate::control::Attention;
use crate::error::{Error, Result};
use crate::framework::{
    self, flag01, Benchmark, CommonArgs, Endpoint, EndpointSpec, Family, Meter, Output, Plan, Role,
    RoleSpec, ThreadCtx,
};
use crate::hot::{poll_one, Op, PollTimeout, Remote, SendBatch, SendSpec};
use crate::stats::JsonObject;
use crate::verbs::{MemoryRegion, QpType};

const NAME: &str = "write-incomplete";
/// Registered buffer on each side (kBufSize).
pub const BUF_SIZE: usize = 32 << 20;
/// Bytes per WRITE (kWriteSize = kBufSize / 4).
pub const WRITE_SIZE: usize = BUF_SIZE / 4;
/// The word the server checks: the last one of the written range.
const CHECKED_WORD: usize = WRITE_SIZE - 8;
/// The word the READ fetches: the buffer's last, outside the written range.
const READ_WORD: usize = BUF_SIZE - 8;
/// Server checks between two looks at the clock.
const CHECKS_PER_POLL: u32 = 4096;

/// write-incomplete's command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "write-incomplete",
    // Stability mode is for the rate benchmarks: refused here, so not listed.
    mut_arg("stats_interval", |a| a.hide(true)),
    mut_arg("stats_file", |a| a.hide(true)),
    version,
    args_override_self = true,
    allow_negative_numbers = true,
    about = "Does a WRITE's completion imply remote CPU visibility? (ATC'16 rdma_bench; IB spec 1.3 \
             §9.7.5.1.6 says it need not.) Two threads, two QPs connected to each other in this \
             process; reports how often the server saw a completed WRITE's data not yet there",
    mut_arg("duration", |a| a.default_value("10").help(
        "Stop after SECS seconds and print the finding (default 10 here: this probe has no peer to end it)"
    )),
)]
pub(crate) struct Args {
    /// 1: a signaled 8-byte READ of the buffer's last word follows each (unsignaled) WRITE, and
    /// its completion is awaited (the original's kDoRead); 0: the WRITE itself is signaled
    #[arg(long, alias = "do_read", default_value = "1", value_parser = flag01, action = clap::ArgAction::Set, value_name = "0|1")]
    pub do_read: bool,
    /// Port (libhrd's port index) of the client thread's QP [default: --port-index]
    #[arg(long, alias = "client_port_index", value_name = "N")]
    pub client_port_index: Option<usize>,
    /// Port (libhrd's port index) of the server thread's QP [default: --port-index]. The
    /// original put the two QPs on different NICs
    #[arg(long, alias = "server_port_index", value_name = "N")]
    pub server_port_index: Option<usize>,
    /// Print the first N observations as they are made (all of them are counted)
    #[arg(long, alias = "max_print", default_value_t = 10, value_name = "N", value_parser = crate::units::count::<usize>)]
    pub max_print: usize,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: CommonArgs,
}

/// What the server thread saw.
#[derive(Debug, Default)]
struct Seen {
    checks: u64,
    observations: u64,
}

fn entry() -> Result<()> {
    let a = Args::parse();
    a.common.check()?;
    a.common.refuse_stability(NAME)?;
    framework::run(&Incomplete(&a), &a.common)?;
    Ok(())
}

/// The one process: a client and a server QP connected to each other.
struct Incomplete<'a>(&'a Args);

/// The two QPs, connected.
struct Pair {
    client: Endpoint,
    server: Endpoint,
}

impl Role for Incomplete<'_> {
    type Thread = Pair;

    fn plan(&self) -> Plan {
        probe_plan(NAME, false, self.0.common.json)
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Pair> {
        let (a, c) = (self.0, ctx.common);
        let ports = (
            a.client_port_index.unwrap_or(c.port_index),
            a.server_port_index.unwrap_or(c.port_index),
        );
        let spec = EndpointSpec {
            qp_type: QpType::Rc,
            queue_depth: 128,
            recv_depth: 1,
            max_inline: 0,
            buf_size: BUF_SIZE,
            fill: 0,
            ex: false,
            access: None,
        };
        let mut client = Endpoint::new(&ctx.open_port(ports.0)?, spec, c.placement())?;
        let mut server = Endpoint::new(&ctx.open_port(ports.1)?, spec, c.placement())?;
        let (client_info, server_info) = (client.info(), server.info());
        server.qp_mut().connect(&client_info)?;
        client.qp_mut().connect(&server_info)?;
        println!(
            "main: client QP {} (port index {}) connected to server QP {} (port index {})",
            client_info.qpn, ports.0, server_info.qpn, ports.1
        );
        Ok(Pair { client, server })
    }

    /// The client thread WRITEs while this one checks; the finding at the end.
    fn measure(&self, p: &mut Pair, m: &mut Meter<'_>) -> Result<()> {
        let a = self.0;
        let counter = AtomicU64::new(0);
        let server_mr = Arc::clone(p.server.mr());
        let remote = Remote::of(&p.server.info());
        let attention = m.attention();
        let mut pace = Pace::new();
        let client = &mut p.client;
        let (seen, writes) = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let r = write_loop(a, client, remote, &counter, attention);
                attention.request_stop();
                r
            });
            let seen = check_loop(a, &server_mr, &counter, &mut pace, m);
            attention.request_stop();
            let writes = writer
                .join()
                .unwrap_or_else(|_| Err(Error::protocol("the client thread panicked")));
            (seen, writes)
        });
        let ended = seen.and_then(|seen| writes.map(|w| (seen, w)));
        let elapsed_s = pace.elapsed_s();
        match ended {
            Ok((seen, writes)) => {
                finding(a, &seen, writes, elapsed_s);
                Ok(())
            }
            Err(e) => {
                println!("main: run failed: {e}");
                if a.common.json {
                    let o = summary_json(NAME, None, Some(&e));
                    println!("{}", o.finish());
                }
                Err(e)
            }
        }
    }
}

/// The client thread: WRITE `counter + 1` over the first 8 MiB, wait for the completion, fence,
/// publish the value. Returns the number of completed WRITEs.
fn write_loop(
    a: &Args,
    ep: &mut Endpoint,
    remote: Remote,
    counter: &AtomicU64,
    attention: Attention,
) -> Result<u64> {
    let spec = SendSpec {
        op: Op::Write,
        postlist: if a.do_read { 2 } else { 1 },
        size: WRITE_SIZE as u32,
        stride: 0,
        local_offset: 0,
        remote_offset: 0,
        inline: false,
    };
    let (qp, mr) = ep.parts();
    let mut batch = SendBatch::new(qp, mr, spec, Some(remote))?;
    let last = batch.len() - 1;
    if a.do_read {
        // WR 1 becomes the READ of the buffer's last word, into the same word locally.
        batch.retarget_sized(1, Op::Read, READ_WORD as u64, 8)?;
        batch.set_local_addr(1, mr.addr() as u64 + READ_WORD as u64)?;
    }
    batch.set_signaled(last, true);
    let timeout = PollTimeout::new(attention);
    let limit = a.common.op_limit();
    let mut writes = 0u64;
    // The other thread takes the run's ticks: this one only looks for the stop.
    while writes < limit && !attention.stop_requested() {
        let to_write = counter.load(Ordering::Relaxed) + 1;
        for w in 0..WRITE_SIZE / 8 {
            mr.store_u64(w * 8, to_write);
        }
        batch.post(qp)?;
        poll_one(qp.send_cq(), timeout)?;
        full_fence();
        // From here on the server may expect to see `to_write` in its buffer.
        counter.store(to_write, Ordering::SeqCst);
        writes += 1;
    }
    Ok(writes)
}

/// The server thread (this one): until the run ends, compare the last written word with the
/// counter read before it.
fn check_loop(
    a: &Args,
    mr: &MemoryRegion,
    counter: &AtomicU64,
    pace: &mut Pace,
    m: &mut Meter<'_>,
) -> Result<Seen> {
    let mut seen = Seen::default();
    loop {
        for _ in 0..CHECKS_PER_POLL {
            let minimum = counter.load(Ordering::SeqCst);
            full_fence();
            let actual = mr.load_u64(CHECKED_WORD);
            seen.checks += 1;
            if actual < minimum {
                seen.observations += 1;
                if seen.observations <= a.max_print as u64 {
                    println!(
                        "main: observed: the last word of the WRITE is {actual}, but WRITE {minimum} had completed"
                    );
                }
            }
        }
        if !m.checkpoint() {
            return Ok(seen);
        }
        if pace.poll().report {
            let writes = counter.load(Ordering::Relaxed);
            println!(
                "main: {} checks, {writes} WRITEs completed, {} observations of a completed WRITE not yet visible",
                seen.checks, seen.observations
            );
            if a.common.json {
                let o = JsonObject::new()
                    .str("bench", NAME)
                    .num("elapsed_s", pace.elapsed_s())
                    .int("checks", seen.checks)
                    .int("writes", writes)
                    .int("observations", seen.observations);
                println!("{}", o.finish());
            }
        }
    }
}

/// The finding: what was observed, and no more than that.
fn finding(a: &Args, seen: &Seen, writes: u64, elapsed_s: f64) {
    let what = if a.do_read {
        "the completion of the READ behind a WRITE"
    } else {
        "a WRITE's completion"
    };
    let line = if writes == 0 {
        format!("no WRITE completed in {elapsed_s:.1} s: nothing to observe")
    } else if seen.observations > 0 {
        format!(
            "observed {} times in {} checks over {writes} completed WRITEs: {what} came before \
             the written data was visible to the remote CPU (IB spec 1.3 §9.7.5.1.6 allows this)",
            seen.observations, seen.checks
        )
    } else {
        format!(
            "not observed in {} checks over {writes} completed WRITEs: every check found the \
             last written word at least as new as the last completed WRITE, with {what} as the \
             signal (this does not prove that a completion implies visibility; IB spec 1.3 \
             §9.7.5.1.6 does not promise it)",
            seen.checks
        )
    };
    println!("main: finding: {line}");
    if a.common.json {
        let o = summary_json(NAME, None, None)
            .bool("do_read", a.do_read)
            .num("elapsed_s", elapsed_s)
            .int("write_bytes", WRITE_SIZE as u64)
            .int("writes", writes)
            .int("checks", seen.checks)
            .int("observations", seen.observations)
            .bool("observed", seen.observations > 0);
        println!("{}", o.finish());
    }
}

/// write-incomplete.
pub static BENCH: Benchmark = Benchmark {
    name: NAME,
    family: Family::Probe,
    roles: &[RoleSpec::SERVER.passive().own_threads()],
    reports: "server",
    op: "WRITE",
    output: Output::Probe,
    suite: &[],
    command: Args::command,
    entry,
};
