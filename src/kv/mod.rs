//! A MICA-style key-value store, the store behind HERD: a lossy hash index of 8-slot buckets
//! whose slots point into a circular log of items, both in hugepage-backed memory. One store per
//! worker thread, driven in batches. No RDMA here, so it is tested on the host.
//!
//! What the design may lose, and nothing else: a key whose index slot was taken over (its bucket
//! was full, or another key with the same bucket and 16-bit tag was inserted), or whose item the
//! circular log has written over. A GET then misses; it never returns another key's value, nor an
//! older value of its own key (every hit is checked against the key stored in the log, and a
//! slot whose item the log head has passed is ignored).

mod zipf;

pub use zipf::Zipf;

use crate::error::{Error, Result};
use crate::mem::{prefetch, HugeBuffer, Placement};

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
const IN_USE: u64 = 1 << 63;
/// Bytes of the largest item: key (16), length word (8), value rounded up to words.
const MAX_ITEM: u64 = 24 + MAX_VALUE.next_multiple_of(8) as u64;

/// A 16-byte key in MICA's layout: the high 64 bits hold the bucket number (low 32), a server
/// number (next 16) and the tag (top 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Key(pub u128);

impl Key {
    /// Key `i` of a run: the 128-bit xxh3 hash of `i` (the original uses CityHash128 of the
    /// 4-byte integer; any well-mixed 128-bit hash gives the same distribution).
    pub fn of(i: u64) -> Key {
        Key(xxhash_rust::xxh3::xxh3_128(&i.to_le_bytes()))
    }
    /// MICA's 16-bit server field: which partition (HERD worker) owns the key.
    pub fn server(self) -> u16 {
        (self.0 >> 96) as u16
    }
    fn bucket(self) -> u32 {
        (self.0 >> 64) as u32
    }
    fn tag(self) -> u64 {
        (self.0 >> 112) as u64
    }
    fn lo(self) -> u64 {
        self.0 as u64
    }
    fn hi(self) -> u64 {
        (self.0 >> 64) as u64
    }
}

/// One operation of a batch (a HERD request's MICA part).
#[derive(Debug, Clone, Copy)]
pub struct Op {
    /// The key.
    pub key: Key,
    /// [`OP_GET`] or [`OP_PUT`].
    pub opcode: u8,
    /// PUT: value bytes (1..=[`MAX_VALUE`]).
    pub val_len: u8,
    /// PUT: the value.
    pub value: [u8; MAX_VALUE],
}

/// What an operation returned.
#[derive(Debug, Clone, Copy)]
pub struct Resp {
    /// [`RESP_GET_SUCCESS`], [`RESP_GET_FAIL`] or [`RESP_PUT_SUCCESS`].
    pub kind: u8,
    /// GET hit: value bytes.
    pub len: u8,
    /// GET hit: the value, copied out when the GET ran (a later insert in the same batch may
    /// write over the log bytes it came from).
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

/// Sizes of a store.
#[derive(Debug, Clone, Copy)]
pub struct StoreConfig {
    /// Buckets of 8 slots (a power of two).
    pub buckets: usize,
    /// Bytes of the circular log (a power of two, at least 4 KiB, at most 2^40).
    pub log_bytes: usize,
    /// Where the index and log go.
    pub place: Placement,
}

/// Counters of a store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// GETs run.
    pub gets: u64,
    /// GETs that missed.
    pub get_misses: u64,
    /// PUTs run.
    pub puts: u64,
    /// PUTs that took a slot from another key (full bucket).
    pub index_evictions: u64,
    /// Times the log head wrapped to the start.
    pub log_wraps: u64,
}

/// The store: index and log, and the log's head in a virtual byte space that only grows.
pub struct Store {
    index: HugeBuffer,
    log: HugeBuffer,
    bucket_mask: u64,
    log_cap: u64,
    log_mask: u64,
    head: u64,
    /// What happened so far.
    pub stats: Stats,
}

impl StoreConfig {
    /// Refuses sizes the store cannot have (before anything is allocated).
    pub fn check(&self) -> Result<()> {
        if !self.buckets.is_power_of_two() || self.buckets > 1 << 28 {
            return Err(Error::config(format!(
                "buckets ({}) must be a power of two up to 2^28",
                self.buckets
            )));
        }
        if !self.log_bytes.is_power_of_two()
            || self.log_bytes < 4096
            || self.log_bytes as u64 > 1 << LOG_BITS
        {
            return Err(Error::config(format!(
                "the log ({} bytes) must be a power of two between 4 KiB and 2^{LOG_BITS} bytes",
                self.log_bytes
            )));
        }
        Ok(())
    }
}

impl Store {
    /// An empty store.
    pub fn new(cfg: StoreConfig) -> Result<Store> {
        cfg.check()?;
        let mut index = HugeBuffer::new(cfg.buckets * SLOTS * 8, cfg.place)?;
        index.words_mut().fill(0);
        let log = HugeBuffer::new(cfg.log_bytes, cfg.place)?;
        Ok(Store {
            index,
            log,
            bucket_mask: cfg.buckets as u64 - 1,
            log_cap: cfg.log_bytes as u64,
            log_mask: cfg.log_bytes as u64 - 1,
            head: 0,
            stats: Stats::default(),
        })
    }

