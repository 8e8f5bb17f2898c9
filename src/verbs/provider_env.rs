//! The provider environment the original suite's run scripts export, set by the paper
//! benchmarks themselves for the provider in use, and only for it: without
//! `MLX5_SINGLE_THREADED` mlx5 takes a lock on every post and poll, and without hugepage-backed
//! QP and CQ buffers their rings cost TLB misses. Each of those benchmarks' threads opens a
//! device context of its own and alone drives the QPs and CQs made on it, which is what the
//! single-threaded mode asks. The providers read these variables when a context is opened, so
//! they are set first thing in `main`, before any thread (setenv races a concurrent getenv).
//! The perftest tools leave the environment alone, as perftest does.

use std::ffi::OsString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use super::Context;
use crate::stats::JsonObject;

/// A provider whose library reads variables that the original's scripts export.
#[derive(Debug, PartialEq, Eq)]
pub struct ProviderEnv {
    /// The provider, as rdma-core names it.
    pub provider: &'static str,
    /// The kernel driver of its devices (sysfs `device/driver`; device names can be renamed).
    pub driver: &'static str,
    /// The variables and the values set when the user has not set them.
    pub vars: &'static [(&'static str, &'static str)],
}

/// What the original's scripts export, per provider. `PREFER_HUGE` rather than their `HUGE`:
/// mlx5 then falls back to ordinary pages when no hugepage is free instead of failing to make
/// the QP. `MLX5_SHUT_UP_BF=0`, set once by the original, is mlx5's default and is not set.
/// The scripts' `MLX_*_ALLOC_TYPE` are mlx5's (rdma-core's mlx4 reads none), so mlx4 gets its
/// single-threaded mode alone.
pub static PROVIDERS: [ProviderEnv; 2] = [
    ProviderEnv {
        provider: "mlx5",
        driver: "mlx5_core",
        vars: &[
            ("MLX5_SINGLE_THREADED", "1"),
            ("MLX_QP_ALLOC_TYPE", "PREFER_HUGE"),
            ("MLX_CQ_ALLOC_TYPE", "PREFER_HUGE"),
        ],
    },
    ProviderEnv {
        provider: "mlx4",
        driver: "mlx4_core",
        vars: &[("MLX4_SINGLE_THREADED", "1")],
    },
];

/// The flag that keeps the environment as it is.
pub const KEEP_FLAG: &str = "--no-provider-env";

/// What a benchmark's command line asks: the device of `--device`, and whether
/// [`KEEP_FLAG`] was given. Read from the raw arguments, because the variables must be set
/// before the benchmark's own parse and setup (clap checks the same flags again).
#[derive(Debug, Default, PartialEq, Eq)]
struct Asked {
    device: Option<String>,
    keep: bool,
}

fn asked(args: impl IntoIterator<Item = OsString>) -> Asked {
    let mut a = Asked::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let arg = arg.to_string_lossy().into_owned();
        if arg == KEEP_FLAG {
            a.keep = true;
        } else if arg == "--device" {
            a.device = args.next().map(|v| v.to_string_lossy().into_owned());
        } else if let Some(v) = arg.strip_prefix("--device=") {
            a.device = Some(v.to_string());
        }
    }
    a
}

/// The table entry of device `name` under `class` (`/sys/class/infiniband`), by its driver.
pub fn provider_of(class: &Path, name: &str) -> Option<&'static ProviderEnv> {
    let driver = super::kernel_driver(class, name)?;
    PROVIDERS.iter().find(|p| p.driver == driver)
}

/// Whether device `name` under `class` has an ACTIVE port (sysfs `ports/N/state`).
fn has_active_port(class: &Path, name: &str) -> bool {
    let Ok(ports) = std::fs::read_dir(class.join(name).join("ports")) else {
        return false;
    };
    ports.flatten().any(|p| {
        std::fs::read(p.path().join("state")).is_ok_and(|s| super::port_state_word(&s) == "ACTIVE")
    })
}

/// The table entries a run may open: `--device`'s, else those of every device with an ACTIVE
/// port (libhrd's rule picks among them by port index).
fn providers_in_use(class: &Path, device: Option<&str>) -> Vec<&'static ProviderEnv> {
    let names: Vec<String> = match device {
        Some(d) => vec![d.to_string()],
        None => std::fs::read_dir(class)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| has_active_port(class, n))
                    .collect()
            })
            .unwrap_or_default(),
    };
    let mut found: Vec<&'static ProviderEnv> = Vec::new();
    for p in names.iter().filter_map(|n| provider_of(class, n)) {
        if !found.contains(&p) {
            found.push(p);
        }
    }
    found
}

