//! The verbs layer and the hot-path batches on a real device (Soft-RoCE in the testbed): two QPs in
//! one process, data checked byte for byte.

mod common;

use common::{env, pair, side, Side};
use rdma_bench::hot::{
    poll_exact, poll_one, Op, PollTimeout, RecvBatch, Remote, SendBatch, SendSpec,
    UnsignaledCounter, GRH_BYTES,
};
use rdma_bench::verbs::{AddressHandle, Port, QpType, WorkCompletion};

const T: PollTimeout = PollTimeout(std::time::Duration::from_secs(10));

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

fn fill(s: &mut Side, off: usize, len: usize, seed: u8) -> Vec<u8> {
    let data: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect();
    s.bytes_mut()[off..off + len].copy_from_slice(&data);
    data
}

/// Posts one signaled WR and waits for its completion.
fn run_one(
    batch: &mut SendBatch<'_>,
    qp_cq: &rdma_bench::verbs::CompletionQueue,
) -> WorkCompletion {
    batch.set_signaled(0, true);
    batch.post().expect("post");
    poll_one(qp_cq, T).expect("completion")
}

#[test]
fn rc_write_inline_and_from_mr() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    for (inline, size, seed) in [(true, 32u32, 1u8), (false, 4000, 2)] {
        let data = fill(&mut a, 0, size as usize, seed);
        let mut s = spec(Op::Write, size);
        s.inline = inline;
        s.remote_offset = 8192;
        let mut batch = SendBatch::new(&a.qp, &a.mr, s, Some(remote(&b))).unwrap();
        run_one(&mut batch, a.qp.send_cq());
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
    let (a, mut b) = pair(&e, QpType::Rc, false);
    let data = fill(&mut b, 1024, 3000, 7);
    let mut s = spec(Op::Read, 3000);
    s.local_offset = 4096;
    s.remote_offset = 1024;
    let mut batch = SendBatch::new(&a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    let wc = run_one(&mut batch, a.qp.send_cq());
    assert_eq!(wc.byte_len(), 3000);
    assert_eq!(&a.bytes()[4096..7096], &data[..]);
}

#[test]
fn rc_send_recv_and_send_with_imm() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    let mut recv = RecvBatch::new(&b.qp, &b.mr, 2, 512, 0, 512).unwrap();
    recv.post(2).unwrap();
    let d1 = fill(&mut a, 0, 100, 3);
    let d2 = fill(&mut a, 64 * 1024 - 200, 200, 4);
    let mut plain = SendBatch::new(&a.qp, &a.mr, spec(Op::Send, 100), None).unwrap();
    run_one(&mut plain, a.qp.send_cq());
    let mut s = spec(Op::SendImm(3185), 200);
    s.local_offset = 64 * 1024 - 200;
    let mut imm = SendBatch::new(&a.qp, &a.mr, s, None).unwrap();
    run_one(&mut imm, a.qp.send_cq());
    let mut wcs = [WorkCompletion::default(); 2];
    poll_exact(b.qp.recv_cq(), &mut wcs, T).unwrap();
    assert_eq!((wcs[0].byte_len(), wcs[0].imm_data()), (100, None));
    assert_eq!((wcs[1].byte_len(), wcs[1].imm_data()), (200, Some(3185)));
    assert_eq!(&b.bytes()[..100], &d1[..]);
    assert_eq!(&b.bytes()[512..712], &d2[..]);
}

#[test]
fn rc_write_with_imm_consumes_a_recv() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, false);
    let mut recv = RecvBatch::new(&b.qp, &b.mr, 1, 0, 0, 0).unwrap();
    recv.post(1).unwrap();
    let data = fill(&mut a, 0, 48, 9);
    let mut s = spec(Op::WriteImm(0xdead_beef), 48);
    s.remote_offset = 256;
    let mut batch = SendBatch::new(&a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    run_one(&mut batch, a.qp.send_cq());
    let wc = poll_one(b.qp.recv_cq(), T).unwrap();
    assert_eq!(wc.imm_data(), Some(0xdead_beef));
    assert_eq!(&b.bytes()[256..304], &data[..]);
}

