//! The circular log of items (key, length, value) that the index points into.

use super::index::{is_hit, stops_at, ProbeWord};
use super::{Key, Stats, HEADER, MAX_ITEM, MAX_VALUE, OFFSET_MASK, SLOTS};
use crate::mem::{prefetch_ptr, HugeBuffer};

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
pub(super) fn write_value(dst: &mut [u8; MAX_ITEM], src: &[u8; MAX_VALUE], len: usize) {
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

/// PUT `value[..len]` (1..=MAX_VALUE bytes) into `item` (what [`Log::find`] returned for the
/// key) in place, if it has that length; false if there is no item or its length differs (the
/// PUT is then an insert). An item's length byte was checked by its insert, so equal means valid.
#[inline(always)]
pub(super) fn update_in_place(
    item: Option<&mut [u8; MAX_ITEM]>,
    len: usize,
    value: &[u8; MAX_VALUE],
) -> bool {
    match item {
        Some(w) if usize::from(w[16]) == len => {
            write_value(w, value, len);
            true
        }
        _ => false,
    }
}

/// The circular log's geometry and head (in a virtual byte space that only grows).
#[derive(Debug, Clone, Copy)]
pub(super) struct Geometry {
    pub(super) cap: u64,
    pub(super) mask: u64,
    /// Items at most this far behind the head are whole (`cap - MAX_ITEM`: an insert writes a
    /// whole `MAX_ITEM` window, so it may reach that far past its own end).
    pub(super) live_span: u64,
    pub(super) head: u64,
}

/// The log as one operation or batch works on it: its bytes and a copy of its geometry (written
/// back when the work is done), so that the hot loop keeps them in registers.
pub(super) struct Log<'a> {
    pub(super) bytes: &'a mut [u8],
    pub(super) g: Geometry,
}

impl<'a> Log<'a> {
    /// The log in `buffer`, with geometry `g` (written back by the caller when the work is done).
    #[inline(always)]
    pub(super) fn of(buffer: &'a mut HugeBuffer, g: Geometry) -> Log<'a> {
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
    pub(super) fn prefetch(&self, probe: ProbeWord) {
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
    pub(super) fn find(&mut self, probe: ProbeWord, key: Key) -> Option<&mut [u8; MAX_ITEM]> {
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
    pub(super) fn insert(
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
        let j = match bucket.iter().position(|&s| stops_at(s, want)) {
            Some(j) => j,
            None => {
                stats.index_evictions += 1;
                key.tag() as usize % SLOTS
            }
        };
        bucket[j] = want | (offset & OFFSET_MASK);
    }
}
