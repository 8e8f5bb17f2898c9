//! `rdma-bench man DIR` and `rdma-bench completions SHELL`: man pages and shell completions made
//! from the clap definitions that `--help` prints, for rdma-bench and its subcommands and for
//! every benchmark binary, so that none of them can drift from the flags.

use std::path::{Path, PathBuf};

use clap_complete::Shell;

use crate::error::{Error, Result};

/// `rdma-bench man`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct ManArgs {
    /// Directory the pages go into (made if missing): rdma-bench.1, rdma-bench-SUBCOMMAND.1 and
    /// one BENCHMARK.1 per benchmark binary (e.g. rw-tput-sender.1); `man -l DIR/herd.1` reads
    /// one, or put DIR on MANPATH
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// `rdma-bench completions`' flags.
#[derive(clap::Args, Debug, Clone)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
    /// Write the scripts of rdma-bench and of every benchmark binary into DIR (one file each,
    /// named as the shell expects) instead of printing rdma-bench's
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// The command of every binary: rdma-bench's (its command line lives in the binary, which
/// passes it), then each benchmark's.
fn binaries(rdma_bench: clap::Command) -> Vec<clap::Command> {
    std::iter::once(rdma_bench)
        .chain(crate::bench::ALL.iter().map(|b| (b.command)().name(b.name)))
        .collect()
}

/// One page for the command and one for each visible subcommand, nested ones included.
fn page_count(cmd: &clap::Command) -> usize {
    1 + cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(page_count)
        .sum::<usize>()
}

fn made(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::usage(format!("cannot make {}: {e}", dir.display())))
}

/// Writes the man pages of `rdma_bench` (with its subcommands) and of every benchmark binary
/// into `a.dir`; returns how many pages it wrote.
pub fn man(a: &ManArgs, rdma_bench: clap::Command) -> Result<usize> {
    made(&a.dir)?;
    let mut pages = 0;
    for cmd in binaries(rdma_bench) {
        pages += page_count(&cmd);
        clap_mangen::generate_to(cmd, &a.dir).map_err(|e| {
            Error::config(format!("writing man pages into {}: {e}", a.dir.display()))
        })?;
    }
    println!("wrote {pages} man pages into {}", a.dir.display());
    Ok(pages)
}

/// Prints rdma-bench's completion script for `a.shell`, or with `a.out` writes every binary's.
pub fn completions(a: &CompletionsArgs, rdma_bench: clap::Command) -> Result<()> {
    let Some(dir) = &a.out else {
        let mut cmd = rdma_bench;
        clap_complete::generate(a.shell, &mut cmd, "rdma-bench", &mut std::io::stdout());
        return Ok(());
    };
    made(dir)?;
    let mut scripts = 0;
    for mut cmd in binaries(rdma_bench) {
        let name = cmd.get_name().to_string();
        clap_complete::generate_to(a.shell, &mut cmd, name, dir).map_err(|e| {
            Error::config(format!("writing completions into {}: {e}", dir.display()))
        })?;
        scripts += 1;
    }
    println!(
        "wrote {scripts} {} completion scripts into {}",
        a.shell,
        dir.display()
    );
    Ok(())
}
