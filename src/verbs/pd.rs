//! Protection domains.

use std::ptr::NonNull;
use std::sync::Arc;

use super::Context;
use crate::error::{Error, Result};
use crate::sys;

/// An `ibv_pd`. MRs, QPs and AHs made in it keep it alive.
#[derive(Debug)]
pub struct ProtectionDomain {
    raw: NonNull<sys::ibv_pd>,
    ctx: Arc<Context>,
}

// SAFETY: a PD is an immutable handle; verbs calls on it are thread-safe.
unsafe impl Send for ProtectionDomain {}
// SAFETY: as above.
unsafe impl Sync for ProtectionDomain {}

impl ProtectionDomain {
    /// Allocates a PD on `ctx`.
    pub fn new(ctx: &Arc<Context>) -> Result<Arc<ProtectionDomain>> {
        // SAFETY: the context is open for as long as `ctx` lives.
        let raw = unsafe { sys::ibv_alloc_pd(ctx.as_raw()) };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("ibv_alloc_pd"))?;
        Ok(Arc::new(ProtectionDomain {
            raw,
            ctx: Arc::clone(ctx),
        }))
    }

    /// The device context.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The raw `ibv_pd`.
    pub fn as_raw(&self) -> *mut sys::ibv_pd {
        self.raw.as_ptr()
    }
}

impl Drop for ProtectionDomain {
    fn drop(&mut self) {
        // SAFETY: everything made in this PD holds an Arc to it, so nothing uses it any more.
        unsafe { sys::ibv_dealloc_pd(self.raw.as_ptr()) };
    }
}
