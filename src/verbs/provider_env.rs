//! The provider environment the original suite's scripts export for mlx5, set by the paper
//! benchmarks themselves: without `MLX5_SINGLE_THREADED` mlx5 takes a lock on every post and
//! poll, and without hugepage-backed QP and CQ buffers their rings cost TLB misses. Each of
//! those benchmarks' threads opens a device context of its own and alone drives the QPs and
//! CQs made on it, which is what the single-threaded mode asks. The perftest tools leave the
//! environment alone, as perftest does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use super::Context;

/// What the original's run scripts export. `PREFER_HUGE` rather than their `HUGE`: mlx5 then
/// falls back to ordinary pages when no hugepage is free instead of failing to make the QP.
const MLX5_ENV: [(&str, &str); 3] = [
    ("MLX5_SINGLE_THREADED", "1"),
    ("MLX_QP_ALLOC_TYPE", "PREFER_HUGE"),
    ("MLX_CQ_ALLOC_TYPE", "PREFER_HUGE"),
];

/// The variables this process set (those the user had not).
static SET: OnceLock<Vec<(&'static str, &'static str)>> = OnceLock::new();
/// Whether the note on an mlx5 device was printed.
static SAID: AtomicBool = AtomicBool::new(false);

/// The variables of [`MLX5_ENV`] that `current` (the environment's lookup) lacks: the user's
/// own settings, whatever they are, are kept.
fn missing(current: impl Fn(&str) -> bool) -> Vec<(&'static str, &'static str)> {
    MLX5_ENV
        .iter()
        .copied()
        .filter(|(name, _)| !current(name))
        .collect()
}

/// Sets the mlx5 variables the user has not set. Harmless for other providers, which do not
/// read them. Call it first thing in `main`.
///
/// # Safety
/// No other thread may exist yet: `setenv` races any concurrent read of the environment
/// (glibc's `getenv` in another thread, a provider's included).
pub unsafe fn set_mlx5_defaults() {
    let set = missing(|name| std::env::var_os(name).is_some());
    for (name, value) in &set {
        std::env::set_var(name, value);
    }
    let _ = SET.set(set);
}

/// Whether a device is driven by mlx5: its kernel driver (sysfs) is `mlx5_core` (device names
/// can be renamed, so the name is not a test).
pub fn is_mlx5(device: &str) -> bool {
    std::fs::read_link(format!("/sys/class/infiniband/{device}/device/driver"))
        .is_ok_and(|p| is_mlx5_driver(&p))
}

fn is_mlx5_driver(driver: &std::path::Path) -> bool {
    driver.file_name().is_some_and(|n| n == "mlx5_core")
}

/// The one line saying what was set, the first time an mlx5 device is opened by a process
/// that set anything; `None` otherwise.
pub fn mlx5_note(ctx: &Context) -> Option<String> {
    let set = SET.get().filter(|s| !s.is_empty())?;
    if !is_mlx5(ctx.name()) || SAID.swap(true, Ordering::Relaxed) {
        return None;
    }
    let list: Vec<String> = set.iter().map(|(n, v)| format!("{n}={v}")).collect();
    Some(format!(
        "{} is an mlx5 device: {} (as the original's scripts set; export your own to override)",
        ctx.name(),
        list.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_users_own_settings_are_kept() {
        assert_eq!(missing(|_| false), MLX5_ENV.to_vec());
        let set = missing(|n| n == "MLX5_SINGLE_THREADED");
        assert_eq!(
            set,
            vec![
                ("MLX_QP_ALLOC_TYPE", "PREFER_HUGE"),
                ("MLX_CQ_ALLOC_TYPE", "PREFER_HUGE")
            ]
        );
        assert!(missing(|_| true).is_empty());
    }

    #[test]
    fn mlx5_is_told_by_its_kernel_driver() {
        assert!(is_mlx5_driver(Path::new(
            "../../../../bus/pci/drivers/mlx5_core"
        )));
        assert!(!is_mlx5_driver(Path::new(
            "../../../../bus/pci/drivers/irdma"
        )));
        // Soft-RoCE's device has no driver link: not mlx5.
        assert!(!is_mlx5("rxe-that-does-not-exist"));
    }
}
