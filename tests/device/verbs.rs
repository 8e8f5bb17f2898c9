//! The verbs layer and the hot-path batches on a real device (Soft-RoCE in the testbed): two QPs in
//! one process, data checked byte for byte.

use crate::common;

use std::sync::Arc;

use common::{env, pair, side, Side};
use rdma_bench::hot::{
    poll_exact, poll_one, Op, PollTimeout, Postlist, RecvBatch, Remote, SendBatch, SendSpec,
    UnsignaledCounter, GRH_BYTES,
};
use rdma_bench::mem::{HugeBuffer, Placement};
use rdma_bench::verbs::{AddressHandle, MemoryRegion, Port, QpType, QueuePair, WorkCompletion};
#[cfg(has_wr_api)]
use rdma_bench::verbs::{Payload, Wr};

/// The bound of every poll here: 10 s, in a run of its own (nothing stops it).
fn t() -> PollTimeout {
    static T: std::sync::OnceLock<PollTimeout> = std::sync::OnceLock::new();
    *T.get_or_init(|| PollTimeout::new(rdma_bench::control::Attention::detached()))
}

fn remote(s: &Side) -> Remote {
    Remote {
        addr: s.mr.addr() as u64,
        rkey: s.mr.rkey(),
        len: s.mr.len() as u64,
    }
}

fn spec(op: Op, size: u32) -> SendSpec {
    SendSpec {
        op,
        postlist: 1,
        size,
        stride: 64,
        local_offset: 0,
        remote_offset: 0,
        inline: false,
    }
}

fn fill(s: &Side, off: usize, len: usize, seed: u8) -> Vec<u8> {
    let data: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect();
    s.write(off, &data);
    data
}

/// Posts one signaled WR and waits for its completion.
fn run_one(batch: &mut SendBatch, qp: &mut QueuePair) -> WorkCompletion {
    batch.set_signaled(0, true);
    batch.post(qp).expect("post");
    poll_one(qp.send_cq(), t()).expect("completion")
}

/// `MemoryRegion::write` stores whole words where aligned and bytes at the ends: every offset
/// and length reads back through `read`, and the bytes around the range stay as they were.
#[test]
fn mr_write_reads_back_at_every_alignment() {
    let e = env();
    let s = side(&e, QpType::Rc, false, 256);
    for off in 0..9 {
        for len in 0..41 {
            s.mr.fill(0xee);
            let data: Vec<u8> = (0..len)
                .map(|i| (i as u8).wrapping_mul(7).wrapping_add(off as u8 + 1))
                .collect();
            s.mr.write(off, &data);
            let all = s.bytes();
            assert_eq!(&all[off..off + len], &data[..], "off {off} len {len}");
            assert!(
                all[..off]
                    .iter()
                    .chain(&all[off + len..])
                    .all(|&b| b == 0xee),
                "off {off} len {len}: a byte outside the range changed"
            );
        }
    }
}

#[test]
fn rc_write_inline_and_from_mr() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    for (inline, size, seed) in [(true, 32u32, 1u8), (false, 4000, 2)] {
        let data = fill(&a, 0, size as usize, seed);
        let mut s = spec(Op::Write, size);
        s.inline = inline;
        s.remote_offset = 8192;
        let mut batch = SendBatch::new(&mut a.qp, &a.mr, s, Some(remote(&b))).unwrap();
        run_one(&mut batch, &mut a.qp);
        assert_eq!(
            &b.bytes()[8192..8192 + size as usize],
            &data[..],
            "inline={inline}"
        );
    }
}

#[test]
fn rc_read() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    let data = fill(&b, 1024, 3000, 7);
    let mut s = spec(Op::Read, 3000);
    s.local_offset = 4096;
    s.remote_offset = 1024;
    let mut batch = SendBatch::new(&mut a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    let wc = run_one(&mut batch, &mut a.qp);
    assert_eq!(wc.byte_len(), 3000);
    assert_eq!(&a.bytes()[4096..7096], &data[..]);
}

