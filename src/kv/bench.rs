//! `rdma-bench kv-bench`: the store alone, without RDMA, on one core or on N threads with a store
//! each (as HERD's workers). Workloads: the original's `mica/test.c` (passes of all-PUT then
//! all-GET over a fresh permutation of the keys), the same with mixed passes, and HERD's (a
//! populated store, keys drawn as HERD's clients draw them). Prints Mops per pass.

use std::time::Instant;

use clap::{Args, ValueEnum};

use super::{
    splitmix64, Key, Op, Resp, Store, StoreConfig, Zipf, MAX_BATCH, MAX_VALUE, OP_GET, OP_PUT,
    RESP_GET_SUCCESS, RESP_PUT_SUCCESS, SPLITMIX_GAMMA,
};
use crate::error::{Error, Result};
use crate::mem::{HugePolicy, Placement};

/// What the timed loops run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// The original's mica/test.c: pass 1 PUTs every key into the empty store (inserts), pass 2
    /// GETs every key, pass 3 PUTs every key again (updates in place), and so on; each pass over a
    /// fresh permutation of the keys (test.c's shuffle, hrd_fastrand seeded 0xdeadbeef)
    Passes,
    /// Pass 1 as in `passes` (inserts); every later pass over a fresh permutation, each operation
    /// a PUT with probability --update-percentage, else a GET
    Mix,
    /// HERD's workers: the store populated with every key first (untimed), then passes of
    /// --num-keys operations whose keys are drawn as HERD's clients draw them (uniform, or
    /// --zipf), each a PUT with probability --update-percentage
    Herd,
}

/// `rdma-bench kv-bench`'s flags.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Sizes are plain integers (bytes or counts). Each thread has its own \
store, keys and operations; pin the process with taskset to choose cores. The rates are \
operations of the timed loop (the store's batches and the check of each response: a PUT's \
status, the bytes of a GET hit summed, as test.c does) per second of wall clock; building a \
pass's operations is not timed."
)]
pub struct KvBenchArgs {
    /// What the passes run (see the values)
    #[arg(long, value_enum, default_value = "passes")]
    pub workload: Workload,
    /// Keys (TEST_NUM_KEYS, HERD_NUM_KEYS): key i is the 128-bit hash of the integer i
    #[arg(long, default_value_t = 8 << 20, value_parser = crate::units::count::<u64>)]
    pub num_keys: u64,
    /// Buckets of 8 slots in each store's index (a power of two)
    #[arg(long, default_value_t = 2 << 20, value_parser = crate::units::count::<u64>)]
    pub num_buckets: u64,
    /// Bytes of each store's circular log (a power of two, at least 4096)
    #[arg(long, default_value_t = 1 << 30, value_parser = crate::units::count::<u64>)]
    pub log_bytes: u64,
    /// Value bytes of every PUT (1 to 46)
    #[arg(long, default_value_t = 32, value_parser = crate::units::count::<usize>)]
    pub value_size: usize,
    /// Operations per batch, 1 to 32 [default: 16 for passes (TEST_BATCH_SIZE), 32 for mix and
    /// herd (a HERD worker's largest batch)]
    #[arg(long, value_parser = crate::units::count::<usize>)]
    pub batch: Option<usize>,
    /// Timed passes per thread
    #[arg(long, default_value_t = 6, value_parser = crate::units::count::<u32>)]
    pub passes: u32,
    /// mix, herd: percentage of operations that are PUTs
    #[arg(long, default_value_t = 5)]
    pub update_percentage: u32,
    /// herd: Zipf skew of the keys (e.g. 0.99, as HERD's --zipf) [default: uniform]
    #[arg(long, value_name = "THETA")]
    pub zipf: Option<f64>,
    /// Threads, each with its own store (as HERD's workers)
    #[arg(long, default_value_t = 1, value_parser = crate::units::count::<usize>)]
    pub threads: usize,
    /// Store memory on hugepages: auto, require or off
    #[arg(long, default_value = "auto")]
    pub hugepages: HugePolicy,
}

