//! A HERD request as it lies in the request region.
//!
//! A slot is 128 bytes: the 64-byte MICA op (16-byte key, opcode, value length, up to 46 value
//! bytes) sits cache-line aligned in the second half, and the 8 bytes just before it hold the
//! request's *check word*. A client WRITEs check word and op in one inlined WRITE: 8 + 17 bytes
//! for a GET, 8 + 18 + value bytes for a PUT.
//!
//! Why the check word: the original tells a request by its opcode byte alone (HERD opcode = MICA
//! opcode + 10, so "is there a request" is one compare), which relies on the NIC writing the op's
//! cache line at once. Nothing in the verbs specification promises that, and Soft-RoCE does not
//! (a WRITE's bytes are copied by the kernel in no defined order), so a worker could take a
//! request whose key or value is still half written. The check word carries the request's
//! sequence number on its (client, worker) pair in its top 16 bits, which the worker knows in
//! advance, and a 48-bit hash of the op's bytes: a worker takes a request after the opcode
//! compare only if both match, so a torn request waits for its last bytes (a torn one passes
//! with probability 2^-48).

use crate::hot::RequestRegion;
use crate::kv::{self, Key, MAX_VALUE};

/// HERD opcode = MICA opcode + this.
pub const HERD_MICA_OFFSET: u8 = 10;
/// A GET waiting in the region.
pub const HERD_OP_GET: u8 = kv::OP_GET + HERD_MICA_OFFSET;
/// A PUT waiting in the region.
pub const HERD_OP_PUT: u8 = kv::OP_PUT + HERD_MICA_OFFSET;
/// Bytes per request slot.
pub const SLOT_BYTES: usize = 128;
/// Where in a slot the check word is; a client's WRITE starts here.
pub const CHECK_AT: usize = 56;
/// Where in a slot the 64-byte op is.
pub const OP_AT: usize = 64;
/// The opcode byte's place in the op.
const OPCODE: usize = 16;
/// Op bytes of a GET: key and opcode.
pub const GET_BYTES: usize = 17;

/// Op bytes of a PUT of `value_len` bytes: key, opcode, length and value.
pub const fn put_bytes(value_len: usize) -> usize {
    18 + value_len
}

/// Bytes a client WRITEs for an op of `op_bytes`: the check word, then the op.
pub const fn wire_bytes(op_bytes: usize) -> usize {
    8 + op_bytes
}

/// The immediate of a reply: which worker answered and from which window slot, so the client
/// knows which request a reply answers (replies over different UD QPs may overtake each other).
#[inline(always)]
pub fn reply_imm(worker: usize, slot: usize) -> u32 {
    ((worker as u32) << 16) | slot as u32
}

/// The (worker, slot) a reply's immediate names.
#[inline(always)]
pub fn parse_imm(imm: u32) -> (usize, usize) {
    ((imm >> 16) as usize, (imm & 0xffff) as usize)
}

#[inline(always)]
fn mix(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
}

/// The check word of an op whose first `len` bytes are `op` (little-endian words; bytes past
/// `len` are not covered) and whose sequence number is `seq`.
#[inline(always)]
pub fn check_word(seq: u16, op: &[u64; 8], len: usize) -> u64 {
    debug_assert!(len <= 64);
    let (full, rest) = (len / 8, len % 8);
    // The sequence number seeds the hash too: a check word whose top bytes are new and whose
    // hash bits are still the last request's must not pass over that request's op.
    let mut h = 0x243f_6a88_85a3_08d3 ^ len as u64 ^ u64::from(seq) << 32;
    for &w in &op[..full] {
        h = mix(h, w);
    }
    if rest != 0 {
        h = mix(h, op[full] & ((1u64 << (rest * 8)) - 1));
    }
    h ^= h >> 32;
    h = h.wrapping_mul(0xd6e8_feb8_6659_fd93);
    h ^= h >> 29;
    (u64::from(seq) << 48) | (h >> 16)
}

/// A request being built by a client: its check word and op words, ready to copy into the
/// WRITE's local buffer.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// Word 0: the check word; words 1..: the op.
    pub words: [u64; 9],
    /// Bytes to WRITE (from word 0).
    pub len: usize,
}