#[test]
fn rc_atomics_fetch_add_and_cmp_swap() {
    let e = env();
    let (a, mut b) = pair(&e, QpType::Rc, false);
    b.bytes_mut()[64..72].copy_from_slice(&1000u64.to_ne_bytes());
    let mut s = spec(Op::FetchAdd(5), 8);
    s.remote_offset = 64;
    let mut fa = SendBatch::new(&a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    run_one(&mut fa, a.qp.send_cq());
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
    let mut cs = SendBatch::new(&a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    run_one(&mut cs, a.qp.send_cq());
    assert_eq!(
        u64::from_ne_bytes(a.bytes()[8..16].try_into().unwrap()),
        1005
    );
    assert_eq!(
        u64::from_ne_bytes(b.bytes()[64..72].try_into().unwrap()),
        77
    );
    // A failed compare leaves the value alone and still returns it.
    run_one(&mut cs, a.qp.send_cq());
    assert_eq!(
        u64::from_ne_bytes(b.bytes()[64..72].try_into().unwrap()),
        77
    );
}

#[test]
fn uc_write() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Uc, false);
    let data = fill(&mut a, 0, 1500, 5);
    let mut batch = SendBatch::new(&a.qp, &a.mr, spec(Op::Write, 1500), Some(remote(&b))).unwrap();
    run_one(&mut batch, a.qp.send_cq());
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
    let (mut a, b) = pair(&e, QpType::Ud, false);
    let mut recv = RecvBatch::new(&b.qp, &b.mr, 1, (GRH_BYTES + 256) as u32, 0, 0).unwrap();
    recv.post(1).unwrap();
    let data = fill(&mut a, 0, 256, 11);
    let ah = AddressHandle::new(&e.pd, &e.port, &b.qp.info(None)).unwrap();
    let mut batch = SendBatch::new_ud(
        &a.qp,
        &a.mr,
        spec(Op::SendImm(3185), 256),
        &ah,
        b.qp.qp_num(),
    )
    .unwrap();
    run_one(&mut batch, a.qp.send_cq());
    let wc = poll_one(b.qp.recv_cq(), T).unwrap();
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
    let data = fill(&mut a, 0, 16 * 64, 13);
    let mut s = spec(Op::Write, 32);
    s.postlist = 16;
    let mut batch = SendBatch::new(&a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    for i in 0..16 {
        batch.set_signaled(i, true);
        batch.set_wr_id(i, 100 + i as u64);
    }
    batch.post().unwrap(); // one call, sixteen WRs
    let mut wcs = [WorkCompletion::default(); 16];
    poll_exact(a.qp.send_cq(), &mut wcs, T).unwrap();
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
    fill(&mut a, 0, 64 * 16, 17);
    let mut s = spec(Op::Write, 32);
    s.postlist = 16;
    s.inline = true;
    let mut batch = SendBatch::new(&a.qp, &a.mr, s, Some(remote(&b))).unwrap();
    // Queue depth 256 (see common::side) ≥ 2 × 64.
    let mut counter = UnsignaledCounter::new(64);
    for _ in 0..10_000 / 16 {
        batch.post_selective(&mut counter, T).unwrap();
    }
    assert_eq!(counter.posted(), 10_000);
    // Reap the last signaled WR: everything before it is done too (RC completes in order).
    poll_one(a.qp.send_cq(), T).unwrap();
    let mut extra = [WorkCompletion::default(); 4];
    assert_eq!(
        a.qp.send_cq().poll(&mut extra).unwrap(),
        0,
        "exactly one CQE per signaled WR"
    );
    assert_eq!(&b.bytes()[..32], &a.bytes()[..32]);
}

#[test]
fn write_and_read_through_the_wr_api() {
    let e = env();
    let (mut a, b) = pair(&e, QpType::Rc, true);
    let data = fill(&mut a, 0, 2048, 19);
    let ex = a.qp.ex().expect("made with new_ex");
    ex.start();
    ex.set_wr(1, false, false);
    ex.rdma_write(b.mr.rkey(), b.mr.addr() as u64 + 4096);
    // SAFETY: the range lies in a.mr, alive until the completion below.
    unsafe { ex.set_sge(a.mr.lkey(), a.mr.addr() as u64, 2048) };
    ex.set_wr(2, true, true);
    ex.rdma_write(b.mr.rkey(), b.mr.addr() as u64);
    const MSG: &[u8] = b"inline through ibv_wr_set_inline_data";
    ex.set_inline_data(MSG);
    ex.complete().unwrap();
    let wc = poll_one(a.qp.send_cq(), T).unwrap();
    assert_eq!(wc.wr_id(), 2);
    assert_eq!(&b.bytes()[4096..6144], &data[..]);
    assert_eq!(&b.bytes()[..MSG.len()], MSG);

    ex.start();
    ex.set_wr(3, true, false);
    ex.rdma_read(b.mr.rkey(), b.mr.addr() as u64 + 4096);
    // SAFETY: as above.
    unsafe { ex.set_sge(a.mr.lkey(), a.mr.addr() as u64 + 8192, 2048) };
    ex.complete().unwrap();
    assert_eq!(poll_one(a.qp.send_cq(), T).unwrap().wr_id(), 3);
    assert_eq!(&a.bytes()[8192..10240], &data[..]);
}

#[test]
fn wrong_rkey_is_a_remote_access_error() {
    let e = env();
    let (a, b) = pair(&e, QpType::Rc, false);
    let mut r = remote(&b);
    r.rkey ^= 0x5a5a_0000;
    let mut batch = SendBatch::new(&a.qp, &a.mr, spec(Op::Write, 64), Some(r)).unwrap();
    batch.set_signaled(0, true);
    batch.post().unwrap();
    let err = poll_one(a.qp.send_cq(), T).unwrap_err();
    assert_eq!(err.completion_status(), Some(10), "{err}"); // IBV_WC_REM_ACCESS_ERR
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
    let s = side(&e, QpType::Rc, false, 4096);
    let limit = s.qp.caps().max_inline_data;
    let mut sp = spec(Op::Write, limit + 1);
    sp.inline = true;
    let r = Remote {
        addr: 0,
        rkey: 0,
        len: 0,
    };
    let err = SendBatch::new(&s.qp, &s.mr, sp, Some(r))
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
