//! The registry value format: fixed length, versioned, little-endian, with the GID (so RoCE works,
//! which libhrd's raw struct does not) and a run id that tells a live entry from a stale one.
//!
//! ```text
//! off len field
//!   0   4 magic "RBQP"
//!   4   1 version (3)
//!   5   1 active MTU of the QP's port (ibv_mtu: 1 = 256 B … 5 = 4096 B)
//!   6   1 READs/atomics the QP accepts in flight (its responder depth, at most 255; 0 unknown)
//!   7   1 zero
//!   8   8 run id (random per process; a reader may insist on a peer's)
//!  16   8 published at, Unix ms
//!  24   4 qpn        28 4 psn        32 2 lid        34 2 zero
//!  36  16 gid
//!  52   8 buffer address   60 8 buffer size   68 4 rkey
//!  72     end
//! ```

use crate::verbs::QpInfo;

/// Bytes of one encoded value.
pub const VALUE_LEN: usize = 72;
const MAGIC: &[u8; 4] = b"RBQP";
const VERSION: u8 = 3;

/// A published `QpInfo` with the facts that make staleness visible.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The QP and buffer.
    pub info: QpInfo,
    /// Publisher's run id.
    pub run_id: u64,
    /// When it was published (Unix ms).
    pub published_ms: u64,
    /// Bumped by the owner each time it refreshes the entry: a reader that sees it move knows the
    /// owner is alive, without comparing clocks.
    pub beat: u16,
}

/// Encodes an entry.
pub fn encode(e: &Entry) -> [u8; VALUE_LEN] {
    let mut b = [0u8; VALUE_LEN];
    b[0..4].copy_from_slice(MAGIC);
    b[4] = VERSION;
    b[5] = e.info.mtu as u8;
    b[6] = e.info.rd_atomic;
    b[8..16].copy_from_slice(&e.run_id.to_le_bytes());
    b[16..24].copy_from_slice(&e.published_ms.to_le_bytes());
    b[24..28].copy_from_slice(&e.info.qpn.to_le_bytes());
    b[28..32].copy_from_slice(&e.info.psn.to_le_bytes());
    b[32..34].copy_from_slice(&e.info.lid.to_le_bytes());
    b[34..36].copy_from_slice(&e.beat.to_le_bytes());
    b[36..52].copy_from_slice(&e.info.gid);
    b[52..60].copy_from_slice(&e.info.buf_addr.to_le_bytes());
    b[60..68].copy_from_slice(&e.info.buf_size.to_le_bytes());
    b[68..72].copy_from_slice(&e.info.rkey.to_le_bytes());
    b
}

/// Decodes a value; the error says what is wrong with it (the caller adds the key).
pub fn decode(b: &[u8]) -> Result<Entry, String> {
    if b.len() != VALUE_LEN {
        return Err(format!(
            "value is {} bytes, expected {VALUE_LEN} (not an rdma-bench entry)",
            b.len()
        ));
    }
    if &b[0..4] != MAGIC {
        return Err(
            "value does not start with the rdma-bench magic (a libhrd or foreign entry?)".into(),
        );
    }
    if b[4] != VERSION {
        return Err(format!(
            "value has format version {}, this build reads version {VERSION}",
            b[4]
        ));
    }
    if b[7] != 0 {
        return Err("value has non-zero reserved bytes".into());
    }
    let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let u64_at = |o: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[o..o + 8]);
        u64::from_le_bytes(x)
    };
    let mut gid = [0u8; 16];
    gid.copy_from_slice(&b[36..52]);
    let info = QpInfo {
        qpn: u32_at(24),
        psn: u32_at(28),
        lid: u16::from_le_bytes([b[32], b[33]]),
        gid,
        buf_addr: u64_at(52),
        buf_size: u64_at(60),
        rkey: u32_at(68),
        mtu: u32::from(b[5]),
        rd_atomic: b[6],
    };
    if info.mtu > 5 {
        return Err(format!(
            "value has MTU code {} (at most 5: 4096 B)",
            info.mtu
        ));
    }
    if info.qpn >= 1 << 24 || info.psn >= 1 << 24 {
        return Err("value has a QP number or PSN above 24 bits".into());
    }
    Ok(Entry {
        info,
        run_id: u64_at(8),
        published_ms: u64_at(16),
        beat: u16::from_le_bytes([b[34], b[35]]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Entry {
        Entry {
            info: QpInfo {
                qpn: 0x11,
                psn: 3185,
                lid: 7,
                gid: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1],
                buf_addr: 0x7f00_0000_1000,
                buf_size: 8192,
                rkey: 0xabcd,
                mtu: 3,
                rd_atomic: 16,
            },
            run_id: 0x0123_4567_89ab_cdef,
            published_ms: 1_800_000_000_000,
            beat: 3,
        }
    }

    #[test]
    fn round_trip() {
        assert_eq!(decode(&encode(&sample())), Ok(sample()));
    }

    #[test]
    fn malformed_values_are_named() {
        assert!(decode(b"hrd_ready").unwrap_err().contains("9 bytes"));
        let mut v = encode(&sample());
        v[0] = b'X';
        assert!(decode(&v).unwrap_err().contains("magic"));
        let mut v = encode(&sample());
        v[4] = 9;
        assert!(decode(&v).unwrap_err().contains("version 9"));
    }

    /// Property: no input panics, and whatever decodes re-encodes to the same bytes.
    #[test]
    fn decoder_survives_random_and_mutated_input() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let valid = encode(&sample());
        let mut decoded = 0;
        for i in 0..200_000 {
            let mut v: Vec<u8> = if i % 2 == 0 {
                let mut v = valid.to_vec();
                for _ in 0..=(rnd() % 4) {
                    let at = (rnd() as usize) % v.len();
                    v[at] = rnd() as u8;
                }
                v
            } else {
                let len = (rnd() % 100) as usize;
                (0..len).map(|_| rnd() as u8).collect()
            };
            if i % 7 == 0 {
                v.truncate((rnd() as usize) % (v.len() + 1));
            }
            if let Ok(e) = decode(&v) {
                decoded += 1;
                assert_eq!(&encode(&e)[..], &v[..]);
            }
        }
        assert!(
            decoded > 0,
            "mutations of the reserved-free fields should still decode"
        );
    }
}
