//! A MICA-style key-value store, the store behind HERD: a lossy hash index of 8-slot buckets
//! whose slots point into a circular log of items, both in hugepage-backed memory. One store per
//! worker thread, driven in batches. No RDMA here, so it is tested on the host.
//!
//! What the design may lose, and nothing else: a key whose index slot was taken over (its bucket
//! was full, or another key with the same bucket and 16-bit tag was inserted), or whose item the
//! circular log has written over. A GET then misses; it never returns another key's value, nor an
//! older value of its own key (every hit is checked against the key stored in the log, and a
//! slot whose item the log head has passed is ignored).
//!
//! A batch runs as MICA's `mica_batch_op` does, in three passes over its operations: prefetch
//! every bucket; scan every bucket for the key's tag and prefetch the item it points at; then do
//! the work, when both lines have had a whole pass to arrive. Unlike MICA's, the result is
//! exactly that of running the operations one by one in order: once an insert of the batch has
//! run (it changed one slot of one bucket, which a later operation may have scanned before it),
//! the third pass scans again the buckets that may have taken an insert (one bit per bucket
//! number mod 64); liveness is checked against the head as it is at the operation's turn, and a
//! GET copies its value out then. The key is already a hash: bucket and tag are bit fields of it,
//! never hashed again.

pub mod bench;
mod config;
mod index;
mod log;
mod zipf;

pub use config::{Stats, StoreConfig};
pub use zipf::Zipf;

use std::mem::MaybeUninit;

use crate::error::{Error, Result};
use crate::mem::{prefetch_ptr, HugeBuffer};
use index::{is_hit, scan, Index, ProbeWord};
use log::{update_in_place, Geometry, Log};

/// MICA's GET opcode.
pub const OP_GET: u8 = 111;
/// MICA's PUT opcode (update or insert).
pub const OP_PUT: u8 = 112;
/// Response: the PUT was applied.
pub const RESP_PUT_SUCCESS: u8 = 113;
/// Response: the GET found its key.
pub const RESP_GET_SUCCESS: u8 = 114;
/// Response: the GET missed.
pub const RESP_GET_FAIL: u8 = 115;
/// Largest value: what a 64-byte op leaves after the 16-byte key, opcode and length.
pub const MAX_VALUE: usize = 64 - 16 - 2;
/// Most operations in one batch (MICA_MAX_BATCH_SIZE).
pub const MAX_BATCH: usize = 32;

/// Slots per bucket.
const SLOTS: usize = 8;
/// Bits of a slot's log offset (MICA_LOG_BITS).
const LOG_BITS: u32 = 40;
const OFFSET_MASK: u64 = (1 << LOG_BITS) - 1;
/// A slot: `IN_USE | tag << LOG_BITS | offset`; bits 56..63 other than `IN_USE` stay zero, so
/// "in use with this tag" is one compare of `slot ^ (IN_USE | tag << LOG_BITS)` with 2^40.
const IN_USE: u64 = 1 << 63;
/// Bytes of an item before its value: the key (16) and the value's length (a word).
const HEADER: usize = 24;
/// Bytes an item may span from its start: header and the largest value rounded up to words. No
/// item starts within `MAX_ITEM` bytes of the log's physical end, so this window is always in
/// the log; an insert writes all of it (key, length and the op's whole value field at once).
const MAX_ITEM: usize = HEADER + MAX_VALUE.next_multiple_of(8);

/// A 16-byte key in MICA's layout: the high 64 bits hold the bucket number (low 32), a server
/// number (next 16) and the tag (top 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Key(pub u128);

impl Key {
    /// Key `i` of a run: the 128-bit xxh3 hash of `i` (the original uses CityHash128 of the
    /// 4-byte integer; any well-mixed 128-bit hash gives the same distribution). The store never
    /// hashes: bucket, tag and server are bit fields of the key, as in MICA.
    pub fn of(i: u64) -> Key {
        Key(xxhash_rust::xxh3::xxh3_128(&i.to_le_bytes()))
    }
    /// MICA's 16-bit server field: which partition (HERD worker) owns the key.
    pub fn server(self) -> u16 {
        (self.0 >> 96) as u16
    }
    #[inline(always)]
    fn bucket(self) -> u32 {
        (self.0 >> 64) as u32
    }
    #[inline(always)]
    fn tag(self) -> u64 {
        (self.0 >> 112) as u64
    }
    fn lo(self) -> u64 {
        self.0 as u64
    }
    /// The slot bits that say "in use, with this key's tag".
    #[inline(always)]
    fn want(self) -> u64 {
        IN_USE | self.tag() << LOG_BITS
    }
}

/// One operation of a batch (a HERD request's MICA part): 64 bytes, as MICA's `mica_op`.
#[derive(Debug, Clone, Copy)]
pub struct Op {
    /// The key.
    pub key: Key,
    /// [`OP_GET`] or [`OP_PUT`].
    pub opcode: u8,
    /// PUT: value bytes (1..=[`MAX_VALUE`]).
    pub val_len: u8,
    /// PUT: the value (bytes past `val_len` are ignored).
    pub value: [u8; MAX_VALUE],
}