impl KvBenchArgs {
    fn batch(&self) -> usize {
        self.batch.unwrap_or(match self.workload {
            Workload::Passes => 16,
            Workload::Mix | Workload::Herd => MAX_BATCH,
        })
    }

    fn store(&self) -> StoreConfig {
        StoreConfig {
            buckets: self.num_buckets as usize,
            log_bytes: self.log_bytes as usize,
            place: Placement {
                huge: self.hugepages,
                numa_node: None,
            },
        }
    }

    /// Refuses what cannot run, before anything is allocated.
    fn check(&self) -> Result<()> {
        // A value outside its flag's range is a usage error (exit 2).
        let bad = |m: String| Err(Error::usage(m));
        if !self.num_buckets.is_power_of_two() || self.num_buckets > 1 << 28 {
            return bad(format!(
                "--num-buckets {} is not a power of two up to 2^28",
                self.num_buckets
            ));
        }
        if !self.log_bytes.is_power_of_two() || !(4096..=1 << 40).contains(&self.log_bytes) {
            return bad(format!(
                "--log-bytes {} is not a power of two between 4096 and 2^40",
                self.log_bytes
            ));
        }
        if self.num_keys == 0 || self.num_keys > u64::from(u32::MAX) {
            return bad(format!(
                "--num-keys {} is not between 1 and 2^32 - 1",
                self.num_keys
            ));
        }
        if !(1..=MAX_VALUE).contains(&self.value_size) {
            return bad(format!(
                "--value-size {} is not between 1 and {MAX_VALUE}",
                self.value_size
            ));
        }
        if !(1..=MAX_BATCH).contains(&self.batch()) {
            return bad(format!(
                "--batch {} is not between 1 and {MAX_BATCH} (MICA_MAX_BATCH_SIZE)",
                self.batch()
            ));
        }
        if self.passes == 0 || self.threads == 0 || self.threads > 4096 {
            return bad(
                "--passes and --threads must be at least 1 (--threads at most 4096)".into(),
            );
        }
        if self.update_percentage > 100 {
            return bad(format!(
                "--update-percentage {} is above 100",
                self.update_percentage
            ));
        }
        match self.zipf {
            Some(_) if self.workload != Workload::Herd => {
                // A combination, not a value out of range: exit 1, as the benchmarks' own.
                return Err(Error::config("--zipf is for --workload herd"));
            }
            Some(t) if !(0.0..1.0).contains(&t) => {
                return bad(format!("--zipf {t} is not in [0, 1)"))
            }
            _ => {}
        }
        self.check_memory(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default())
    }

    /// Bytes a thread needs outside its store: the keys and one pass of operations.
    fn side_bytes(&self) -> u64 {
        let keys = match self.workload {
            Workload::Passes | Workload::Mix => 16 * self.num_keys,
            Workload::Herd => 0,
        };
        keys + std::mem::size_of::<Op>() as u64 * self.num_keys
    }

    /// Refuses a run that needs more memory than `meminfo` says the machine has available
    /// ([`StoreConfig::check_memory`]).
    fn check_memory(&self, meminfo: &str) -> Result<()> {
        self.store().check_memory(
            self.threads as u64,
            self.threads as u64 * self.side_bytes(),
            meminfo,
            "--num-keys, --num-buckets, --log-bytes or --threads",
        )
    }
}

/// What a pass ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Insert,
    Update,
    Get,
    Mix,
    Herd,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Insert => "insert",
            Kind::Update => "update",
            Kind::Get => "get",
            Kind::Mix => "mix",
            Kind::Herd => "herd",
        }
    }
}

/// One pass's figures.
#[derive(Debug, Clone, Copy)]
struct PassResult {
    kind: Kind,
    ops: u64,
    secs: f64,
    gets: u64,
    misses: u64,
    /// PUTs not answered with success (none, unless the store is broken).
    failed_puts: u64,
    sum: u64,
}