#[test]
fn rc_send_recv_and_send_with_imm() {
    let e = env();
    let (mut a, mut b) = pair(&e, QpType::Rc, false);
    let mut recv = RecvBatch::new(&mut b.qp, &b.mr, 2, 512, 0, 512).unwrap();
    recv.post(&mut b.qp, 2).unwrap();
    let d1 = fill(&a, 0, 100, 3);
    let d2 = fill(&a, 64 * 1024 - 200, 200, 4);
    let mut plain = SendBatch::new(&mut a.qp, &a.mr, spec(Op::Send, 100), None).unwrap();
    run_one(&mut plain, &mut a.qp);
    let mut s = spec(Op::SendImm(3185), 200);
    s.local_offset = 64 * 1024 - 200;
    let mut imm = SendBatch::new(&mut a.qp, &a.mr, s, None).unwrap();
    run_one(&mut imm, &mut a.qp);
    let mut wcs = [WorkCompletion::default(); 2];
    poll_exact(b.qp.recv_cq(), &mut wcs, t()).unwrap();
    assert_eq!((wcs[0].byte_len(), wcs[0].imm_data()), (100, None));
    assert_eq!((wcs[1].byte_len(), wcs[1].imm_data()), (200, Some(3185)));
    assert_eq!(&b.bytes()[..100], &d1[..]);
    assert_eq!(&b.bytes()[512..712], &d2[..]);
}

#[test]
fn rc_write_with_imm_consumes_a_recv() {
    let e = env();
    let (mut a, mut b) = pair(&e, QpType::Rc, false);
    let mut recv = RecvBatch::new(&mut b.qp, &b.mr, 1, 0, 0, 0).unwrap();
    recv.post(&mut b.qp, 1).unwrap();
    let data = fill(&a, 0, 48, 9);
    let mut s = spec(Op::WriteImm(0xdead_beef), 48);
    s.remote_offset = 256;
    let mut batch = SendBatch::new(&mut a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    run_one(&mut batch, &mut a.qp);
    let wc = poll_one(b.qp.recv_cq(), t()).unwrap();
    assert_eq!(wc.imm_data(), Some(0xdead_beef));
    assert_eq!(&b.bytes()[256..304], &data[..]);
}

#[test]
fn rc_atomics_fetch_add_and_cmp_swap() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    b.write(64, &1000u64.to_ne_bytes());
    let mut s = spec(Op::FetchAdd(5), 8);
    s.remote_offset = 64;
    let mut fa = SendBatch::new(&mut a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    run_one(&mut fa, &mut a.qp);
    assert_eq!(
        u64::from_ne_bytes(a.bytes()[0..8].try_into().unwrap()),
        1000,
        "old value"
    );
    assert_eq!(
        u64::from_ne_bytes(b.bytes()[64..72].try_into().unwrap()),
        1005,
        "new value"
    );

    let mut s = spec(Op::CmpSwap(1005, 77), 8);
    s.remote_offset = 64;
    s.local_offset = 8;
    let mut cs = SendBatch::new(&mut a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    run_one(&mut cs, &mut a.qp);
    assert_eq!(
        u64::from_ne_bytes(a.bytes()[8..16].try_into().unwrap()),
        1005
    );
    assert_eq!(
        u64::from_ne_bytes(b.bytes()[64..72].try_into().unwrap()),
        77
    );
    // A failed compare leaves the value alone and still returns it.
    run_one(&mut cs, &mut a.qp);
    assert_eq!(
        u64::from_ne_bytes(b.bytes()[64..72].try_into().unwrap()),
        77
    );
}

#[test]
fn uc_write() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Uc, false);
    let data = fill(&a, 0, 1500, 5);
    let mut batch =
        SendBatch::new(&mut a.qp, &a.mr, spec(Op::Write, 1500), Some(remote(&b))).unwrap();
    run_one(&mut batch, &mut a.qp);
    // UC has no ACK: the send completion does not prove arrival; wait for the bytes (bounded).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while b.bytes()[..1500] != data[..] {
        assert!(
            std::time::Instant::now() < deadline,
            "UC WRITE never arrived"
        );
        std::thread::yield_now();
    }
}

