//! A store's sizes, the checks that refuse sizes it cannot have, and its counters.

use super::{LOG_BITS, SLOTS};
use crate::error::{Error, Result};
use crate::mem::Placement;

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