impl PassResult {
    fn mops(&self) -> f64 {
        self.ops as f64 / self.secs / 1e6
    }
}

/// The original's hrd_fastrand: a 64-bit LCG, the high half of the state.
#[inline(always)]
fn fastrand(seed: &mut u64) -> u32 {
    *seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
    (*seed >> 32) as u32
}

/// test.c's permute_for: a Fisher-Yates shuffle driven by hrd_fastrand (`% (i + 1)` on the 32-bit
/// draw, as the original).
fn permute(keys: &mut [Key], seed: &mut u64) {
    for i in (1..keys.len()).rev() {
        let j = fastrand(seed) as usize % (i + 1);
        keys.swap(i, j);
    }
}

/// An operation on `key` as test.c builds it: the value is `len` copies of the tag's low byte.
fn op_for(key: Key, opcode: u8, len: usize) -> Op {
    let mut value = [0u8; MAX_VALUE];
    value[..len].fill(key.tag() as u8);
    Op {
        key,
        opcode,
        val_len: len as u8,
        value,
    }
}

/// The sum of `v[..len]`'s bytes (what test.c adds up to use a GET's value), a word at a time:
/// straight-line code for each count of whole words, then the bytes left.
#[inline(always)]
fn byte_sum(v: &[u8; MAX_VALUE], len: usize) -> u64 {
    const LANES: u64 = 0x00ff_00ff_00ff_00ff;
    // A word's bytes summed into four 16-bit lanes (at most 5 words of 2 x 255 per lane).
    let w = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&v[8 * i..8 * i + 8]);
        let x = u64::from_le_bytes(b);
        (x & LANES) + ((x >> 8) & LANES)
    };
    let len = len.min(MAX_VALUE);
    let lanes = match len / 8 {
        0 => 0,
        1 => w(0),
        2 => w(0) + w(1),
        3 => w(0) + w(1) + w(2),
        4 => w(0) + w(1) + w(2) + w(3),
        _ => w(0) + w(1) + w(2) + w(3) + w(4),
    };
    let mut sum = lanes.wrapping_mul(0x0001_0001_0001_0001) >> 48;
    for &b in &v[len / 8 * 8..len] {
        sum += u64::from(b);
    }
    sum
}

/// The timed loop: `ops` in batches of `batch`, every response checked as test.c checks it (a PUT
/// answered with success, a GET hit's bytes summed). `opcode`: set every operation's opcode
/// batch by batch, as test.c does; `None`: the operations carry theirs (mixed passes). Not
/// inlined, so that callgrind can count it alone (`--toggle-collect='*timed_pass*'`).
#[inline(never)]
fn timed_pass(
    store: &mut Store,
    ops: &mut [Op],
    batch: usize,
    opcode: Option<u8>,
    out: &mut PassResult,
) {
    let mut resps = [Resp::default(); MAX_BATCH];
    let resps = &mut resps[..batch];
    let (mut sum, mut failed_puts) = (0u64, 0u64);
    let start = Instant::now();
    for chunk in ops.chunks_mut(batch) {
        if let Some(code) = opcode {
            for op in chunk.iter_mut() {
                op.opcode = code;
            }
        }
        store.batch(chunk, resps);
        if opcode == Some(OP_PUT) {
            // A PUT pass, as the original's `do_puts`: every answer should be a success.
            let answered = &resps[..chunk.len()];
            failed_puts += answered
                .iter()
                .filter(|r| r.kind != RESP_PUT_SUCCESS)
                .count() as u64;
            continue;
        }
        for (op, r) in chunk.iter().zip(resps.iter()) {
            if op.opcode == OP_PUT {
                failed_puts += u64::from(r.kind != RESP_PUT_SUCCESS);
            } else if r.kind == RESP_GET_SUCCESS {
                sum += byte_sum(&r.value, usize::from(r.len));
            }
        }
    }
    out.secs = start.elapsed().as_secs_f64();
    out.sum = out.sum.wrapping_add(sum);
    out.failed_puts += failed_puts;
}

