//! Raw bindings: generated at build time from the installed verbs headers (`wrapper.h`) and the C
//! shim (`c_shim/shim.h`), whose `shim_*` functions stand in for rdma-core's `static inline` fast
//! paths. Private to the crate: everything above this file goes through `verbs`, `mem` and `hot`.

#![allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code
)]
#![allow(clippy::all, clippy::pedantic, unreachable_pub)]
// Generated code: the crate's unsafe conventions apply to the code that calls it.
#![allow(
    clippy::undocumented_unsafe_blocks,
    clippy::missing_safety_doc,
    clippy::as_ptr_cast_mut,
    missing_docs
)]
#![allow(unsafe_op_in_unsafe_fn)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
include!(concat!(env!("OUT_DIR"), "/imm_paths.rs"));

/// A send WR's remote buffer for RDMA READ/WRITE (`wr.rdma`), written by field path: the
/// bindings' names of the anonymous member types differ between header layouts.
///
/// # Safety
/// `wr` points to a live, writable `ibv_send_wr`.
#[inline(always)]
pub(crate) unsafe fn wr_set_rdma(wr: *mut ibv_send_wr, remote_addr: u64, rkey: u32) {
    (*wr).wr.rdma.remote_addr = remote_addr;
    (*wr).wr.rdma.rkey = rkey;
}

/// A send WR's atomic operands (`wr.atomic`), as [`wr_set_rdma`].
///
/// # Safety
/// `wr` points to a live, writable `ibv_send_wr`.
#[inline(always)]
pub(crate) unsafe fn wr_set_atomic(
    wr: *mut ibv_send_wr,
    remote_addr: u64,
    compare_add: u64,
    swap: u64,
    rkey: u32,
) {
    (*wr).wr.atomic.remote_addr = remote_addr;
    (*wr).wr.atomic.compare_add = compare_add;
    (*wr).wr.atomic.swap = swap;
    (*wr).wr.atomic.rkey = rkey;
}

/// A UD send WR's destination (`wr.ud`), as [`wr_set_rdma`].
///
/// # Safety
/// `wr` points to a live, writable `ibv_send_wr`; `ah` outlives every post of it.
#[inline(always)]
pub(crate) unsafe fn wr_set_ud(wr: *mut ibv_send_wr, ah: *mut ibv_ah, qpn: u32, qkey: u32) {
    (*wr).wr.ud.ah = ah;
    (*wr).wr.ud.remote_qpn = qpn;
    (*wr).wr.ud.remote_qkey = qkey;
}

/// `ibv_wc_status_str`: libibverbs' name of a completion status ("unknown" for values it does
/// not know). Safe: the function takes any value and returns a static string.
pub(crate) fn wc_status_str(status: u32) -> &'static str {
    // SAFETY: ibv_wc_status_str accepts any value and returns a pointer to a static,
    // NUL-terminated string (or NULL, handled below).
    let p = unsafe { ibv_wc_status_str(status as ibv_wc_status::Type) };
    if p.is_null() {
        return "unknown status";
    }
    // SAFETY: non-NULL: a static C string that lives as long as the library.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_str()
        .unwrap_or("unknown status")
}
