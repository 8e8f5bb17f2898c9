//! A fixed array reached only through raw pointers: the home of WR and SGE chains.
//!
//! The C side reads these arrays through pointers stored inside them (`next`, `sg_list`). If Rust
//! code later wrote through a fresh `&mut` to the array, the aliasing rules would invalidate those
//! stored pointers. So the array is leaked from its `Box` once, every pointer (the stored ones
//! included) derives from that one base pointer, and no reference to the whole array is made again
//! until `Drop` turns it back into a `Box`.

use std::ptr::NonNull;

pub(crate) struct RawArray<T> {
    base: NonNull<T>,
    len: usize,
}

impl<T> RawArray<T> {
    /// Takes ownership of `items` (at least one).
    pub(crate) fn new(items: Vec<T>) -> Self {
        assert!(!items.is_empty(), "a WR array holds at least one entry");
        let len = items.len();
        let raw: *mut [T] = Box::into_raw(items.into_boxed_slice());
        // SAFETY: Box::into_raw never returns null.
        let base = unsafe { NonNull::new_unchecked(raw.cast::<T>()) };
        RawArray { base, len }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Pointer to entry `i`, bounds-checked.
    #[inline(always)]
    pub(crate) fn at(&self, i: usize) -> *mut T {
        assert!(i < self.len, "index {i} out of a {}-entry batch", self.len);
        // SAFETY: `i < len`, so the offset stays inside the allocation.
        unsafe { self.base.as_ptr().add(i) }
    }

    /// Pointer to entry `i` without the check.
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    pub(crate) unsafe fn at_unchecked(&self, i: usize) -> *mut T {
        debug_assert!(i < self.len);
        // SAFETY: the caller keeps `i` in bounds.
        unsafe { self.base.as_ptr().add(i) }
    }

    /// Pointer to the first entry (the head of a chain).
    #[inline(always)]
    pub(crate) fn head(&self) -> *mut T {
        self.base.as_ptr()
    }
}

impl<T> Drop for RawArray<T> {
    fn drop(&mut self) {
        let slice = std::ptr::slice_from_raw_parts_mut(self.base.as_ptr(), self.len);
        // SAFETY: `base`/`len` came from Box::into_raw of a boxed slice of exactly `len` entries,
        // and this is the only place that frees it.
        drop(unsafe { Box::from_raw(slice) });
    }
}
