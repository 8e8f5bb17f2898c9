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
mod zipf;

pub use zipf::Zipf;

use crate::error::{Error, Result};
use std::mem::MaybeUninit;

use crate::mem::{prefetch_ptr, HugeBuffer, Placement};

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

    /// Bytes the store allocates (index and log).
    pub fn bytes(&self) -> u64 {
        (self.buckets * SLOTS * 8) as u64 + self.log_bytes as u64
    }

    /// Refuses `stores` stores of this size plus `side` bytes of other memory when `meminfo`
    /// (/proc/meminfo's text) says the machine cannot hold them: the stores from free hugepages
    /// when they may use them and there are enough, else from MemAvailable, `side` from
    /// MemAvailable. `flags` names what sizes the run, for the refusal. Checked before anything
    /// is allocated: past it the kernel would kill the process with no word from us.
    pub fn check_memory(&self, stores: u64, side: u64, meminfo: &str, flags: &str) -> Result<()> {
        let field = |name: &str| {
            meminfo
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        };
        let Some(avail_kib) = field("MemAvailable:") else {
            return Ok(()); // not Linux's meminfo: nothing to check against
        };
        let store = stores * self.bytes();
        let page = crate::mem::HUGEPAGE_SIZE as u64;
        let huge_free = field("HugePages_Free:").unwrap_or(0) * page;
        // A store's two buffers are each rounded up to whole hugepages.
        let store_huge = stores
            * ((self.buckets as u64 * 64).next_multiple_of(page)
                + (self.log_bytes as u64).next_multiple_of(page));
        let huge = self.place.huge;
        let from_huge = huge != crate::mem::HugePolicy::Off && store_huge <= huge_free;
        if huge == crate::mem::HugePolicy::Require && !from_huge {
            return Err(Error::config(format!(
                "{} MiB of stores ({flags}) need more hugepages than the {} MiB free: reserve \
                 them (/proc/sys/vm/nr_hugepages) or use --hugepages auto",
                store_huge >> 20,
                huge_free >> 20
            )));
        }
        let need = side + if from_huge { 0 } else { store };
        let avail = avail_kib << 10;
        if need > avail {
            return Err(Error::config(format!(
                "this run needs {} MiB ({} MiB of stores{}, {} MiB besides) and the machine has {} \
                 MiB available: lower {flags}",
                need >> 20,
                store >> 20,
                if from_huge { " on hugepages, not counted" } else { "" },
                side >> 20,
                avail >> 20
            )));
        }
        Ok(())
    }
}

/// A probe word: what a scan of a key's bucket found, in one `u64`: the slot word that holds the
/// key's tag (bit 63 set), or [`MISS`]. Buckets fill from slot 0 and a slot is never emptied, so
/// the slots in use are a prefix and a scan stops at the tag or at the first free slot. Which
/// slot it was is not kept: only an insert needs it, and it looks again ([`Log::insert`]).
type ProbeWord = u64;
const MISS: ProbeWord = 0;

#[inline(always)]
fn is_hit(p: ProbeWord) -> bool {
    (p as i64) < 0
}

