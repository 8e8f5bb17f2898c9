//! The original suite's three probes of how RDMA WRITEs become visible to the remote CPU:
//!
//! - [`reordering`] (write-reordering): does a CPU polling the target buffer ever see a later
//!   byte of a stream of WRITEs before an earlier one?
//! - [`incomplete`] (write-incomplete): does a WRITE's completion at the sender come before the
//!   data is visible to the remote CPU? (IB spec 1.3 §9.7.5.1.6 allows it.)
//! - [`flush`] (write-flush): how long does it take to "flush" WRITEs with a READ behind them?
//!
//! They report what they observed, never a verdict on the hardware: a count of zero observations
//! is not a proof. What they share lives here: the clock that ends a run and times its reports,
//! the registry meeting of the two-process probes, and a latency histogram.

mod flush;
mod incomplete;
mod reordering;

pub use flush::BENCH as FLUSH;
pub use incomplete::BENCH as INCOMPLETE;
pub use reordering::BENCH as REORDERING;

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::framework::{CommonArgs, EndpointSpec, Meter, Pair, Plan, Role, RoleSpec, ThreadCtx};
use crate::stats::RunInfo;
use crate::verbs::QpType;

/// What is due in a probe's loop (see [`Pace::poll`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Due {
    /// A second has passed since the last report.
    pub report: bool,
    /// 200 ms have passed since the last look at the registry (a passive side's "is the peer
    /// done?").
    pub peek: bool,
}

/// The probes' own pace: when the once-a-second report and the passive side's look at the
/// registry are due, and the time since the measurement began. (The end of the run — a stop or
/// `--duration` — comes from the lifecycle's checkpoint.)
pub(crate) struct Pace {
    start: Instant,
    next_report: Instant,
    next_peek: Instant,
}

/// How often a passive side looks for its peer's done marker (libhrd's registry poll).
const PEEK_EVERY: Duration = Duration::from_millis(200);

impl Pace {
    /// Starts now.
    pub fn new() -> Self {
        let start = Instant::now();
        Pace {
            start,
            next_report: start + Duration::from_secs(1),
            next_peek: start + PEEK_EVERY,
        }
    }

    /// What is due now.
    pub fn poll(&mut self) -> Due {
        let now = Instant::now();
        let mut due = Due::default();
        if now >= self.next_report {
            due.report = true;
            self.next_report = now + Duration::from_secs(1);
        }
        if now >= self.next_peek {
            due.peek = true;
            self.next_peek = now + PEEK_EVERY;
        }
        due
    }

    /// Seconds since the pace started.
    pub fn elapsed_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}

/// The two-process probes' roles: a server and a client, the client active.
pub(crate) const ROLES: &[RoleSpec] = &[
    RoleSpec::SERVER.passive().outliving().own_threads(),
    RoleSpec::CLIENT.passive().own_threads(),
];

