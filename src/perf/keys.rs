//! perftest's per-QP key message: what each side sends the other over the TCP channel so that
//! the peer can connect a QP to it and reach its buffer.
//!
//! Without a GID (InfiniBand, no `-x`) it is the 59-byte C string
//! `LLLL:OOOO:QQQQQQ:PPPPPP:RRRRRRRR:VVVVVVVVVVVVVVVV:SSSSSSSS` (lid, outstanding reads, QPN, PSN,
//! rkey, vaddr, SRQ number, hex, NUL-terminated). With a GID (every RoCE port, or `-x` on
//! InfiniBand) the 16 GID bytes go between vaddr and the SRQ number as `gg:` pairs, a colon ends
//! the string, and the message is 108 bytes. Both sides pick the form from their own port, as
//! perftest does, so a pair must agree on it (they do whenever both ends are the same link layer).

use crate::error::{Error, Result};

/// Bytes of a key message without a GID (perftest's KEY_MSG_SIZE).
pub const KEY_MSG_SIZE: usize = 59;
/// Bytes of a key message with a GID (perftest's KEY_MSG_SIZE_GID).
pub const KEY_MSG_SIZE_GID: usize = 108;

/// One side's QP as the other side needs to know it (perftest's `pingpong_dest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Dest {
    /// LID of the port (0 on RoCE).
    pub lid: u16,
    /// RDMA READs / atomics this side accepts in flight (its `max_dest_rd_atomic`).
    pub out_reads: u32,
    /// QP number.
    pub qpn: u32,
    /// Initial packet sequence number of its send queue.
    pub psn: u32,
    /// Remote key of the buffer the peer may target.
    pub rkey: u32,
    /// Address of that buffer.
    pub vaddr: u64,
    /// The port's GID (zero when the message carries none).
    pub gid: [u8; 16],
    /// SRQ number (XRC / DC only; 0 here).
    pub srqn: u32,
}

impl Dest {
    /// The wire form: [`KEY_MSG_SIZE_GID`] bytes when `with_gid`, else [`KEY_MSG_SIZE`].
    pub fn encode(&self, with_gid: bool) -> Vec<u8> {
        let mut s = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid, self.out_reads, self.qpn, self.psn, self.rkey, self.vaddr
        );
        let len = if with_gid {
            for b in self.gid {
                s.push_str(&format!("{b:02x}:"));
            }
            s.push_str(&format!("{:08x}:", self.srqn));
            KEY_MSG_SIZE_GID
        } else {
            s.push_str(&format!("{:08x}", self.srqn));
            KEY_MSG_SIZE
        };
        let mut msg = s.into_bytes();
        // A field wider than its format (never for valid values) would push the NUL out: keep
        // the message length fixed, as the peer reads exactly that many bytes.
        msg.resize(len, 0);
        msg[len - 1] = 0;
        msg
    }

    /// Parses a key message as `encode` writes it (and as perftest writes it).
    pub fn decode(msg: &[u8], with_gid: bool) -> Result<Dest> {
        let text = msg.split(|&b| b == 0).next().unwrap_or_default();
        let text = std::str::from_utf8(text).map_err(|_| bad_key(msg))?;
        let fields: Vec<&str> = text.split(':').collect();
        let want = if with_gid { 24 } else { 7 };
        if fields.len() < want {
            return Err(bad_key(msg));
        }
        let hex = |i: usize| u64::from_str_radix(fields[i], 16).map_err(|_| bad_key(msg));
        let mut d = Dest {
            lid: hex(0)? as u16,
            out_reads: hex(1)? as u32,
            qpn: hex(2)? as u32,
            psn: hex(3)? as u32,
            rkey: hex(4)? as u32,
            vaddr: hex(5)?,
            ..Dest::default()
        };
        if with_gid {
            for (i, b) in d.gid.iter_mut().enumerate() {
                *b = hex(6 + i)? as u8;
            }
            d.srqn = hex(22)? as u32;
        } else {
            d.srqn = hex(6)? as u32;
        }
        Ok(d)
    }
}

/// Bytes of a key message over RDMA CM (`-R`): perftest's `struct pingpong_dest` as it lays out
/// on x86-64 (lid, out_reads, qpn, psn, rkey as big-endian 32-bit words, 4 bytes of padding,
/// vaddr big-endian at 24, the GID's raw bytes at 32, srqn and gid_index big-endian at 48 and 52).
pub const KEY_STRUCT_SIZE: usize = 56;

