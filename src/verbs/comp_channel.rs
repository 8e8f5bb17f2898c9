//! Completion channels: the file descriptor a CQ signals when armed (`ibv_req_notify_cq`), so a
//! thread may sleep until a completion arrives instead of busy-polling (perftest's `-e`).

use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

use super::Context;
use crate::error::{Error, Result};
use crate::sys;

/// An `ibv_comp_channel` owned by one CQ ([`super::CompletionQueue::with_events`]); its fd is
/// non-blocking, so a wait is a `poll(2)` with a timeout and never hangs a stop request.
#[derive(Debug)]
pub(super) struct CompletionChannel {
    raw: NonNull<sys::ibv_comp_channel>,
    _ctx: Arc<Context>,
}

impl CompletionChannel {
    pub(super) fn new(ctx: &Arc<Context>) -> Result<CompletionChannel> {
        // SAFETY: the context is open.
        let raw = unsafe { sys::ibv_create_comp_channel(ctx.as_raw()) };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("ibv_create_comp_channel"))?;
        let ch = CompletionChannel {
            raw,
            _ctx: Arc::clone(ctx),
        };
        let fd = ch.fd();
        // SAFETY: fcntl on the channel's own, open fd.
        let rc = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK)
        };
        if rc < 0 {
            return Err(Error::last_os("fcntl(O_NONBLOCK) on a completion channel"));
        }
        Ok(ch)
    }

    pub(super) fn fd(&self) -> i32 {
        // SAFETY: the channel is alive; `fd` is set at creation and never changes.
        unsafe { (*self.raw.as_ptr()).fd }
    }

    pub(super) fn as_raw(&self) -> *mut sys::ibv_comp_channel {
        self.raw.as_ptr()
    }

    /// Takes and acknowledges a pending event; returns the CQ it names (None when there is
    /// none, or another thread took it first: the fd is non-blocking).
    pub(super) fn take_event(&self) -> Option<*mut sys::ibv_cq> {
        let mut cq: *mut sys::ibv_cq = std::ptr::null_mut();
        let mut cq_ctx: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: the channel is alive; both out-pointers are valid.
        let rc = unsafe { sys::ibv_get_cq_event(self.as_raw(), &mut cq, &mut cq_ctx) };
        if rc != 0 {
            return None;
        }
        // SAFETY: `cq` is the live CQ the event names; every event is acknowledged at once, so
        // the CQ's destruction never waits for one.
        unsafe { sys::ibv_ack_cq_events(cq, 1) };
        Some(cq)
    }
}

/// Waits up to `timeout` until one of `fds` is readable; returns which are.
pub(super) fn readable(fds: &[i32], timeout: Duration) -> Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: `pfds` holds `pfds.len()` valid pollfds.
    let n = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
    if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
        return Err(Error::last_os("poll on completion channels"));
    }
    Ok(pfds.iter().map(|p| n > 0 && p.revents != 0).collect())
}

impl Drop for CompletionChannel {
    fn drop(&mut self) {
        // SAFETY: the only CQ on this channel is destroyed before its fields drop.
        unsafe { sys::ibv_destroy_comp_channel(self.raw.as_ptr()) };
    }
}