/// One thread's run: its store, its keys, its passes; `report` gets each pass as it ends.
fn thread_run(
    a: &KvBenchArgs,
    t: usize,
    report: &dyn Fn(usize, u32, &PassResult),
) -> Result<Vec<PassResult>> {
    let mut store = Store::new(a.store())?;
    let (n, len, batch) = (a.num_keys as usize, a.value_size, a.batch());
    let mut ops: Vec<Op> = Vec::new();
    ops.try_reserve_exact(n)
        .map_err(|_| Error::config(format!("no memory for {n} operations (--num-keys)")))?;
    let mut results = Vec::new();
    let mut rng = 0x5eed_0000_u64 + t as u64;
    let mut next = move || {
        let z = splitmix64(rng);
        rng = rng.wrapping_add(SPLITMIX_GAMMA);
        z
    };
    let zipf = a
        .zipf
        .map(|theta| Zipf::new(a.num_keys, theta))
        .transpose()
        .map_err(Error::Config)?;
    let mut keys: Vec<Key> = Vec::new();
    if a.workload == Workload::Herd {
        store.populate(a.num_keys, len)?;
    } else {
        keys.try_reserve_exact(n)
            .map_err(|_| Error::config(format!("no memory for {n} keys (--num-keys)")))?;
        keys.extend((0..a.num_keys).map(Key::of));
    }
    let mut seed = 0xdead_beef_u64;
    for pass in 0..a.passes {
        let before = store.stats;
        let kind = match a.workload {
            Workload::Passes if pass % 2 == 1 => Kind::Get,
            Workload::Passes | Workload::Mix if pass == 0 => Kind::Insert,
            Workload::Passes => Kind::Update,
            Workload::Mix => Kind::Mix,
            Workload::Herd => Kind::Herd,
        };
        ops.clear();
        let put = |r: u64| r % 100 < u64::from(a.update_percentage);
        match a.workload {
            Workload::Passes | Workload::Mix => {
                permute(&mut keys, &mut seed);
                ops.extend(keys.iter().map(|&k| {
                    let code = match kind {
                        Kind::Mix if fastrand(&mut seed) % 100 < a.update_percentage => OP_PUT,
                        Kind::Mix | Kind::Get => OP_GET,
                        _ => OP_PUT,
                    };
                    op_for(k, code, len)
                }));
            }
            Workload::Herd => ops.extend((0..n).map(|_| {
                let r = next();
                let idx = match &zipf {
                    Some(z) => z.rank((r >> 11) as f64 / (1u64 << 53) as f64),
                    None => ((u128::from(r) * u128::from(a.num_keys)) >> 64) as u64,
                };
                let code = if put(next()) { OP_PUT } else { OP_GET };
                op_for(Key::of(idx), code, len)
            })),
        }
        let opcode = match kind {
            Kind::Insert | Kind::Update => Some(OP_PUT),
            Kind::Get => Some(OP_GET),
            Kind::Mix | Kind::Herd => None,
        };
        let mut r = PassResult {
            kind,
            ops: ops.len() as u64,
            secs: 0.0,
            gets: 0,
            misses: 0,
            failed_puts: 0,
            sum: 0,
        };
        timed_pass(&mut store, &mut ops, batch, opcode, &mut r);
        r.gets = store.stats.gets - before.gets;
        r.misses = store.stats.get_misses - before.get_misses;
        report(t, pass + 1, &r);
        if r.failed_puts > 0 {
            return Err(Error::config(format!(
                "thread {t}: {} PUTs of pass {} failed",
                r.failed_puts,
                pass + 1
            )));
        }
        results.push(r);
    }
    Ok(results)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Runs `rdma-bench kv-bench`.
pub fn run(a: KvBenchArgs) -> Result<()> {
    a.check()?;
    let huge = match a.hugepages {
        HugePolicy::Off => "off",
        HugePolicy::Require => "required",
        HugePolicy::Auto => "if free",
    };
    println!(
        "kv-bench: workload {}, {} thread(s), {} keys, {} buckets, {}-byte log (hugepages {huge}), \
         {}-byte values, batch {}{}",
        a.workload.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default(),
        a.threads,
        a.num_keys,
        a.num_buckets,
        a.log_bytes,
        a.value_size,
        a.batch(),
        match (a.workload, a.zipf) {
            (Workload::Passes, _) => String::new(),
            (Workload::Mix, _) => format!(", {} % PUT", a.update_percentage),
            (Workload::Herd, None) => format!(", {} % PUT, uniform keys", a.update_percentage),
            (Workload::Herd, Some(t)) => format!(", {} % PUT, zipf {t}", a.update_percentage),
        }
    );
    let report = |t: usize, pass: u32, r: &PassResult| {
        let miss = if r.gets > 0 {
            format!(", GET miss fraction {:.4}", r.misses as f64 / r.gets as f64)
        } else {
            String::new()
        };
        println!(
            "thread {t}: pass {pass} {}: {:.3} Mops ({} ops in {:.3} s{miss}, sum {})",
            r.kind.name(),
            r.mops(),
            r.ops,
            r.secs,
            r.sum
        );
    };
    let runs: Vec<Result<Vec<PassResult>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.threads)
            .map(|t| {
                let a = &a;
                let report = &report;
                s.spawn(move || thread_run(a, t, report))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::config("a kv-bench thread panicked")))
            })
            .collect()
    });
    let runs = runs.into_iter().collect::<Result<Vec<_>>>()?;
    // Per kind: each thread's median over its passes of that kind, summed over the threads.
    let mut line = Vec::new();
    for kind in [Kind::Insert, Kind::Update, Kind::Get, Kind::Mix, Kind::Herd] {
        let per_thread: Vec<(f64, usize)> = runs
            .iter()
            .filter_map(|passes| {
                let v: Vec<f64> = passes
                    .iter()
                    .filter(|p| p.kind == kind)
                    .map(|p| p.mops())
                    .collect();
                let k = v.len();
                median(v).map(|m| (m, k))
            })
            .collect();
        if let Some(&(_, k)) = per_thread.first() {
            let total: f64 = per_thread.iter().map(|p| p.0).sum();
            line.push(format!(
                "{} {total:.3} Mops ({k} pass{})",
                kind.name(),
                if k == 1 { "" } else { "es" }
            ));
        }
    }
    println!(
        "summary{}: {}",
        if a.threads > 1 { " (all threads)" } else { "" },
        line.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: KvBenchArgs,
    }

    fn args(v: &[&str]) -> KvBenchArgs {
        Cli::try_parse_from(std::iter::once("kv-bench").chain(v.iter().copied()))
            .map(|c| c.a)
            .unwrap()
    }

    const MEMINFO: &str = "MemTotal: 8000000 kB\nMemAvailable: 4194304 kB\nHugePages_Free: 0\n";

    #[test]
    fn bad_sizes_are_refused_naming_the_flag() {
        for (flags, word) in [
            (&["--num-buckets", "3"][..], "--num-buckets 3"),
            (&["--log-bytes", "1000"], "--log-bytes 1000"),
            (&["--log-bytes", "2048"], "--log-bytes 2048"),
            (&["--value-size", "47"], "--value-size 47"),
            (&["--batch", "33"], "--batch 33"),
            (&["--num-keys", "0"], "--num-keys 0"),
            (&["--update-percentage", "101"], "--update-percentage 101"),
            (&["--zipf", "0.99"], "--zipf is for --workload herd"),
            (&["--workload", "herd", "--zipf", "1"], "--zipf 1"),
        ] {
            let e = args(flags).check().unwrap_err();
            let usage = !word.contains("is for");
            assert_eq!(e.exit_code(), if usage { 2 } else { 1 }, "{flags:?}");
            assert!(e.to_string().contains(word), "{flags:?}: {e}");
        }
    }

    #[test]
    fn more_memory_than_available_is_refused_naming_the_flags() {
        // 4 GiB available: one default thread (1.75 GiB) fits, three do not.
        assert!(args(&[]).check_memory(MEMINFO).is_ok());
        let e = args(&["--threads", "3"])
            .check_memory(MEMINFO)
            .unwrap_err()
            .to_string();
        assert!(e.contains("MiB available"), "{e}");
        for f in ["--num-keys", "--num-buckets", "--log-bytes", "--threads"] {
            assert!(e.contains(f), "{e}");
        }
        // Stores on free hugepages are not counted against MemAvailable.
        let huge = "MemAvailable: 4194304 kB\nHugePages_Free: 1200\n";
        assert!(args(&["--threads", "3"]).check_memory(huge).is_err());
        assert!(args(&["--threads", "2"]).check_memory(huge).is_ok());
        let e = args(&["--hugepages", "require"])
            .check_memory(MEMINFO)
            .unwrap_err();
        assert!(e.to_string().contains("hugepages"), "{e}");
    }

    #[test]
    fn byte_sum_adds_the_first_len_bytes() {
        let mut v = [0u8; MAX_VALUE];
        for (i, b) in v.iter_mut().enumerate() {
            *b = 200 + i as u8 % 56;
        }
        for len in 0..=MAX_VALUE {
            let want: u64 = v[..len].iter().map(|&b| u64::from(b)).sum();
            assert_eq!(byte_sum(&v, len), want, "len {len}");
        }
        assert_eq!(
            byte_sum(&[255; MAX_VALUE], MAX_VALUE),
            255 * MAX_VALUE as u64
        );
    }

    #[test]
    fn the_shuffle_is_test_c_s() {
        // hrd_fastrand from 0xdeadbeef, by hand: seed * 1103515245 + 12345, high half.
        let mut s = 0xdead_beef_u64;
        let first = fastrand(&mut s);
        assert_eq!(
            u64::from(first),
            0xdead_beef_u64
                .wrapping_mul(1_103_515_245)
                .wrapping_add(12345)
                >> 32
        );
        let mut keys: Vec<Key> = (0..1000).map(Key::of).collect();
        let mut seed = 0xdead_beef;
        permute(&mut keys, &mut seed);
        let mut sorted = keys.clone();
        sorted.sort_by_key(|k| k.0);
        let mut want: Vec<Key> = (0..1000).map(Key::of).collect();
        want.sort_by_key(|k| k.0);
        assert_eq!(sorted, want, "a permutation");
        assert_ne!(keys[..10], want[..10]);
    }

    #[test]
    fn every_workload_runs_small_and_checks_its_responses() {
        for w in ["passes", "mix", "herd"] {
            let a = args(&[
                "--workload",
                w,
                "--num-keys",
                "4096",
                "--num-buckets",
                "1024",
                "--log-bytes",
                "1048576",
                "--passes",
                "3",
                "--hugepages",
                "off",
            ]);
            let passes = thread_run(&a, 0, &|_, _, _| {}).unwrap();
            let kinds: Vec<Kind> = passes.iter().map(|p| p.kind).collect();
            let want = match w {
                "passes" => vec![Kind::Insert, Kind::Get, Kind::Update],
                "mix" => vec![Kind::Insert, Kind::Mix, Kind::Mix],
                _ => vec![Kind::Herd; 3],
            };
            assert_eq!(kinds, want, "{w}");
            for p in &passes {
                assert_eq!(p.ops, 4096);
                assert_eq!(p.failed_puts, 0);
                if p.gets > 0 {
                    assert!(p.misses * 50 < p.gets, "{w}: {p:?}");
                    assert!(p.sum > 0);
                }
            }
        }
    }
}
