//! send-bw's credit exchange on iWARP, as perftest's (`send_rcredit`): iWARP has no RNR retry,
//! so a SEND that finds no RECV posted breaks the connection. The receiver tells the sender how
//! many SENDs it has taken: every `rx_depth / 3` arrivals it RDMA WRITEs its count (a host-order
//! u32) into the sender's credit word of that QP; the sender keeps fewer than `rx_depth` SENDs
//! past the last count it was told.
//!
//! The words live in one small region per side, laid out as perftest's: `2 × qps` u32s, the
//! first `qps` the counts this side sends, the last `qps` the counts the peer writes here. Each
//! side's key message carries its credit region's rkey and the address of its QP's word instead
//! of the data buffer's (SEND needs no remote address).

use std::sync::Arc;

use super::keys::Dest;
use crate::error::Result;
use crate::hot::{poll_one, PollTimeout, Remote, SendBatch, SendSpec};
use crate::mem::{HugePolicy, Placement};
use crate::verbs::{Access, MemoryRegion, Op, QueuePair, Resources, WorkCompletion};

/// One side's credit words and, once the peer's keys are known, its credit WRITEs.
pub struct Credits {
    mr: Arc<MemoryRegion>,
    qps: usize,
    /// A count goes out every this many arrivals (perftest's `credit_cnt`).
    every: u64,
    rx_depth: u64,
    /// Per QP, the WRITE of its count word to the peer's.
    writes: Vec<SendBatch>,
    /// Per QP, credit WRITEs not yet completed (at most `tx_depth`).
    in_flight: Vec<u64>,
    tx_depth: u64,
    /// Per QP, SENDs taken in the current size.
    taken: Vec<u64>,
}

impl Credits {
    /// The credit region for `qps` QPs, its words zero.
    pub fn new(res: &Resources, qps: usize, rx_depth: u32, tx_depth: u32) -> Result<Credits> {
        let place = Placement {
            huge: HugePolicy::Off,
            numa_node: None,
        };
        let mr = res.region(8 * qps, place, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
        mr.fill(0);
        Ok(Credits {
            mr,
            qps,
            every: u64::from(rx_depth / 3).max(1),
            rx_depth: u64::from(rx_depth),
            writes: Vec::new(),
            in_flight: vec![0; qps],
            tx_depth: u64::from(tx_depth),
            taken: vec![0; qps],
        })
    }

    /// Where the peer writes QP `q`'s count: the rkey and address `q`'s key message carries.
    pub fn key(&self, q: usize) -> (u32, u64) {
        (
            self.mr.rkey(),
            self.mr.addr() as u64 + self.word(self.qps + q) as u64,
        )
    }

    fn word(&self, i: usize) -> usize {
        4 * i
    }

    /// Builds each QP's count WRITE to the peer's word (its keys in `rem`).
    pub fn connect(&mut self, qps: &mut [QueuePair], rem: &[Dest]) -> Result<()> {
        self.writes.clear();
        for (q, qp) in qps.iter_mut().enumerate() {
            let spec = SendSpec {
                op: Op::Write,
                postlist: 1,
                size: 4,
                stride: 0,
                local_offset: self.word(q),
                remote_offset: 0,
                inline: false,
            };
            let remote = Remote {
                addr: rem[q].vaddr,
                rkey: rem[q].rkey,
                len: 0,
            };
            let mut b = SendBatch::new(qp, &self.mr, spec, Some(remote))?;
            b.set_signaled(0, true);
            b.set_wr_id(0, q as u64);
            self.writes.push(b);
        }
        Ok(())
    }

    /// A new size: the counts start again, on both sides (the sender's words are zeroed before
    /// its first SEND of the size, which the receiver's first count can only follow).
    pub fn begin_size(&mut self) {
        for q in 0..self.qps {
            self.mr.write(self.word(self.qps + q), &[0; 4]);
            self.taken[q] = 0;
        }
    }

    /// Sender: may QP `q`, with `posted` SENDs out in this size, post `postlist` more?
    #[inline]
    pub fn window_open(&self, q: usize, posted: u64, postlist: u64) -> bool {
        let mut told = [0u8; 4];
        self.mr.read(self.word(self.qps + q), &mut told);
        posted + postlist - u64::from(u32::from_ne_bytes(told)) < self.rx_depth
    }

    /// Receiver: one SEND arrived on QP `q`; every `every` arrivals its count goes to the
    /// sender. The WRITEs' completions come on `qp`'s send CQ, reaped here when `tx_depth` are
    /// in flight and by [`drain`](Self::drain).
    #[inline]
    pub fn taken(&mut self, q: usize, qp: &mut QueuePair, timeout: PollTimeout) -> Result<()> {
        self.taken[q] += 1;
        if !(self.taken[q] % self.rx_depth).is_multiple_of(self.every) {
            return Ok(());
        }
        while self.in_flight[q] >= self.tx_depth {
            self.reap_one(qp, timeout)?;
        }
        self.mr
            .write(self.word(q), &(self.taken[q] as u32).to_ne_bytes());
        self.writes[q].post(qp)?;
        self.in_flight[q] += 1;
        Ok(())
    }

    /// Receiver, at the end of a size: every credit WRITE completed, so that none lands in the
    /// sender's words after it zeroes them for the next size.
    pub fn drain(&mut self, qps: &[QueuePair], timeout: PollTimeout) -> Result<()> {
        while self.in_flight.iter().any(|&n| n > 0) {
            self.reap_one(&qps[0], timeout)?;
        }
        Ok(())
    }

    fn reap_one(&mut self, qp: &QueuePair, timeout: PollTimeout) -> Result<()> {
        let wc: WorkCompletion = poll_one(qp.send_cq(), timeout)?;
        let q = wc.wr_id() as usize;
        self.in_flight[q.min(self.qps - 1)] -= 1;
        Ok(())
    }
}