#[test]
fn ud_send_lands_after_the_grh() {
    let e = env();
    let (mut a, mut b) = pair(&e, QpType::Ud, false);
    let mut recv = RecvBatch::new(&mut b.qp, &b.mr, 1, (GRH_BYTES + 256) as u32, 0, 0).unwrap();
    recv.post(&mut b.qp, 1).unwrap();
    let data = fill(&a, 0, 256, 11);
    let ah = AddressHandle::new(&e.pd, &e.port, &b.qp.info(None)).unwrap();
    let mut batch = SendBatch::new_ud(
        &mut a.qp,
        &a.mr,
        spec(Op::SendImm(3185), 256),
        &ah,
        b.qp.qp_num(),
    )
    .unwrap();
    run_one(&mut batch, &mut a.qp);
    let wc = poll_one(b.qp.recv_cq(), t()).unwrap();
    assert!(wc.has_grh());
    assert_eq!(wc.byte_len() as usize, GRH_BYTES + 256);
    assert_eq!(wc.imm_data(), Some(3185));
    assert_eq!(wc.src_qp(), a.qp.qp_num());
    assert_eq!(&b.bytes()[GRH_BYTES..GRH_BYTES + 256], &data[..]);
}

#[test]
fn doorbell_batch_of_16_in_one_post() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    let data = fill(&a, 0, 16 * 64, 13);
    let mut s = spec(Op::Write, 32);
    s.postlist = 16;
    let mut batch = SendBatch::new(&mut a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    for i in 0..16 {
        batch.set_signaled(i, true);
        batch.set_wr_id(i, 100 + i as u64);
    }
    batch.post(&mut a.qp).unwrap(); // one call, sixteen WRs
    let mut wcs = [WorkCompletion::default(); 16];
    poll_exact(a.qp.send_cq(), &mut wcs, t()).unwrap();
    let ids: Vec<u64> = wcs.iter().map(|w| w.wr_id()).collect();
    assert_eq!(ids, (100..116).collect::<Vec<u64>>());
    for i in 0..16 {
        assert_eq!(
            &b.bytes()[i * 64..i * 64 + 32],
            &data[i * 64..i * 64 + 32],
            "slot {i}"
        );
    }
}

#[test]
fn ten_thousand_selectively_signaled_writes_never_overflow() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    fill(&a, 0, 64 * 16, 17);
    let mut s = spec(Op::Write, 32);
    s.postlist = 16;
    s.inline = true;
    let mut batch = SendBatch::new(&mut a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    // Queue depth 256 (see common::side) ≥ 2 × 64.
    let mut counter = UnsignaledCounter::new(64);
    for _ in 0..10_000 / 16 {
        batch.post_selective(&mut a.qp, &mut counter, t()).unwrap();
    }
    assert_eq!(counter.posted(), 10_000);
    // Reap the last signaled WR: everything before it is done too (RC completes in order).
    poll_one(a.qp.send_cq(), t()).unwrap();
    let mut extra = [WorkCompletion::default(); 4];
    assert_eq!(
        a.qp.send_cq().poll(&mut extra).unwrap(),
        0,
        "exactly one CQE per signaled WR"
    );
    assert_eq!(&b.bytes()[..32], &a.bytes()[..32]);
}