impl Request {
    /// A GET of `key`, request `seq` on its (client, worker) pair.
    #[inline]
    pub fn get(key: Key, seq: u16) -> Request {
        let mut op = [0u64; 8];
        op[0] = key.0 as u64;
        op[1] = (key.0 >> 64) as u64;
        // The original sends val_len −1 with a GET; it is not among the 17 bytes sent.
        op[2] = u64::from(HERD_OP_GET);
        Self::sealed(seq, op, GET_BYTES)
    }

    /// A PUT of `value` (1..=46 bytes) to `key`, request `seq` on its pair.
    #[inline]
    pub fn put(key: Key, value: &[u8], seq: u16) -> Request {
        debug_assert!(!value.is_empty() && value.len() <= MAX_VALUE);
        let mut bytes = [0u8; 64];
        bytes[..16].copy_from_slice(&key.0.to_le_bytes());
        bytes[OPCODE] = HERD_OP_PUT;
        bytes[OPCODE + 1] = value.len() as u8;
        bytes[18..18 + value.len()].copy_from_slice(value);
        let mut op = [0u64; 8];
        for (w, c) in op.iter_mut().zip(bytes.chunks_exact(8)) {
            *w = u64::from_le_bytes(c.try_into().expect("8-byte chunk"));
        }
        Self::sealed(seq, op, put_bytes(value.len()))
    }

    fn sealed(seq: u16, op: [u64; 8], len: usize) -> Request {
        let mut words = [0u64; 9];
        words[0] = check_word(seq, &op, len);
        words[1..].copy_from_slice(&op);
        Request {
            words,
            len: wire_bytes(len),
        }
    }
}