#[inline(always)]
fn scan(bucket: &[u64; SLOTS], want: u64) -> ProbeWord {
    for &s in bucket {
        // `want` has bit 63 set: `t` is below 2^40 at the tag, at least 2^63 at a free slot and
        // in between at another key's slot, so one compare tells "stop here".
        let t = s ^ want;
        if t.wrapping_sub(1 << LOG_BITS) >= (1 << 63) - (1 << LOG_BITS) {
            return if t < 1 << LOG_BITS { s } else { MISS };
        }
    }
    MISS
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
    // An item's length byte is 1..=MAX_VALUE (its insert checked it): equal means valid.
    if let Some(w) = item.filter(|w| w[16] == op.val_len) {
        write_value(w, &op.value, usize::from(op.val_len));
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

/// The 16 bytes at the start of an item window, as a key.
#[inline(always)]
fn key_at(w: &[u8; MAX_ITEM]) -> u128 {
    let mut k = [0u8; 16];
    k.copy_from_slice(&w[..16]);
    u128::from_le_bytes(k)
}

/// Copies a value of `len` bytes (1..=MAX_VALUE) into an item's value field, whole words (the
/// item's padding takes the rest of the last one) and never past the item: one fixed-size copy
/// per length class, picked by one jump on the class.
#[inline(always)]
fn write_value(dst: &mut [u8; MAX_ITEM], src: &[u8; MAX_VALUE], len: usize) {
    let d = &mut dst[HEADER..];
    match len.wrapping_sub(1) >> 3 {
        0 => d[..8].copy_from_slice(&src[..8]),
        1 => d[..16].copy_from_slice(&src[..16]),
        2 => d[..24].copy_from_slice(&src[..24]),
        3 => d[..32].copy_from_slice(&src[..32]),
        4 => d[..40].copy_from_slice(&src[..40]),
        _ => d[..MAX_VALUE].copy_from_slice(src),
    }
}

/// The index as one batch works on it: its buckets and the mask that picks one.
struct Index<'a> {
    buckets: &'a mut [[u64; SLOTS]],
    /// Below `buckets.len()` ([`Index::of`] checks), so every `bucket & mask` is in bounds.
    mask: u64,
}

impl<'a> Index<'a> {
    /// The index in `buffer`, with buckets `bucket & mask`.
    #[inline(always)]
    fn of(buffer: &'a mut HugeBuffer, mask: u64) -> Index<'a> {
        let buckets = buffer.words_mut().as_chunks_mut::<SLOTS>().0;
        // Once a batch: what makes the unchecked accesses below sound.
        assert!(mask < buckets.len() as u64, "index mask past the buckets");
        Index { buckets, mask }
    }

    #[inline(always)]
    fn slot_index(&self, key: Key) -> usize {
        let b = (u64::from(key.bucket()) & self.mask) as usize;
        debug_assert!(b < self.buckets.len());
        b
    }

    /// Where `key`'s bucket is, for a prefetch.
    #[inline(always)]
    fn bucket_ptr(&self, key: Key) -> *const [u64; SLOTS] {
        self.buckets.as_ptr().wrapping_add(self.slot_index(key))
    }

    #[inline(always)]
    fn bucket(&self, key: Key) -> &[u64; SLOTS] {
        let b = self.slot_index(key);
        // SAFETY: `b <= mask < buckets.len()` (the field's invariant). The check this saves is
        // on every operation's scan.
        unsafe { self.buckets.get_unchecked(b) }
    }

    #[inline(always)]
    fn bucket_mut(&mut self, key: Key) -> &mut [u64; SLOTS] {
        let b = self.slot_index(key);
        // SAFETY: as in `bucket`.
        unsafe { self.buckets.get_unchecked_mut(b) }
    }
}

/// The circular log's geometry and head (in a virtual byte space that only grows).
#[derive(Debug, Clone, Copy)]
struct Geometry {
    cap: u64,
    mask: u64,
    /// Items at most this far behind the head are whole (`cap - MAX_ITEM`: an insert writes a
    /// whole `MAX_ITEM` window, so it may reach that far past its own end).
    live_span: u64,
    head: u64,
}

/// The log as one operation or batch works on it: its bytes and a copy of its geometry (written
/// back when the work is done), so that the hot loop keeps them in registers.
struct Log<'a> {
    bytes: &'a mut [u8],
    g: Geometry,
}

impl<'a> Log<'a> {
    /// The log in `buffer`, with geometry `g` (written back by the caller when the work is done).
    #[inline(always)]
    fn of(buffer: &'a mut HugeBuffer, g: Geometry) -> Log<'a> {
        let bytes = buffer.bytes_mut();
        // Once a batch: with the index's offsets (see `window`), what makes `window` sound.
        assert!(
            bytes.len() as u64 >= g.cap,
            "log buffer shorter than the log"
        );
        Log { bytes, g }
    }

    /// The `MAX_ITEM` bytes at `offset` in the log, where the index may point.
    #[inline(always)]
    fn window(&mut self, offset: u64) -> &mut [u8; MAX_ITEM] {
        let o = (offset & self.g.mask) as usize;
        debug_assert!(o + MAX_ITEM <= self.bytes.len());
        // SAFETY: every offset an index slot holds is 0 (a free slot) or the start of an item
        // that `insert` wrote, and no item starts within `MAX_ITEM` bytes of the log's end
        // (`insert` wraps first), so `o + MAX_ITEM <= cap` (`cap = mask + 1`, at least 4 KiB);
        // `bytes` holds at least `cap` bytes (`Log::of` checks). The check this saves is on every
        // hit.
        unsafe { &mut *self.bytes.as_mut_ptr().add(o).cast::<[u8; MAX_ITEM]>() }
    }

    /// Prefetches the item a hit probe word points at (a small item may span two lines).
    #[inline(always)]
    fn prefetch(&self, probe: ProbeWord) {
        let item = self
            .bytes
            .as_ptr()
            .wrapping_add((probe & self.g.mask) as usize);
        prefetch_ptr(item);
        prefetch_ptr(item.wrapping_add(64));
    }

    /// The `MAX_ITEM` window of the item a hit probe word points at, if the head has not passed
    /// it and it is `key`'s.
    #[inline(always)]
    fn find(&mut self, probe: ProbeWord, key: Key) -> Option<&mut [u8; MAX_ITEM]> {
        if !is_hit(probe) {
            return None;
        }
        let offset = probe & OFFSET_MASK;
        if self.g.head.wrapping_sub(offset) & OFFSET_MASK > self.g.live_span {
            return None;
        }
        let w = self.window(offset);
        (key_at(w) == key.0).then_some(w)
    }

    /// Appends `key`'s item at the head and points `key`'s slot in `bucket` at it: the one with
    /// its tag (an older item of this key, or a colliding key's, which is lost), else the first
    /// free one, else slot `tag mod 8` of the full bucket (an eviction).
    #[inline(always)]
    fn insert(
        &mut self,
        bucket: &mut [u64; SLOTS],
        key: Key,
        len: usize,
        value: &[u8; MAX_VALUE],
        stats: &mut Stats,
    ) {
        let g = &mut self.g;
        // Never let an item window run past the physical end: wrap to the next lap instead.
        if g.cap - (g.head & g.mask) < MAX_ITEM as u64 {
            g.head = (g.head + g.cap) & !g.mask;
            stats.log_wraps += 1;
        }
        let offset = g.head;
        g.head += (HEADER + len.next_multiple_of(8)) as u64;
        // The wrap above is what makes `window`'s bound hold for the offset the slot gets.
        let w = self.window(offset);
        w[..16].copy_from_slice(&key.0.to_le_bytes());
        w[16..HEADER].copy_from_slice(&(len as u64).to_le_bytes());
        w[HEADER..HEADER + MAX_VALUE].copy_from_slice(value);
        let want = key.want();
        let j = match bucket
            .iter()
            .position(|&s| (s ^ want) < 1 << LOG_BITS || s & IN_USE == 0)
        {
            Some(j) => j,
            None => {
                stats.index_evictions += 1;
                key.tag() as usize % SLOTS
            }
        };
        bucket[j] = want | (offset & OFFSET_MASK);
    }

    /// PUT `value[..len]` (1..=MAX_VALUE bytes) in place, if `key`'s live item has that length.
    #[inline(always)]
    fn update(&mut self, probe: ProbeWord, key: Key, len: usize, value: &[u8; MAX_VALUE]) -> bool {
        match self.find(probe, key) {
            Some(w) if usize::from(w[16]) == len => {
                write_value(w, value, len);
                true
            }
            _ => false,
        }
    }
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
        if !log.update(probe, key, value.len(), &v) {
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
