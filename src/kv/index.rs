//! The index: buckets of 8 slots, each `IN_USE | tag << LOG_BITS | log offset`, and the scan
//! that finds a key's tag in its bucket.

use super::{Key, LOG_BITS, SLOTS};
use crate::mem::HugeBuffer;

/// A probe word: what a scan of a key's bucket found, in one `u64`: the slot word that holds the
/// key's tag (bit 63 set), or [`MISS`]. Buckets fill from slot 0 and a slot is never emptied, so
/// the slots in use are a prefix and a scan stops at the tag or at the first free slot. Which
/// slot it was is not kept: only an insert needs it, and it looks again ([`Log::insert`]).
pub(super) type ProbeWord = u64;
pub(super) const MISS: ProbeWord = 0;

#[inline(always)]
pub(super) fn is_hit(p: ProbeWord) -> bool {
    (p as i64) < 0
}

/// True where a scan for `want` (a key's [`Key::want`]) stops: at the slot that holds the tag, or
/// at a free one. `want` has bit 63 set, so `slot ^ want` is below 2^40 at the tag, at least 2^63
/// at a free slot and in between at another key's slot: one compare tells.
#[inline(always)]
pub(super) fn stops_at(slot: u64, want: u64) -> bool {
    (slot ^ want).wrapping_sub(1 << LOG_BITS) >= (1 << 63) - (1 << LOG_BITS)
}

#[inline(always)]
pub(super) fn scan(bucket: &[u64; SLOTS], want: u64) -> ProbeWord {
    for &s in bucket {
        if stops_at(s, want) {
            return if (s ^ want) < 1 << LOG_BITS { s } else { MISS };
        }
    }
    MISS
}

/// The index as one batch works on it: its buckets and the mask that picks one.
pub(super) struct Index<'a> {
    pub(super) buckets: &'a mut [[u64; SLOTS]],
    /// Below `buckets.len()` ([`Index::of`] checks), so every `bucket & mask` is in bounds.
    pub(super) mask: u64,
}

impl<'a> Index<'a> {
    /// The index in `buffer`, with buckets `bucket & mask`.
    #[inline(always)]
    pub(super) fn of(buffer: &'a mut HugeBuffer, mask: u64) -> Index<'a> {
        let buckets = buffer.words_mut().as_chunks_mut::<SLOTS>().0;
        // Once a batch: what makes the unchecked accesses below sound.
        assert!(mask < buckets.len() as u64, "index mask past the buckets");
        Index { buckets, mask }
    }

    #[inline(always)]
    fn bucket_index(&self, key: Key) -> usize {
        let b = (u64::from(key.bucket()) & self.mask) as usize;
        debug_assert!(b < self.buckets.len());
        b
    }

    /// Where `key`'s bucket is, for a prefetch.
    #[inline(always)]
    pub(super) fn bucket_ptr(&self, key: Key) -> *const [u64; SLOTS] {
        self.buckets.as_ptr().wrapping_add(self.bucket_index(key))
    }

    #[inline(always)]
    pub(super) fn bucket(&self, key: Key) -> &[u64; SLOTS] {
        let b = self.bucket_index(key);
        // SAFETY: `b <= mask < buckets.len()` (the field's invariant). The check this saves is
        // on every operation's scan.
        unsafe { self.buckets.get_unchecked(b) }
    }

    #[inline(always)]
    pub(super) fn bucket_mut(&mut self, key: Key) -> &mut [u64; SLOTS] {
        let b = self.bucket_index(key);
        // SAFETY: as in `bucket`.
        unsafe { self.buckets.get_unchecked_mut(b) }
    }
}