/// The variables of `providers` that `is_set` (the environment's lookup) lacks: the user's own
/// settings, whatever they are, are kept.
fn to_set(
    providers: &[&'static ProviderEnv],
    is_set: impl Fn(&str) -> bool,
) -> Vec<(&'static str, &'static str)> {
    let mut set: Vec<(&'static str, &'static str)> = Vec::new();
    for &(name, value) in providers.iter().flat_map(|p| p.vars) {
        if !is_set(name) && !set.iter().any(|(n, _)| *n == name) {
            set.push((name, value));
        }
    }
    set
}

/// What this process decided at its start.
#[derive(Debug, Default)]
struct Applied {
    providers: Vec<&'static ProviderEnv>,
    set: Vec<(&'static str, &'static str)>,
    keep: bool,
}

static APPLIED: OnceLock<Applied> = OnceLock::new();
/// Whether the header line was printed (once per process).
static SAID: AtomicBool = AtomicBool::new(false);

/// Sets the variables of the provider in use that the user has not set, unless the command line
/// has [`KEEP_FLAG`]. Call it first thing in `main`.
///
/// # Safety
/// No other thread may exist yet: `setenv` races any concurrent read of the environment
/// (glibc's `getenv` in another thread, a provider's included).
pub unsafe fn set_for_provider_in_use() {
    let a = asked(std::env::args_os().skip(1));
    let providers = providers_in_use(Path::new(super::SYSFS_CLASS), a.device.as_deref());
    let set = if a.keep {
        Vec::new()
    } else {
        to_set(&providers, |name| std::env::var_os(name).is_some())
    };
    for (name, value) in &set {
        std::env::set_var(name, value);
    }
    let _ = APPLIED.set(Applied {
        providers,
        set,
        keep: a.keep,
    });
}

/// `NAME=VALUE (how)` or `NAME unset` for each variable of `p`, as the environment has it now.
fn describe(p: &ProviderEnv, applied: &Applied) -> String {
    let words: Vec<String> = p
        .vars
        .iter()
        .map(|(name, _)| match std::env::var(name) {
            Ok(v) if applied.set.iter().any(|(n, _)| n == name) => format!("{name}={v}"),
            Ok(v) => format!("{name}={v} (yours)"),
            Err(_) => format!("{name} unset"),
        })
        .collect();
    words.join(", ")
}

/// The run header's line about the provider environment, the first time a process opens a
/// device whose provider has variables in [`PROVIDERS`]; `None` otherwise (rxe, siw and the
/// rest read none of them).
pub fn header_note(ctx: &Context) -> Option<String> {
    let applied = APPLIED.get()?;
    let p = provider_of(Path::new(super::SYSFS_CLASS), ctx.name())?;
    if SAID.swap(true, Ordering::Relaxed) {
        return None;
    }
    let vars = describe(p, applied);
    Some(if applied.keep {
        format!(
            "provider environment of {} ({}): left as it is ({KEEP_FLAG}): {vars}",
            ctx.name(),
            p.provider
        )
    } else {
        format!(
            "provider environment of {} ({}): {vars}, as the original's scripts set it \
             (export your own to override, {KEEP_FLAG} to set nothing)",
            ctx.name(),
            p.provider
        )
    })
}

/// The summary's fields: `provider_env`, the variables of the providers in use as the
/// environment has them (the user's or ours), and `provider_env_set`, those this process set.
/// Both empty on a provider that reads none (rxe, siw).
pub fn json() -> JsonObject {
    let Some(applied) = APPLIED.get() else {
        return JsonObject::new();
    };
    let mut in_effect = JsonObject::new();
    for (name, _) in applied.providers.iter().flat_map(|p| p.vars) {
        if let Ok(v) = std::env::var(name) {
            in_effect = in_effect.str(name, &v);
        }
    }
    let set: Vec<&str> = applied.set.iter().map(|(n, _)| *n).collect();
    JsonObject::new()
        .object("provider_env", &in_effect)
        .strs("provider_env_set", &set)
}

#[cfg(test)]
mod tests;
