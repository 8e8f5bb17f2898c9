//! Host-only throughput of the MICA-style store behind HERD: one core runs batches of GET/PUTs
//! (as a HERD worker does, without RDMA) and prints Mops per PUT percentage. No device needed.
//!
//! usage: kv_throughput [KEYS [BUCKETS [LOG_BYTES [BATCH [SECS]]]]]
//! defaults: HERD's per-worker store (8 Mi keys, 2 Mi buckets, 1 GiB log), batch 32, 2 s per point

use std::time::{Duration, Instant};

use rdma_bench::kv::{self, Key, Op, Resp, Store, StoreConfig, MAX_VALUE};
use rdma_bench::mem::{HugePolicy, Placement};

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .map(|a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("kv_throughput: argument {i} ({a}) is not a number");
                std::process::exit(2)
            })
        })
        .unwrap_or(default)
}

fn main() {
    let keys = arg(1, 8 << 20);
    let buckets = arg(2, 2 << 20) as usize;
    let log_bytes = arg(3, 1 << 30) as usize;
    let batch = arg(4, 32) as usize;
    let secs = arg(5, 2);
    if batch == 0 || batch > kv::MAX_BATCH {
        eprintln!("kv_throughput: batch must be 1..={}", kv::MAX_BATCH);
        std::process::exit(2);
    }
    let place = Placement {
        huge: HugePolicy::Auto,
        numa_node: None,
    };
    let mut store = Store::new(StoreConfig {
        buckets,
        log_bytes,
        place,
    })
    .unwrap_or_else(|e| {
        eprintln!("kv_throughput: {e}");
        std::process::exit(1)
    });
    let t = Instant::now();
    let evicted = store.populate(keys, 32).expect("populate");
    println!(
        "populated {keys} keys in {:.2} s ({:.4} % index evictions)",
        t.elapsed().as_secs_f64(),
        100.0 * evicted
    );
    // Keys drawn ahead (clients hash keys in HERD, not workers): 1 Mi uniform draws.
    let mut rng = 0x1234_5678u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let draws: Vec<Key> = (0..1 << 20).map(|_| Key::of(next() % keys)).collect();
    let blank = Op {
        key: Key(0),
        opcode: kv::OP_GET,
        val_len: 32,
        value: [7; MAX_VALUE],
    };
    let mut ops = vec![blank; batch];
    let mut resps = vec![Resp::default(); batch];
    println!("batch {batch}, 32-byte values, uniform keys, one core:");
    for put_pct in [0u64, 5, 50] {
        let before = store.stats;
        let (mut done, mut d) = (0u64, 0usize);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(secs) {
            for _ in 0..1024 {
                for op in ops.iter_mut() {
                    op.key = draws[d & ((1 << 20) - 1)];
                    op.opcode = if next() % 100 < put_pct {
                        kv::OP_PUT
                    } else {
                        kv::OP_GET
                    };
                    d += 1;
                }
                store.batch(&ops, &mut resps);
                done += batch as u64;
            }
        }
        let s = store.stats;
        let gets = s.gets - before.gets;
        let hits = gets - (s.get_misses - before.get_misses);
        println!(
            "  {put_pct:>2} % PUT: {:.2} Mops (GET hit rate {:.4})",
            done as f64 / start.elapsed().as_secs_f64() / 1e6,
            hits as f64 / gets.max(1) as f64
        );
    }
}
