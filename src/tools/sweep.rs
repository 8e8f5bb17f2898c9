//! `rdma-bench sweep` (being built).

use crate::error::{Error, Result};

/// `rdma-bench sweep`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct SweepArgs {}

/// Runs `rdma-bench sweep`.
pub fn run(_a: SweepArgs) -> Result<()> {
    Err(Error::config("rdma-bench sweep is not built yet"))
}