/// What an operation returned.
#[derive(Debug, Clone, Copy)]
pub struct Resp {
    /// [`RESP_GET_SUCCESS`], [`RESP_GET_FAIL`] or [`RESP_PUT_SUCCESS`].
    pub kind: u8,
    /// GET hit: value bytes (0 otherwise).
    pub len: u8,
    /// GET hit: the value in `value[..len]`, copied out when the GET ran, so a later PUT in the
    /// same batch cannot change it (bytes past `len` are unspecified).
    pub value: [u8; MAX_VALUE],
}

impl Default for Resp {
    fn default() -> Self {
        Resp {
            kind: RESP_GET_FAIL,
            len: 0,
            value: [0; MAX_VALUE],
        }
    }
}

/// One operation of a batch, given its probe word as it stands now; true if it inserted (moved
/// the head, and maybe a slot). A PUT first tries the update in place (the common case: the
/// key's live item has the op's length, which an insert has checked) and checks the length only
/// on its way to an insert.
#[inline(always)]
fn run_one(
    op: &Op,
    probe: ProbeWord,
    r: &mut Resp,
    index: &mut Index<'_>,
    log: &mut Log<'_>,
    stats: &mut Stats,
) -> bool {
    let key = op.key;
    let item = log.find(probe, key);
    if op.opcode == OP_GET {
        stats.gets += 1;
        if let Some(w) = item {
            r.kind = RESP_GET_SUCCESS;
            r.len = w[16];
            r.value.copy_from_slice(&w[HEADER..HEADER + MAX_VALUE]);
        } else {
            stats.get_misses += 1;
            r.kind = RESP_GET_FAIL;
            r.len = 0;
        }
        return false;
    }
    r.len = 0;
    if op.opcode != OP_PUT {
        r.kind = RESP_GET_FAIL;
        return false;
    }
    if update_in_place(item, usize::from(op.val_len), &op.value) {
        stats.puts += 1;
        r.kind = RESP_PUT_SUCCESS;
        return false;
    }
    if !(1..=MAX_VALUE as u8).contains(&op.val_len) {
        r.kind = RESP_GET_FAIL;
        return false;
    }
    stats.puts += 1;
    r.kind = RESP_PUT_SUCCESS;
    log.insert(
        index.bucket_mut(key),
        key,
        usize::from(op.val_len),
        &op.value,
        stats,
    );
    true
}

/// The store: index and log.
pub struct Store {
    index: HugeBuffer,
    bucket_mask: u64,
    log: HugeBuffer,
    geometry: Geometry,
    /// What happened so far.
    pub stats: Stats,
}

impl Store {
    /// An empty store.
    pub fn new(cfg: StoreConfig) -> Result<Store> {
        cfg.check()?;
        let mut index = HugeBuffer::new(cfg.buckets * SLOTS * 8, cfg.place)?;
        index.words_mut().fill(0);
        let cap = cfg.log_bytes as u64;
        Ok(Store {
            index,
            bucket_mask: cfg.buckets as u64 - 1,
            log: HugeBuffer::new(cfg.log_bytes, cfg.place)?,
            geometry: Geometry {
                cap,
                mask: cap - 1,
                live_span: cap - MAX_ITEM as u64,
                head: 0,
            },
            stats: Stats::default(),
        })
    }

    /// GET: copies `key`'s value into `out` and returns its length, or `None` on a miss.
    pub fn get(&mut self, key: Key, out: &mut [u8; MAX_VALUE]) -> Option<usize> {
        self.stats.gets += 1;
        let index = Index::of(&mut self.index, self.bucket_mask);
        let mut log = Log::of(&mut self.log, self.geometry);
        let found = log.find(scan(index.bucket(key), key.want()), key).map(|w| {
            out.copy_from_slice(&w[HEADER..HEADER + MAX_VALUE]);
            usize::from(w[16])
        });
        if found.is_none() {
            self.stats.get_misses += 1;
        }
        found
    }

    /// PUT: updates `key`'s value in place when it is in the store with the same length, else
    /// appends a new item and points the index at it.
    pub fn put(&mut self, key: Key, value: &[u8]) -> Result<()> {
        if value.is_empty() || value.len() > MAX_VALUE {
            return Err(Error::config(format!(
                "a value is 1 to {MAX_VALUE} bytes, not {}",
                value.len()
            )));
        }
        let mut v = [0u8; MAX_VALUE];
        v[..value.len()].copy_from_slice(value);
        let mut stats = self.stats;
        stats.puts += 1;
        let mut index = Index::of(&mut self.index, self.bucket_mask);
        let mut log = Log::of(&mut self.log, self.geometry);
        let bucket = index.bucket_mut(key);
        let probe = scan(bucket, key.want());
        if !update_in_place(log.find(probe, key), value.len(), &v) {
            log.insert(bucket, key, value.len(), &v, &mut stats);
        }
        self.geometry = log.g;
        self.stats = stats;
        Ok(())
    }