impl Dest {
    /// The `-R` wire form.
    pub fn encode_raw(&self) -> [u8; KEY_STRUCT_SIZE] {
        let mut m = [0u8; KEY_STRUCT_SIZE];
        let words = [
            u32::from(self.lid),
            self.out_reads,
            self.qpn,
            self.psn,
            self.rkey,
        ];
        for (i, w) in words.iter().enumerate() {
            m[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
        }
        m[24..32].copy_from_slice(&self.vaddr.to_be_bytes());
        m[32..48].copy_from_slice(&self.gid);
        m[48..52].copy_from_slice(&self.srqn.to_be_bytes());
        m
    }

    /// Parses the `-R` wire form (perftest itself ignores srqn and gid_index there).
    pub fn decode_raw(m: &[u8; KEY_STRUCT_SIZE]) -> Dest {
        let word = |i: usize| u32::from_be_bytes([m[i], m[i + 1], m[i + 2], m[i + 3]]);
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&m[32..48]);
        let mut vaddr = [0u8; 8];
        vaddr.copy_from_slice(&m[24..32]);
        Dest {
            lid: word(0) as u16,
            out_reads: word(4),
            qpn: word(8),
            psn: word(12),
            rkey: word(16),
            vaddr: u64::from_be_bytes(vaddr),
            gid,
            srqn: 0,
        }
    }
}

fn bad_key(msg: &[u8]) -> Error {
    let shown: String = String::from_utf8_lossy(msg)
        .chars()
        .take_while(|c| *c != '\0')
        .take(120)
        .collect();
    Error::Protocol(format!(
        "the peer's QP key message is not perftest's format: {shown:?} (is the peer perftest or \
         rdma-bench, with the same link layer and -x setting?)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Dest {
        Dest {
            lid: 0,
            out_reads: 0x10,
            qpn: 0x11,
            psn: 0xabcdef,
            rkey: 0x1234,
            vaddr: 0x5566_7788_99aa,
            gid: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 77, 1],
            srqn: 0,
        }
    }

    #[test]
    fn gid_form_is_perftests_108_bytes() {
        let m = sample().encode(true);
        assert_eq!(m.len(), KEY_MSG_SIZE_GID);
        let text = std::str::from_utf8(&m[..KEY_MSG_SIZE_GID - 1]).unwrap();
        assert_eq!(
            text,
            "0000:0010:000011:abcdef:00001234:00005566778899aa:\
             00:00:00:00:00:00:00:00:00:00:ff:ff:c0:a8:4d:01:00000000:"
        );
        assert_eq!(m[KEY_MSG_SIZE_GID - 1], 0);
        assert_eq!(Dest::decode(&m, true).unwrap(), sample());
    }

    #[test]
    fn lid_form_is_perftests_59_bytes() {
        let d = Dest {
            lid: 0x1b,
            gid: [0; 16],
            ..sample()
        };
        let m = d.encode(false);
        assert_eq!(m.len(), KEY_MSG_SIZE);
        assert_eq!(
            std::str::from_utf8(&m[..KEY_MSG_SIZE - 1]).unwrap(),
            "001b:0010:000011:abcdef:00001234:00005566778899aa:00000000"
        );
        assert_eq!(Dest::decode(&m, false).unwrap(), d);
    }

    #[test]
    fn raw_form_is_perftests_struct() {
        let m = sample().encode_raw();
        assert_eq!(&m[4..8], &[0, 0, 0, 0x10]);
        assert_eq!(&m[8..12], &[0, 0, 0, 0x11]);
        assert_eq!(&m[24..32], &0x5566_7788_99aau64.to_be_bytes());
        assert_eq!(&m[32..48], &sample().gid);
        assert_eq!(Dest::decode_raw(&m), sample());
    }

    #[test]
    fn garbage_is_a_protocol_error_naming_the_message() {
        let e = Dest::decode(b"done\0", true).unwrap_err().to_string();
        assert!(e.contains("\"done\""), "{e}");
        assert!(Dest::decode(&[0xff; 59], false).is_err());
    }
}