#[cfg(has_wr_api)]
#[test]
fn write_and_read_through_the_wr_api() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, true);
    let data = fill(&a, 0, 2048, 19);
    let (rkey, base) = (b.mr.rkey(), b.mr.addr() as u64);
    let mut g = a.qp.wr_start().expect("made with new_ex");
    g.push(Wr {
        wr_id: 1,
        signaled: false,
        op: Op::Write,
        remote: Some((rkey, base + 4096)),
        ud: None,
        payload: Payload::Region {
            mr: &a.mr,
            offset: 0,
            len: 2048,
        },
    })
    .unwrap();
    const MSG: &[u8] = b"inline through ibv_wr_set_inline_data";
    g.push(Wr {
        wr_id: 2,
        signaled: true,
        op: Op::Write,
        remote: Some((rkey, base)),
        ud: None,
        payload: Payload::Inline(MSG),
    })
    .unwrap();
    g.complete().unwrap();
    let wc = poll_one(a.qp.send_cq(), t()).unwrap();
    assert_eq!(wc.wr_id(), 2);
    assert_eq!(&b.bytes()[4096..6144], &data[..]);
    assert_eq!(&b.bytes()[..MSG.len()], MSG);

    let mut g = a.qp.wr_start().unwrap();
    let read = Wr {
        wr_id: 3,
        signaled: true,
        op: Op::Read,
        remote: Some((rkey, base + 4096)),
        ud: None,
        payload: Payload::Region {
            mr: &a.mr,
            offset: 8192,
            len: 2048,
        },
    };
    // The guard checks what the provider would not: a READ cannot be inline, a SEND on RC has
    // no remote address, a region range must fit.
    let err = g
        .push(Wr {
            payload: Payload::Inline(MSG),
            ..read
        })
        .unwrap_err();
    assert_eq!(err.to_string(), "READs and atomics cannot be inline");
    let err = g
        .push(Wr {
            payload: Payload::Region {
                mr: &a.mr,
                offset: (1 << 16) - 100,
                len: 2048,
            },
            ..read
        })
        .unwrap_err();
    assert!(
        err.to_string().contains("outside the 65536-byte region"),
        "{err}"
    );
    g.push(read).unwrap();
    g.complete().unwrap();
    assert_eq!(poll_one(a.qp.send_cq(), t()).unwrap().wr_id(), 3);
    assert_eq!(&a.bytes()[8192..10240], &data[..]);

    // A guard dropped without complete() aborts: nothing of it is posted.
    let mut g = a.qp.wr_start().unwrap();
    g.push(Wr {
        wr_id: 4,
        signaled: true,
        op: Op::Write,
        remote: Some((rkey, base + 20000)),
        ud: None,
        payload: Payload::Inline(b"never"),
    })
    .unwrap();
    drop(g);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut extra = [WorkCompletion::default(); 1];
    assert_eq!(
        a.qp.send_cq().poll(&mut extra).unwrap(),
        0,
        "an aborted WR completed"
    );
    assert_ne!(&b.bytes()[20000..20005], b"never");
}

#[test]
fn wrong_rkey_is_a_remote_access_error() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    let mut r = remote(&b);
    r.rkey ^= 0x5a5a_0000;
    let mut batch = SendBatch::new(&mut a.qp, &a.mr, spec(Op::Write, 64), Some(r)).unwrap();
    batch.set_signaled(0, true);
    batch.post(&mut a.qp).unwrap();
    let err = poll_one(a.qp.send_cq(), t()).unwrap_err();
    assert_eq!(
        err.completion_status(),
        Some(rdma_bench::WcStatus::RemoteAccess),
        "{err}"
    );
    assert!(err.to_string().contains("remote access error"), "{err}");
}

#[test]
fn invalid_gid_index_is_a_clear_error() {
    let port = common::port();
    let err = Port::open(port.context(), port.num(), Some(5000))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("GID index 5000 is not valid on "), "{err}");
    let err = Port::open(port.context(), 9, None).unwrap_err().to_string();
    assert!(err.contains("has no port 9"), "{err}");
}

