//! perftest's buffer layout: one MR of `2 · nq · INC(BUFF)` bytes, where BUFF = max(size, page)
//! for the largest size of the run and INC rounds up to a cache line. QP `i` sends from offset
//! `i · BUFF` and exposes `(nq + i) · BUFF` to its peer (WRITE target, READ source, atomic
//! counter, RECV buffer); a BW stream cycles through the page a cache line at a time. Over UD
//! a RECV also takes the 40-byte GRH, placed so that the payload starts a cache line into the
//! exposed buffer, and the MR grows by a line to make room for it.
//!
//! With `--mr_per_qp` each QP has a buffer and MR of its own, of `2 · INC(BUFF)` bytes: it sends
//! from offset 0 and exposes offset BUFF. The peer learns each QP's key and address either way,
//! so the two layouts interoperate.

/// Bytes a UD RECV holds before the payload (the GRH, or RoCE v2's IP header in its tail).
pub const GRH: u64 = 40;

/// perftest's buffer geometry, from the page and cache-line sizes both sides agreed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// The cycle buffer (page size, the larger of both sides').
    pub cycle: u64,
    /// The cache line (the larger of both sides').
    pub line: u64,
    /// BUFF_SIZE of the largest size: max(size, cycle).
    pub buff: u64,
    /// QPs.
    pub nq: u64,
    /// UD: RECVs carry a GRH.
    pub ud: bool,
    /// `--mr_per_qp`: each QP's buffer is an MR of its own.
    pub per_qp: bool,
    /// Bytes between two QPs' buffers in one MR (0 with one MR per QP): [`Geometry::local`] is
    /// read in the posting loop, so it stays one multiplication.
    qp_stride: u64,
    /// Where QP 0's exposed buffer starts in its MR.
    exposed_base: u64,
}

impl Geometry {
    /// For `alloc_size` bytes per message and `nq` QPs.
    pub fn new(cycle: u64, line: u64, alloc_size: u64, nq: u64) -> Geometry {
        Geometry {
            cycle,
            line,
            buff: alloc_size.max(cycle),
            nq,
            ud: false,
            per_qp: false,
            qp_stride: alloc_size.max(cycle),
            exposed_base: nq * alloc_size.max(cycle),
        }
    }

    /// The same layout cut into one buffer (and MR) per QP.
    pub fn one_mr_per_qp(self) -> Geometry {
        Geometry {
            per_qp: true,
            qp_stride: 0,
            exposed_base: self.buff,
            ..self
        }
    }

    /// QPs that share one MR: all of them, or one with `--mr_per_qp`.
    fn qps_per_mr(&self) -> u64 {
        if self.per_qp {
            1
        } else {
            self.nq
        }
    }

    /// MRs the test registers.
    pub fn mrs(&self) -> u64 {
        self.nq / self.qps_per_mr()
    }

    /// The same layout for UD QPs, whose RECVs take a GRH first.
    pub fn for_ud(self) -> Geometry {
        Geometry { ud: true, ..self }
    }

    /// perftest's INC: `size` rounded up to a cache line, at least one line.
    pub fn inc(&self, size: u64) -> u64 {
        size.max(1).div_ceil(self.line) * self.line
    }

    /// Distinct addresses a BW stream cycles through: `cycle / INC(size)` when a message fits
    /// twice in the cycle buffer, else one.
    pub fn slots(&self, size: u64) -> u64 {
        if size <= self.cycle / 2 {
            self.cycle / self.inc(size)
        } else {
            1
        }
    }

    /// Offset QP `i` sends from, in its MR.
    pub fn local(&self, i: u64) -> u64 {
        i * self.qp_stride
    }

    /// Offset QP `i` exposes to its peer, in its MR.
    pub fn exposed(&self, i: u64) -> u64 {
        self.exposed_base + i * self.qp_stride
    }

    /// Where QP `i` receives a `size`-byte message, and how many bytes its RECV takes: the
    /// exposed buffer, or over UD the GRH and then the payload from one line in.
    pub fn recv_slot(&self, i: u64, size: u64) -> (u64, u64) {
        if self.ud {
            (self.exposed(i) + self.grh_room() - GRH, size + GRH)
        } else {
            (self.exposed(i), size)
        }
    }

    fn grh_room(&self) -> u64 {
        self.line.max(GRH)
    }

    /// Bytes of each MR.
    pub fn mr_len(&self) -> u64 {
        self.inc(self.buff) * 2 * self.qps_per_mr() + if self.ud { self.grh_room() } else { 0 }
    }
}

/// The system's page size and L1 cache line (perftest's cycle buffer and cache line defaults).
pub(super) fn local_page_and_line() -> (u32, u32) {
    (
        crate::mem::page_size() as u32,
        crate::mem::cache_line() as u32,
    )
}

/// An `ibv_mtu` value (1..=5) in bytes.
pub fn mtu_bytes(mtu: u32) -> u32 {
    128 << mtu
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_matches_perftests_worked_values() {
        // Worked values for a 4 KiB page and 64-byte lines, one QP.
        let g = Geometry::new(4096, 64, 2, 1);
        assert_eq!(
            (g.buff, g.inc(2), g.mr_len(), g.exposed(0), g.slots(2)),
            (4096, 64, 8192, 4096, 64)
        );
        let g = Geometry::new(4096, 64, 65536, 1);
        assert_eq!(
            (g.buff, g.mr_len(), g.exposed(0), g.slots(65536)),
            (65536, 131072, 65536, 1)
        );
        assert_eq!(Geometry::new(4096, 64, 100, 1).slots(100), 32);
        assert_eq!(Geometry::new(4096, 64, 2048, 1).slots(2048), 2);
        assert_eq!(Geometry::new(4096, 64, 2049, 1).slots(2049), 1);
        let g = Geometry::new(4096, 64, 65536, 4);
        assert_eq!(
            (g.mr_len(), g.exposed(0), g.exposed(3)),
            (524288, 262144, 458752)
        );
        assert_eq!(mtu_bytes(3), 1024);
    }

    #[test]
    fn one_mr_per_qp_gives_each_qp_perftests_single_qp_layout() {
        // perftest's --mr_per_qp: buf[i] of 2 · INC(BUFF), sending from 0, exposing BUFF.
        let g = Geometry::new(4096, 64, 65536, 4).one_mr_per_qp();
        assert_eq!(g.mrs(), 4);
        assert_eq!((g.mr_len(), g.local(3), g.exposed(3)), (131072, 0, 65536));
        assert_eq!(Geometry::new(4096, 64, 65536, 4).mrs(), 1);
        let ud = Geometry::new(4096, 64, 4096, 2).for_ud().one_mr_per_qp();
        let (off, len) = ud.recv_slot(1, 4096);
        assert_eq!((off, off + len), (4096 + 24, ud.mr_len()));
    }

    #[test]
    fn ud_receives_leave_room_for_the_grh() {
        let g = Geometry::new(4096, 64, 4096, 2).for_ud();
        // The payload starts one line into the exposed buffer, the GRH just before it.
        assert_eq!(g.recv_slot(1, 4096), (3 * 4096 + 24, 4136));
        // The last QP's largest RECV ends inside the MR.
        let (off, len) = g.recv_slot(1, 4096);
        assert_eq!(off + len, g.mr_len());
        assert_eq!(
            Geometry::new(4096, 64, 4096, 2).recv_slot(1, 8),
            (3 * 4096, 8)
        );
    }
}