/// A two-process probe's role (write-reordering, write-flush): each side meets the other under the
/// original's names and runs its own loop; the client, the active side, says "done" at the end.
pub(crate) struct TwoSided<'a, A> {
    /// The probe's name.
    pub name: &'static str,
    /// Its flags.
    pub args: &'a A,
    /// This process runs the client.
    pub is_client: bool,
    /// `--json`.
    pub json: bool,
    /// The buffer each side registers (and needs of the other).
    pub buf_size: usize,
    /// The client's loop.
    pub client: fn(&A, &mut Peer, &mut Meter<'_>) -> Result<()>,
    /// The server's loop.
    pub server: fn(&A, &Peer, &mut Meter<'_>) -> Result<()>,
}

impl<'a, A: Sync> TwoSided<'a, A> {
    /// Runs this process's side of probe `name` with flags `args` (its buffer of `buf_size`
    /// bytes on each side) through the lifecycle.
    pub fn run(
        name: &'static str,
        args: &'a A,
        common: &CommonArgs,
        is_client: bool,
        buf_size: usize,
        client: fn(&A, &mut Peer, &mut Meter<'_>) -> Result<()>,
        server: fn(&A, &Peer, &mut Meter<'_>) -> Result<()>,
    ) -> Result<()> {
        let json = common.json;
        let probe = TwoSided {
            name,
            args,
            is_client,
            json,
            buf_size,
            client,
            server,
        };
        crate::framework::run(&probe, common)?;
        Ok(())
    }
}

impl<A: Sync> Role for TwoSided<'_, A> {
    type Thread = Peer;

    fn plan(&self) -> Plan {
        probe_plan(self.name, self.is_client, self.json)
    }

    fn setup(&self, ctx: &ThreadCtx<'_>) -> Result<Peer> {
        let need = self.buf_size as u64;
        meet(self.name, ctx, self.is_client, self.buf_size, need)
    }

    fn measure(&self, peer: &mut Peer, m: &mut Meter<'_>) -> Result<()> {
        if self.is_client {
            (self.client)(self.args, peer, m)
        } else {
            (self.server)(self.args, peer, m)
        }
    }

    fn finish(&self, peer: Peer, _: &ThreadCtx<'_>) -> Result<()> {
        if self.is_client {
            peer.finish()?;
        }
        Ok(())
    }
}

/// What every probe's plan says: one thread, its own reports and summary.
pub(crate) fn probe_plan(bench: &'static str, is_client: bool, json: bool) -> Plan {
    Plan::reporting_itself(RunInfo {
        bench,
        role: role_name(is_client),
        op: "WRITE",
        size: 0,
        postlist: 1,
        first_id: 0,
        json,
    })
}

/// The CPU's full fence between two loads (or a load and a store): `mfence` on x86, the
/// original's "hardware barrier".
#[inline(always)]
pub(crate) fn full_fence() {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// libhrd's `hrd_fastrand`: a 64-bit LCG whose high half is the output.
#[inline(always)]
pub(crate) fn fastrand(seed: &mut u64) -> u32 {
    *seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
    (*seed >> 32) as u32
}

/// One side of a two-process probe: a connected pair under the original's names, `server` and
/// `client`.
pub(crate) type Peer = Pair;

/// Makes an RC endpoint with a zeroed buffer of `buf_size` bytes on `--port-index` and meets the
/// other side through the registry. The peer must expose at least `need_remote` bytes (a smaller
/// buffer is another benchmark's `server`/`client` under the same names).
fn meet(
    bench: &str,
    ctx: &ThreadCtx<'_>,
    is_client: bool,
    buf_size: usize,
    need_remote: u64,
) -> Result<Peer> {
    let (me, peer) = if is_client {
        ("client", "server")
    } else {
        ("server", "client")
    };
    let spec = EndpointSpec {
        qp_type: QpType::Rc,
        queue_depth: 128,
        recv_depth: 1,
        max_inline: 60,
        buf_size,
        fill: 0,
        ex: false,
        access: None,
    };
    let port = ctx.open_port(ctx.common.port_index)?;
    println!(
        "main: {} published. Waiting for {peer}.",
        role_name(is_client)
    );
    let pair = Pair::meet(ctx, &port, spec, me.into(), peer.into())?;
    if pair.remote.info.buf_size < need_remote {
        return Err(Error::config(format!(
            "the peer '{peer}' exposes a {}-byte buffer but {bench} needs {need_remote}: is it \
             another benchmark's {peer}? (separate runs with --run-name)",
            pair.remote.info.buf_size
        )));
    }
    println!("main: {} connected to {peer}", role_name(is_client));
    Ok(pair)
}

/// A passive side's look, when `due` says it is time: true once the active peer said it is done.
pub(crate) fn done_when_due(peer: &Peer, due: &Due) -> Result<bool> {
    if !due.peek {
        return Ok(false);
    }
    peer.peer_done()
}

/// "Client" or "Server", as the report lines say.
pub(crate) fn role_name(is_client: bool) -> &'static str {
    if is_client {
        "Client"
    } else {
        "Server"
    }
}

/// A latency histogram of timestamp ticks: exact below 128 ticks, then 128 buckets per power of
/// two (under 0.8 % relative error), plus the exact count, sum, minimum and maximum. Recording
/// is two increments and a compare; the memory is fixed (58 KiB) however long the run.
pub(crate) struct Histogram {
    buckets: Box<[u64]>,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            buckets: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    #[inline(always)]
    fn index(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let shift = 63 - v.leading_zeros() - SUB_BITS;
        ((shift as u64 + 1) * SUB + ((v >> shift) - SUB)) as usize
    }

    /// The middle of bucket `i`'s range.
    fn value_of(i: usize) -> f64 {
        let i = i as u64;
        if i < SUB {
            return i as f64;
        }
        let shift = i / SUB - 1;
        let low = (SUB + i % SUB) << shift;
        low as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
    }

    /// Adds one sample.
    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        self.buckets[Self::index(v)] += 1;
        self.count += 1;
        self.sum = self.sum.saturating_add(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        self.buckets.fill(0);
        self.count = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mean, minimum and maximum (exact), or None without samples.
    pub fn mean_min_max(&self) -> Option<(f64, u64, u64)> {
        (self.count > 0).then(|| (self.sum as f64 / self.count as f64, self.min, self.max))
    }

    /// The sample of rank ⌊p·count⌋ in sorted order (as the original's `Latency::perc`), within
    /// its bucket's error (exact for the first and last rank) and clamped to the exact extremes;
    /// None without samples.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((p * self.count as f64) as u64).min(self.count - 1);
        // The extreme ranks are known exactly.
        if rank == 0 {
            return Some(self.min as f64);
        }
        if rank == self.count - 1 {
            return Some(self.max as f64);
        }
        let mut seen = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen > rank {
                return Some(Self::value_of(i).clamp(self.min as f64, self.max as f64));
            }
        }
        Some(self.max as f64)
    }
}

/// The head of a probe's JSON summary: bench, role (if any), `"summary": true`, `"ok"` and the
/// error of a run that failed.
pub(super) fn summary_json(
    bench: &str,
    role: Option<&str>,
    error: Option<&crate::error::Error>,
) -> crate::stats::JsonObject {
    let mut o = crate::stats::JsonObject::new().str("bench", bench);
    if let Some(r) = role {
        o = o.str("role", r);
    }
    let o = o.bool("summary", true).bool("ok", error.is_none());
    match error {
        Some(e) => o.str("error", &e.to_string()),
        None => o,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_percentiles_within_a_bucket() {
        let mut h = Histogram::new();
        assert!(h.percentile(0.5).is_none());
        for v in 1..=100u64 {
            h.record(v);
        }
        assert_eq!(h.percentile(0.5), Some(51.0));
        assert_eq!(h.percentile(0.99), Some(100.0));
        assert_eq!(h.mean_min_max(), Some((50.5, 1, 100)));
        h.clear();
        for v in [1_000u64, 20_000, 300_000, 4_000_000_000] {
            for _ in 0..10 {
                h.record(v);
            }
        }
        for (p, v) in [
            (0.1, 1_000.0),
            (0.3, 20_000.0),
            (0.6, 300_000.0),
            (0.99, 4e9),
        ] {
            let got = h.percentile(p).unwrap();
            assert!((got - v).abs() / v < 0.008, "p{p}: {got} vs {v}");
        }
        assert_eq!(h.percentile(0.0), Some(1_000.0));
        assert_eq!(h.percentile(1.0), Some(4e9));
        h.record(u64::MAX);
        assert_eq!(h.percentile(1.0), Some(u64::MAX as f64));
    }

    #[test]
    fn every_bucket_index_is_in_range_and_monotone() {
        let mut last = 0;
        for shift in 0..64 {
            for v in [1u64 << shift, (1u64 << shift) | ((1u64 << shift) - 1)] {
                let i = Histogram::index(v);
                assert!(i < BUCKETS && i >= last, "{v}: {i}");
                last = i;
            }
        }
        assert_eq!(fastrand(&mut 0xdead_beef), 959_880_212);
    }
}