#[test]
fn inline_above_the_limit_is_refused() {
    let e = env();
    let mut s = side(&e, QpType::Rc, false, 4096);
    let limit = s.qp.caps().max_inline_data;
    let mut sp = spec(Op::Write, limit + 1);
    sp.inline = true;
    let r = Remote {
        addr: 0,
        rkey: 0,
        len: 0,
    };
    let err = SendBatch::new(&mut s.qp, &s.mr, sp, Some(r))
        .err()
        .expect("refused")
        .to_string();
    assert_eq!(
        err,
        format!(
            "size {} is above the inline limit of {limit} bytes for inlined WRs",
            limit + 1
        )
    );
}

/// The region a batch posts from may lose every handle the program holds while its unsignaled WRs
/// are in flight: the QP keeps it alive (and registered) until it is destroyed, the data lands,
/// and the memory goes away only with the QP.
#[test]
fn dropping_every_handle_under_unsignaled_writes_frees_nothing_early() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    let buf = HugeBuffer::new(64 * 1024, Placement::default()).unwrap();
    let src = MemoryRegion::register(&e.pd, buf, common::all_access()).unwrap();
    // Fifteen 4 KiB WRITEs: the peer's last 4 KiB stay free for the fence below.
    let data: Vec<u8> = (0..15 * 4096).map(|i| (i % 251) as u8).collect();
    src.write(0, &data);
    let mut s = spec(Op::Write, 4096);
    s.postlist = 15;
    s.stride = 4096;
    let mut batch = SendBatch::new(&mut a.qp, &src, s, Some(remote(&b))).unwrap();
    batch.post(&mut a.qp).unwrap(); // fifteen 4 KiB WRITEs from `src`, none signaled
    let weak = Arc::downgrade(&src);
    drop(batch);
    drop(src);
    let kept = weak
        .upgrade()
        .expect("the QP keeps the region of its posted WRs");
    drop(kept);
    // A signaled WRITE behind them (to bytes they do not cover): RC completes in order, so all
    // fifteen are done after it.
    let mut f = spec(Op::Write, 8);
    f.remote_offset = 65_000;
    let mut fence = SendBatch::new(&mut a.qp, &a.mr, f, Some(remote(&b))).unwrap();
    run_one(&mut fence, &mut a.qp);
    let got = b.bytes();
    let first_bad = (0..data.len()).find(|&i| got[i] != data[i]);
    assert_eq!(first_bad, None, "the WRITEs' data did not all land");
    drop(a);
    assert!(weak.upgrade().is_none(), "the region is freed with its QP");
}

/// READ responses land in a region whose every program handle is gone: the QP keeps it.
#[test]
fn a_read_into_a_dropped_region_lands_in_live_memory() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    let data = fill(&b, 0, 8192, 23);
    let buf = HugeBuffer::new(8192, Placement::default()).unwrap();
    let dst = MemoryRegion::register(&e.pd, buf, common::all_access()).unwrap();
    let weak = Arc::downgrade(&dst);
    let mut read = SendBatch::new(&mut a.qp, &dst, spec(Op::Read, 8192), Some(remote(&b))).unwrap();
    drop(dst);
    let wc = run_one(&mut read, &mut a.qp);
    assert_eq!(wc.byte_len(), 8192);
    let dst = weak.upgrade().expect("kept by the QP");
    assert_eq!(dst.to_vec(0, 8192), data);
}

/// A batch is bound to the QP it was built for: posting it on another is refused, not a
/// use of a region the other QP never promised to keep.
#[test]
fn a_batch_posted_on_another_qp_is_refused() {
    let e = env();
    let (mut a, mut b) = pair(&e, QpType::Rc, false);
    let r = remote(&b);
    let mut batch = SendBatch::new(&mut a.qp, &a.mr, spec(Op::Write, 8), Some(r)).unwrap();
    let err = batch.post(&mut b.qp).unwrap_err();
    assert_eq!(err.to_string(), "this batch was built for another QP");
    let mut recv = RecvBatch::new(&mut b.qp, &b.mr, 1, 64, 0, 0).unwrap();
    assert!(recv.post(&mut a.qp, 1).is_err());
    // On its own QP it posts.
    run_one(&mut batch, &mut a.qp);
}

