//! Completion queues.

use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

use super::comp_channel::CompletionChannel;
use super::Context;
use crate::error::{Error, Result, WcStatus};
use crate::sys;

/// An `ibv_cq`, busy-polled, or with [`CompletionQueue::with_events`] also able to sleep until
/// a completion arrives.
#[derive(Debug)]
pub struct CompletionQueue {
    raw: NonNull<sys::ibv_cq>,
    ctx: Arc<Context>,
    depth: u32,
    /// Dropped after the CQ itself (fields drop after `Drop::drop`).
    channel: Option<CompletionChannel>,
}

// SAFETY: verbs CQs may be polled from any thread; callers that poll one CQ from several threads
// get the provider's locking.
unsafe impl Send for CompletionQueue {}
// SAFETY: as above.
unsafe impl Sync for CompletionQueue {}

impl CompletionQueue {
    /// Creates a CQ with room for at least `depth` completions.
    pub fn new(ctx: &Arc<Context>, depth: u32) -> Result<Arc<CompletionQueue>> {
        let cqe = i32::try_from(depth)
            .map_err(|_| Error::config(format!("CQ depth {depth} too large")))?;
        // SAFETY: the context is open; no channel, no context pointer, vector 0.
        let raw = unsafe {
            sys::ibv_create_cq(
                ctx.as_raw(),
                cqe,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("ibv_create_cq"))?;
        Ok(Arc::new(CompletionQueue {
            raw,
            ctx: Arc::clone(ctx),
            depth,
            channel: None,
        }))
    }

    /// Creates a CQ that signals its own completion channel on completion vector `vector`,
    /// armed for the next completion: [`CompletionQueue::wait_event`] sleeps until one arrives.
    pub fn with_events(
        ctx: &Arc<Context>,
        depth: u32,
        vector: u32,
    ) -> Result<Arc<CompletionQueue>> {
        let cqe = i32::try_from(depth)
            .map_err(|_| Error::config(format!("CQ depth {depth} too large")))?;
        let vectors = ctx.num_comp_vectors();
        if vector >= vectors {
            return Err(Error::config(format!(
                "completion vector {vector} is invalid: {} has vectors 0 to {}",
                ctx.name(),
                vectors.saturating_sub(1)
            )));
        }
        let channel = CompletionChannel::new(ctx)?;
        // SAFETY: the context and channel are open; no context pointer; the vector is in range.
        let raw = unsafe {
            sys::ibv_create_cq(
                ctx.as_raw(),
                cqe,
                std::ptr::null_mut(),
                channel.as_raw(),
                vector as i32,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last_os("ibv_create_cq"))?;
        let cq = CompletionQueue {
            raw,
            ctx: Arc::clone(ctx),
            depth,
            channel: Some(channel),
        };
        cq.arm()?;
        Ok(Arc::new(cq))
    }

    /// Asks for an event at the next completion (`ibv_req_notify_cq`, any completion).
    fn arm(&self) -> Result<()> {
        // SAFETY: the CQ is alive.
        let rc = unsafe { sys::shim_req_notify_cq(self.raw.as_ptr(), 0) };
        if rc != 0 {
            return Err(Error::verb("ibv_req_notify_cq", rc.abs()));
        }
        Ok(())
    }

    /// True for a CQ made by [`CompletionQueue::with_events`].
    pub fn has_events(&self) -> bool {
        self.channel.is_some()
    }

    /// Sleeps until the CQ reports a completion event or `timeout` passes, and re-arms it;
    /// returns whether an event came. The CQ stays armed whenever no event is pending, so a
    /// completion that arrives between a poll that found nothing and this call is not missed:
    /// poll, and wait only when the poll was empty.
    pub fn wait_event(&self, timeout: Duration) -> Result<bool> {
        wait_any(&[self], timeout)
    }

    /// Polls up to `wcs.len()` completions; returns how many were written. Error completions are
    /// returned as they are: check [`WorkCompletion::result`].
    #[inline(always)]
    pub fn poll(&self, wcs: &mut [WorkCompletion]) -> Result<usize> {
        let n = wcs.len().min(i32::MAX as usize) as i32;
        // SAFETY: `wcs` is valid for `n` writes; WorkCompletion is repr(transparent) over ibv_wc.
        let rc = unsafe { sys::shim_poll_cq(self.raw.as_ptr(), n, wcs.as_mut_ptr().cast()) };
        if rc < 0 {
            return Err(Error::verb("ibv_poll_cq", -rc));
        }
        Ok(rc as usize)
    }

    /// Depth requested at creation.
    pub fn depth(&self) -> u32 {
        self.depth
    }
    /// The device context.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
    /// The raw `ibv_cq`.
    pub fn as_raw(&self) -> *mut sys::ibv_cq {
        self.raw.as_ptr()
    }
}

impl Drop for CompletionQueue {
    fn drop(&mut self) {
        // SAFETY: QPs using this CQ hold an Arc to it, so they are destroyed already.
        unsafe { sys::ibv_destroy_cq(self.raw.as_ptr()) };
    }
}

/// [`CompletionQueue::wait_event`] on several CQs at once: sleeps until any of them reports an
/// event or `timeout` passes, and re-arms those that did. CQs without a channel are skipped.
pub fn wait_any(cqs: &[&CompletionQueue], timeout: Duration) -> Result<bool> {
    let chans: Vec<(&CompletionQueue, &CompletionChannel)> = cqs
        .iter()
        .filter_map(|cq| cq.channel.as_ref().map(|ch| (*cq, ch)))
        .collect();
    if chans.is_empty() {
        return Err(Error::config(
            "these CQs were made without completion channels",
        ));
    }
    let fds: Vec<i32> = chans.iter().map(|(_, ch)| ch.fd()).collect();
    let mut any = false;
    for ((cq, ch), ready) in chans
        .iter()
        .zip(super::comp_channel::readable(&fds, timeout)?)
    {
        if !ready {
            continue;
        }
        match ch.take_event() {
            Some(raw) if raw == cq.raw.as_ptr() => {
                cq.arm()?;
                any = true;
            }
            Some(_) => {
                return Err(Error::config(
                    "an event for another CQ on a CQ's own channel",
                ))
            }
            None => {}
        }
    }
    Ok(any)
}

/// One work completion (`ibv_wc`), read through accessors.
#[repr(transparent)]
#[derive(Clone, Copy, Default)]
pub struct WorkCompletion(sys::ibv_wc);

impl WorkCompletion {
    /// The `wr_id` of the work request.
    #[inline(always)]
    pub fn wr_id(&self) -> u64 {
        self.0.wr_id
    }
    /// The completion's status.
    #[inline(always)]
    pub fn status(&self) -> WcStatus {
        WcStatus::from_raw(self.0.status)
    }
    /// Raw `ibv_wc_opcode`.
    pub fn opcode(&self) -> u32 {
        self.0.opcode
    }
    /// Bytes received (RECV) or moved (READ).
    pub fn byte_len(&self) -> u32 {
        self.0.byte_len
    }
    /// Immediate data in host order, if the completion carries it.
    pub fn imm_data(&self) -> Option<u32> {
        (self.0.wc_flags & sys::ibv_wc_flags::IBV_WC_WITH_IMM.0 != 0)
            // SAFETY: with IBV_WC_WITH_IMM set, the union holds imm_data (network order).
            .then(|| u32::from_be(unsafe { sys::wc_imm(&self.0) }))
    }
    /// True when a UD receive buffer starts with a 40-byte GRH.
    pub fn has_grh(&self) -> bool {
        self.0.wc_flags & sys::ibv_wc_flags::IBV_WC_GRH.0 != 0
    }
    /// Local QP number.
    pub fn qp_num(&self) -> u32 {
        self.0.qp_num
    }
    /// Source QP (UD receives).
    pub fn src_qp(&self) -> u32 {
        self.0.src_qp
    }
    /// Source LID (UD receives on InfiniBand).
    #[inline(always)]
    pub fn slid(&self) -> u16 {
        self.0.slid
    }
    /// The raw `ibv_wc`.
    pub(crate) fn as_raw(&self) -> &sys::ibv_wc {
        &self.0
    }
    /// `Ok(self)` on success, else a typed [`Error::Completion`].
    #[inline(always)]
    pub fn result(&self) -> Result<&Self> {
        if self.0.status == sys::ibv_wc_status::IBV_WC_SUCCESS {
            Ok(self)
        } else {
            Err(Error::Completion {
                status: WcStatus::from_raw(self.0.status),
                opcode: self.0.opcode,
                wr_id: self.0.wr_id,
                vendor_err: self.0.vendor_err,
            })
        }
    }
}

impl std::fmt::Debug for WorkCompletion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkCompletion")
            .field("wr_id", &self.0.wr_id)
            .field("status", &self.0.status)
            .field("opcode", &self.0.opcode)
            .field("byte_len", &self.0.byte_len)
            .finish()
    }
}
