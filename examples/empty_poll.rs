//! Polls an empty CQ N times through the crate (`CompletionQueue::poll` → `shim_poll_cq`), for
//! bench_scripts/shim-cost.sh, which counts its instructions against the same loop in C calling
//! the inline `ibv_poll_cq` (bench_scripts/callgrind/empty_poll.c).
//!
//! usage: empty_poll N   (device: $RDMA_BENCH_DEVICE, else the first ACTIVE port)

use std::hint::black_box;

use rdma_bench::verbs::{CompletionQueue, Context, WorkCompletion};

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| {
            eprintln!("usage: empty_poll N");
            std::process::exit(2)
        });
    let ctx = match std::env::var("RDMA_BENCH_DEVICE") {
        Ok(name) => Context::open(&name),
        Err(_) => Context::open_first_active().map(|(c, _)| c),
    }
    .unwrap_or_else(|e| {
        eprintln!("empty_poll: {e}");
        std::process::exit(1)
    });
    let cq = CompletionQueue::new(&ctx, 16).unwrap_or_else(|e| {
        eprintln!("empty_poll: {e}");
        std::process::exit(1)
    });
    let mut wc = [WorkCompletion::default()];
    let mut found = 0usize;
    for _ in 0..n {
        found += cq.poll(black_box(&mut wc)).unwrap_or(0);
    }
    println!("{n} polls, {found} completions");
}