/// Takes the request in the slot at byte `slot` of `region` if it is there whole and is request
/// `seq` of its pair: fills `op` with its MICA part and marks the slot answered (opcode lowered
/// to the MICA opcode, as the original). `None`: nothing new yet, or still being written.
#[inline]
pub fn take(region: &RequestRegion, slot: usize, seq: u16, op: &mut kv::Op) -> Option<()> {
    // The original's poll: one compare on the opcode byte.
    if region.load_u8(slot + OP_AT + OPCODE) < HERD_OP_GET {
        return None;
    }
    let check = region.load_u64(slot + CHECK_AT);
    if (check >> 48) as u16 != seq {
        return None;
    }
    let mut w = [0u64; 8];
    for (i, word) in w.iter_mut().enumerate().take(3) {
        *word = region.load_u64(slot + OP_AT + 8 * i);
    }
    let (opcode, val_len) = (w[2] as u8, (w[2] >> 8) as u8 as usize);
    let len = match opcode {
        HERD_OP_GET => GET_BYTES,
        HERD_OP_PUT if (1..=MAX_VALUE).contains(&val_len) => put_bytes(val_len),
        _ => return None,
    };
    for (i, word) in w.iter_mut().enumerate().take(len.div_ceil(8)).skip(3) {
        *word = region.load_u64(slot + OP_AT + 8 * i);
    }
    if check_word(seq, &w, len) != check {
        return None;
    }
    region.store_u8(slot + OP_AT + OPCODE, opcode - HERD_MICA_OFFSET);
    op.key = Key(u128::from(w[0]) | u128::from(w[1]) << 64);
    op.opcode = opcode - HERD_MICA_OFFSET;
    if opcode == HERD_OP_PUT {
        op.val_len = val_len as u8;
        let mut bytes = [0u8; 64];
        for (c, word) in bytes.chunks_exact_mut(8).zip(&w) {
            c.copy_from_slice(&word.to_le_bytes());
        }
        op.value[..val_len].copy_from_slice(&bytes[18..18 + val_len]);
    } else {
        op.val_len = 0;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op_bytes(r: &Request) -> Vec<u8> {
        r.words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn a_request_fits_its_slot_and_keeps_the_originals_layout() {
        let k = Key::of(9);
        let r = Request::put(k, &[7; MAX_VALUE], 3);
        assert_eq!(r.len, CHECK_AT.abs_diff(SLOT_BYTES));
        let b = op_bytes(&r);
        assert_eq!(&b[8..24], &k.0.to_le_bytes());
        assert_eq!(b[8 + 16], HERD_OP_PUT);
        assert_eq!(b[8 + 17], MAX_VALUE as u8);
        assert_eq!(Request::get(k, 3).len, 25);
        assert_eq!(HERD_OP_GET, 121);
        assert_eq!(HERD_OP_PUT, 122);
    }

    #[test]
    fn any_torn_request_fails_its_check() {
        // Every mix of old (zero) and new bytes but the complete request must fail the check.
        let r = Request::put(Key::of(1), b"0123456789abcdefghijklmnopqrstuv", 77);
        let new = op_bytes(&r);
        let op_len = r.len - 8;
        let mut seen = 0;
        for missing in 0..op_len {
            for run in 1..=op_len - missing {
                let mut torn = new[8..].to_vec();
                torn[missing..missing + run].fill(0);
                let mut w = [0u64; 8];
                for (word, c) in w.iter_mut().zip(torn.chunks_exact(8)) {
                    *word = u64::from_le_bytes(c.try_into().unwrap());
                }
                if torn[..op_len] != new[8..8 + op_len] {
                    assert_ne!(check_word(77, &w, op_len), r.words[0], "{missing}+{run}");
                    seen += 1;
                }
            }
        }
        assert!(seen > 1000);
    }

    #[test]
    fn a_new_sequence_number_over_the_last_requests_bytes_fails() {
        // The slot still holds request 5 (answered: opcode lowered to MICA's); request 5 + 32's
        // first bytes to land are its check word's top two bytes and its opcode.
        let old = Request::put(Key::of(3), b"value", 5);
        let mut op = [0u64; 8];
        op.copy_from_slice(&old.words[1..]);
        let torn_check = (old.words[0] & ((1 << 48) - 1)) | (37u64 << 48);
        assert_eq!(torn_check >> 48, 37);
        assert_ne!(check_word(37, &op, put_bytes(5)), torn_check);
    }

    #[test]
    fn the_check_ignores_bytes_past_the_op_and_names_the_sequence() {
        let r = Request::get(Key::of(5), 65535);
        let mut op = [0u64; 8];
        op.copy_from_slice(&r.words[1..]);
        op[2] |= 0xdead_0000_0000_0000;
        op[5] = 42;
        assert_eq!(check_word(65535, &op, GET_BYTES), r.words[0]);
        assert_eq!(r.words[0] >> 48, 65535);
        assert_ne!(check_word(65534, &op, GET_BYTES), r.words[0]);
    }

    #[test]
    fn a_worker_takes_a_request_only_when_it_is_whole_and_next() {
        use crate::mem::{HugePolicy, Placement, ShmBuffer};
        let key = 0x4e52_0000 | (std::process::id() as i32 & 0xffff);
        let place = Placement {
            huge: HugePolicy::Off,
            numa_node: None,
        };
        let _seg = ShmBuffer::create(key, 4096, place).unwrap();
        let region = RequestRegion::attach(key, 4096).unwrap();
        let slot = SLOT_BYTES;
        let k = Key::of(42);
        let r = Request::put(k, b"abcdefghij", 1);
        let words = r.len.div_ceil(8);
        let mut op = kv::Op {
            key: Key(0),
            opcode: 0,
            val_len: 0,
            value: [0; MAX_VALUE],
        };
        // Everything but the last word: not taken.
        for (i, &w) in r.words.iter().enumerate().take(words - 1) {
            region.store_u64(slot + CHECK_AT + 8 * i, w);
        }
        assert!(take(&region, slot, 1, &mut op).is_none());
        region.store_u64(slot + CHECK_AT + 8 * (words - 1), r.words[words - 1]);
        // Whole, but not the request the worker expects next.
        assert!(take(&region, slot, 2, &mut op).is_none());
        assert!(take(&region, slot, 1, &mut op).is_some());
        assert_eq!((op.key, op.opcode, op.val_len), (k, kv::OP_PUT, 10));
        assert_eq!(&op.value[..10], b"abcdefghij");
        // Taken once: the opcode is MICA's now, so the one compare skips the slot.
        assert_eq!(region.load_u8(slot + OP_AT + 16), kv::OP_PUT);
        assert!(take(&region, slot, 1, &mut op).is_none());
        // The next request in the same slot, a GET: its bytes over the old ones.
        let g = Request::get(Key::of(7), 1 + 32);
        for (i, &w) in g.words.iter().enumerate().take(g.len.div_ceil(8)) {
            region.store_u64(slot + CHECK_AT + 8 * i, w);
        }
        assert!(take(&region, slot, 33, &mut op).is_some());
        assert_eq!((op.key, op.opcode), (Key::of(7), kv::OP_GET));
    }

    #[test]
    fn imm_round_trips() {
        assert_eq!(parse_imm(reply_imm(11, 31)), (11, 31));
    }
}
