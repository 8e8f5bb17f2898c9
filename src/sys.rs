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