    /// First slot (word index) of `key`'s bucket.
    #[inline(always)]
    fn bucket_of(&self, key: Key) -> usize {
        (u64::from(key.bucket()) & self.bucket_mask) as usize * SLOTS
    }

    /// Word index in the log of `key`'s live item, if the index has one.
    #[inline]
    fn find(&mut self, key: Key) -> Option<usize> {
        let b = self.bucket_of(key);
        let tag = key.tag();
        let (head, cap, mask) = (self.head, self.log_cap, self.log_mask);
        let index = self.index.words_mut();
        let slot = index[b..b + SLOTS]
            .iter()
            .find(|&&s| s & IN_USE != 0 && (s >> LOG_BITS) & 0xffff == tag)?;
        let offset = slot & OFFSET_MASK;
        // The log head has passed the item: its bytes may belong to newer items now.
        if head.wrapping_sub(offset) & OFFSET_MASK >= cap {
            return None;
        }
        let w = ((offset & mask) / 8) as usize;
        let log = self.log.words_mut();
        // Same tag is not same key: the log holds the key.
        (log[w] == key.lo() && log[w + 1] == key.hi()).then_some(w)
    }

    /// GET: copies `key`'s value into `out` and returns its length, or `None` on a miss.
    pub fn get(&mut self, key: Key, out: &mut [u8; MAX_VALUE]) -> Option<usize> {
        self.stats.gets += 1;
        let Some(w) = self.find(key) else {
            self.stats.get_misses += 1;
            return None;
        };
        let log = self.log.words_mut();
        let len = log[w + 2] as usize;
        for (i, chunk) in out[..len].chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&log[w + 3 + i].to_le_bytes()[..chunk.len()]);
        }
        Some(len)
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
        self.stats.puts += 1;
        if let Some(w) = self.find(key) {
            let log = self.log.words_mut();
            if log[w + 2] as usize == value.len() {
                write_value(&mut log[w + 3..], value);
                return Ok(());
            }
        }
        self.insert(key, value);
        Ok(())
    }

    /// Appends `key`'s item at the log head and takes an index slot for it: the slot of the
    /// same tag (this key's older item, or a colliding key, which is lost), else a free one,
    /// else slot `tag mod 8` of the full bucket (an eviction).
    fn insert(&mut self, key: Key, value: &[u8]) {
        // Never let an item run past the physical end: wrap to the next lap of the log instead.
        if self.log_cap - (self.head & self.log_mask) < MAX_ITEM {
            self.head = (self.head + self.log_cap) & !self.log_mask;
            self.stats.log_wraps += 1;
        }
        let offset = self.head;
        let w = ((offset & self.log_mask) / 8) as usize;
        let log = self.log.words_mut();
        log[w] = key.lo();
        log[w + 1] = key.hi();
        log[w + 2] = value.len() as u64;
        write_value(&mut log[w + 3..], value);
        self.head += 24 + value.len().next_multiple_of(8) as u64;

        let b = self.bucket_of(key);
        let tag = key.tag();
        let index = self.index.words_mut();
        let slots = &mut index[b..b + SLOTS];
        let i = slots
            .iter()
            .position(|&s| s & IN_USE != 0 && (s >> LOG_BITS) & 0xffff == tag)
            .or_else(|| slots.iter().position(|&s| s & IN_USE == 0))
            .unwrap_or_else(|| {
                self.stats.index_evictions += 1;
                (tag % SLOTS as u64) as usize
            });
        slots[i] = IN_USE | (tag << LOG_BITS) | (offset & OFFSET_MASK);
    }

    /// Runs a batch in order (`resps[i]` answers `ops[i]`), prefetching every bucket first and
    /// then every item the index points at, as MICA does. A PUT with a bad length is answered
    /// with [`RESP_GET_FAIL`] and changes nothing.
    pub fn batch(&mut self, ops: &[Op], resps: &mut [Resp]) {
        let n = ops.len().min(resps.len());
        for op in &ops[..n] {
            let b = self.bucket_of(op.key);
            prefetch(&self.index.words_mut()[b]);
        }
        for (op, r) in ops[..n].iter().zip(&mut resps[..n]) {
            match op.opcode {
                OP_GET => match self.get(op.key, &mut r.value) {
                    Some(len) => {
                        r.kind = RESP_GET_SUCCESS;
                        r.len = len as u8;
                    }
                    None => {
                        r.kind = RESP_GET_FAIL;
                        r.len = 0;
                    }
                },
                _ => {
                    let len = (op.val_len as usize).min(MAX_VALUE);
                    r.kind = match self.put(op.key, &op.value[..len]) {
                        Ok(()) if op.opcode == OP_PUT => RESP_PUT_SUCCESS,
                        _ => RESP_GET_FAIL,
                    };
                    r.len = 0;
                }
            }
        }
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

/// Packs `value` into words, little-endian.
fn write_value(words: &mut [u64], value: &[u8]) {
    for (i, chunk) in value.chunks(8).enumerate() {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        words[i] = u64::from_le_bytes(b);
    }
}

#[cfg(test)]
mod tests;
