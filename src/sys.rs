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
