//! What a QP keeps alive for its posted WRs, and the posting calls the batches make.

use std::sync::Arc;

use super::QueuePair;
use crate::error::{Error, Result};
use crate::sys;
use crate::verbs::{AddressHandle, MemoryRegion};

impl QueuePair {
    /// This QP's serial number (unique in the process, never reused): what receive batches
    /// compare with.
    #[inline(always)]
    pub(crate) fn serial(&self) -> u64 {
        self.serial
    }

    /// What send batches compare with: the serial, or 0 while an `ibv_wr_*` batch is open.
    #[inline(always)]
    pub(crate) fn send_key(&self) -> u64 {
        self.send_key
    }

    /// Why a send batch was refused, for its error message.
    #[cold]
    pub(crate) fn refusal(&self) -> Error {
        if self.send_key == 0 {
            Error::config(
                "an ibv_wr_* batch is open on this QP (a WrGuard was leaked): the next wr_start() aborts it",
            )
        } else {
            Error::config("this batch was built for another QP")
        }
    }

    /// Keeps `mr` alive until this QP is destroyed: WRs about to be posted reference it. Refuses
    /// a region of another PD (its lkey would not work here).
    pub(crate) fn keep_alive_mr(&mut self, mr: &Arc<MemoryRegion>) -> Result<()> {
        if !Arc::ptr_eq(mr.pd(), &self.pd) {
            return Err(Error::config(
                "the memory region belongs to another protection domain than the QP",
            ));
        }
        if !self.kept_mrs.iter().any(|m| Arc::ptr_eq(m, mr)) {
            self.kept_mrs.push(Arc::clone(mr));
        }
        Ok(())
    }

    /// Keeps `ah` alive until this QP is destroyed. Refuses an AH of another PD (the provider
    /// would read it as its own).
    pub(crate) fn keep_alive_ah(&mut self, ah: &Arc<AddressHandle>) -> Result<()> {
        if !Arc::ptr_eq(ah.pd(), &self.pd) {
            return Err(Error::config(
                "the address handle belongs to another protection domain than the QP",
            ));
        }
        if !self.kept_ahs.iter().any(|a| Arc::ptr_eq(a, ah)) {
            self.kept_ahs.push(Arc::clone(ah));
        }
        Ok(())
    }

    /// Posts a linked chain of send WRs with one `ibv_post_send` (one doorbell).
    ///
    /// # Safety
    /// `wr` heads a valid, NULL-terminated chain of `ibv_send_wr`s whose SGEs all lie in regions
    /// passed to [`keep_alive_mr`](Self::keep_alive_mr) of this QP and whose UD AHs were passed to
    /// [`keep_alive_ah`](Self::keep_alive_ah); the chain is only read during the call.
    #[inline(always)]
    pub(crate) unsafe fn post_send_chain(&mut self, wr: *mut sys::ibv_send_wr) -> Result<()> {
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: the QP is alive and driven only through this `&mut`; the caller vouches for the
        // chain and for everything it references.
        let rc = unsafe { sys::shim_post_send(self.raw.as_ptr(), wr, &mut bad) };
        if rc != 0 {
            return Err(post_failed("ibv_post_send", rc));
        }
        Ok(())
    }

    /// Posts a linked chain of receive WRs with one `ibv_post_recv`.
    ///
    /// # Safety
    /// As [`post_send_chain`](Self::post_send_chain), for `ibv_recv_wr`s.
    #[inline(always)]
    pub(crate) unsafe fn post_recv_chain(&mut self, wr: *mut sys::ibv_recv_wr) -> Result<()> {
        let mut bad: *mut sys::ibv_recv_wr = std::ptr::null_mut();
        // SAFETY: as in post_send_chain.
        let rc = unsafe { sys::shim_post_recv(self.raw.as_ptr(), wr, &mut bad) };
        if rc != 0 {
            return Err(post_failed("ibv_post_recv", rc));
        }
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn post_failed(verb: &'static str, rc: i32) -> Error {
    Error::verb(verb, rc)
}