/// The pump (the throughput loop) posts exactly what it is asked, signals one WR per
/// unsig_batch, looks at the run's attention once per stretch (it returns at every stretch while
/// the attention is raised) and leaves exactly one CQE per signaled WR.
#[test]
fn the_pump_signals_one_wr_per_unsig_batch() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    let mut s = spec(Op::Write, 32);
    s.inline = true;
    let mut batch = SendBatch::new(&mut a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    let mut counter = UnsignaledCounter::new(16);
    let counters = rdma_bench::stats::Counters::new(1);
    // Raised from the start: every stretch ends the call.
    let raised = rdma_bench::control::Attention::detached();
    raised.request_stop();
    let timeout = PollTimeout::new(raised);
    let (mut ops, mut stretches) = (0, 0);
    while ops < 1000 {
        ops = rdma_bench::hot::pump(
            &mut a.qp,
            &mut batch,
            &mut counter,
            ops,
            1000,
            timeout,
            counters.tally(0),
        )
        .unwrap();
        stretches += 1;
        assert_eq!(counters.get(0), ops, "the tally follows the pump");
    }
    assert_eq!(ops, 1000);
    assert_eq!(counter.posted(), 1000);
    // 1000 WRs, one signaled every 16: 63 signaled, one stretch each.
    assert!(
        (62..=64).contains(&stretches),
        "{stretches} stretches for 1000 ops"
    );
    counter.drain(a.qp.send_cq(), t()).unwrap();
    let mut extra = [WorkCompletion::default(); 4];
    assert_eq!(a.qp.send_cq().poll(&mut extra).unwrap(), 0);
}

/// Offsets whose arithmetic would wrap are refused, not turned into addresses outside the region.
#[test]
fn a_batch_whose_span_wraps_is_refused() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    let mut s = spec(Op::Write, 32);
    s.postlist = 2;
    s.stride = usize::MAX - 31;
    s.inline = true;
    let err = SendBatch::new(&mut a.qp, &a.mr, s, Some(remote(&b)))
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("local bytes but the MR has 65536"),
        "{err}"
    );
    let err = RecvBatch::new(&mut a.qp, &a.mr, 2, 64, 0, usize::MAX)
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("does not fit the 65536-byte MR"),
        "{err}"
    );
}

/// A QP's CQs must come from its PD's opened device (the provider casts them to its own types).
#[test]
fn a_qp_over_another_contexts_cq_is_refused() {
    let e = env();
    let other = env(); // the same device opened again: another context
    let cq = rdma_bench::verbs::CompletionQueue::new(other.port.context(), 16).unwrap();
    let err = QueuePair::new(
        &e.pd,
        &e.port,
        &cq,
        &cq,
        QpType::Rc,
        rdma_bench::verbs::QpCaps::default(),
    )
    .expect_err("refused");
    assert_eq!(
        err.to_string(),
        "the QP's CQs, port and PD must belong to the same opened device"
    );
}

/// A guard leaked with mem::forget leaves its batch open: send batches are refused (instead of
/// spinning on the provider's lock) until the next wr_start aborts it.
#[cfg(has_wr_api)]
#[test]
fn a_leaked_wr_guard_is_contained() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, true);
    let r = remote(&b);
    let mut batch = SendBatch::new(&mut a.qp, &a.mr, spec(Op::Write, 8), Some(r)).unwrap();
    let g = a.qp.wr_start().unwrap();
    std::mem::forget(g);
    let err = batch.post(&mut a.qp).unwrap_err().to_string();
    assert!(
        err.starts_with("an ibv_wr_* batch is open on this QP"),
        "{err}"
    );
    a.qp.wr_start().unwrap().complete().unwrap(); // aborts the leaked batch, posts nothing
    run_one(&mut batch, &mut a.qp);
}
