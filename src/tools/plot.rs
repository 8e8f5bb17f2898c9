//! `rdma-bench plot` (being built).

use crate::error::{Error, Result};

/// `rdma-bench plot`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct PlotArgs {}

/// Runs `rdma-bench plot`.
pub fn run(_a: PlotArgs) -> Result<()> {
    Err(Error::config("rdma-bench plot is not built yet"))
}