    /// Runs a batch (`resps[i]` answers `ops[i]`) with the result of running its operations one
    /// by one in order, as MICA runs one: every bucket is prefetched first, then every item its
    /// bucket points at, then the operations run on cache-resident lines. A PUT with a bad length
    /// or an unknown opcode is answered with [`RESP_GET_FAIL`] and changes nothing.
    pub fn batch(&mut self, ops: &[Op], resps: &mut [Resp]) {
        let n = ops.len().min(resps.len());
        for (ops, resps) in ops[..n]
            .chunks(MAX_BATCH)
            .zip(resps[..n].chunks_mut(MAX_BATCH))
        {
            self.batch_upto_max(ops, resps);
        }
    }

    #[inline(always)]
    fn batch_upto_max(&mut self, ops: &[Op], resps: &mut [Resp]) {
        let n = ops.len().min(resps.len()).min(MAX_BATCH);
        let (ops, resps) = (&ops[..n], &mut resps[..n]);
        // Written for each of the first `n` ops by the scan below, read only for those.
        let mut probes = [MaybeUninit::<ProbeWord>::uninit(); MAX_BATCH];
        // A copy, so that the counters live in registers or the stack frame in the loops.
        let mut stats = self.stats;
        let (mut index, mut log) = (
            Index::of(&mut self.index, self.bucket_mask),
            Log::of(&mut self.log, self.geometry),
        );
        // The buckets, all at once.
        for op in ops {
            prefetch_ptr(index.bucket_ptr(op.key));
        }
        // The tags, and the items they point at.
        for (op, p) in ops.iter().zip(&mut probes) {
            let probe = p.write(scan(index.bucket(op.key), op.key.want()));
            if is_hit(*probe) {
                log.prefetch(*probe);
            }
        }
        // SAFETY: the loop above wrote probes[..n] (`ops` has `n` items, `probes` more).
        let probes = unsafe { &*(&raw const probes[..n] as *const [ProbeWord]) };
        // The work, in order. Until the batch's first insert nothing has changed the index since
        // the scans, and their probes stand. After it, an op whose bucket may have taken an
        // insert scans again (`dirty`: one bit per bucket number mod 64, set by each insert).
        let dirty_mask = index.mask & 63;
        let dirty_bit = |key: Key| 1u64 << (u64::from(key.bucket()) & dirty_mask);
        let mut work = ops.iter().zip(probes).zip(resps.iter_mut());
        let mut dirty = 0;
        for ((op, &probe), r) in work.by_ref() {
            if run_one(op, probe, r, &mut index, &mut log, &mut stats) {
                dirty = dirty_bit(op.key);
                break;
            }
        }
        for ((op, &probe), r) in work {
            let bit = dirty_bit(op.key);
            let probe = if dirty & bit == 0 {
                probe
            } else {
                scan(index.bucket(op.key), op.key.want())
            };
            if run_one(op, probe, r, &mut index, &mut log, &mut stats) {
                dirty |= bit;
            }
        }
        self.geometry = log.g;
        self.stats = stats;
    }

    /// Inserts keys `Key::of(0 .. n)`, each with `val_len` bytes of [`value_of`]`(key, 0)`;
    /// returns the index eviction fraction.
    pub fn populate(&mut self, n: u64, val_len: usize) -> Result<f64> {
        self.populate_where(n, val_len, |_| true)
    }

    /// [`populate`](Self::populate) with only the keys `mine` accepts (a worker's partition).
    pub fn populate_where(
        &mut self,
        n: u64,
        val_len: usize,
        mine: impl Fn(Key) -> bool,
    ) -> Result<f64> {
        let before = self.stats;
        let mut value = [0u8; MAX_VALUE];
        let len = val_len.min(MAX_VALUE);
        for i in 0..n {
            let k = Key::of(i);
            if mine(k) {
                value_of(k, 0, &mut value[..len]);
                self.put(k, &value[..len])?;
            }
        }
        let puts = self.stats.puts - before.puts;
        Ok((self.stats.index_evictions - before.index_evictions) as f64 / puts.max(1) as f64)
    }
}

/// The value version `version` of `key` holds in a run (version 0: what populate inserts), so
/// that a client can check a GET against the last PUT it made without keeping the bytes.
#[inline]
pub fn value_of(key: Key, version: u32, out: &mut [u8]) {
    let mut x = key.lo() ^ (u64::from(version) << 32 | u64::from(version));
    for chunk in out.chunks_mut(8) {
        // Every byte depends on key and version.
        let z = splitmix64(x);
        x = x.wrapping_add(SPLITMIX_GAMMA);
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
}

/// splitmix64's step added to its state between draws.
pub const SPLITMIX_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// splitmix64: the output for state `x` (`x + γ`, finalized); the next state is `x + γ`. A
/// cheap, well-mixed 64-bit hash, used for values, the clients' draws and the sequencers'
/// multiset hash.
#[inline(always)]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(SPLITMIX_GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests;
