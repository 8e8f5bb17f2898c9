//! `rdma-bench compare` (being built).

use crate::error::{Error, Result};

/// `rdma-bench compare`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {}

/// Runs `rdma-bench compare`.
pub fn run(_a: CompareArgs) -> Result<()> {
    Err(Error::config("rdma-bench compare is not built yet"))
}
