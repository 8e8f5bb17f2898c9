use super::*;
use std::path::PathBuf;

fn args(a: &[&str]) -> Vec<OsString> {
    a.iter().map(OsString::from).collect()
}

#[test]
fn the_device_and_the_keep_flag_are_read_from_the_command_line() {
    assert_eq!(asked(args(&["--num-threads", "2"])), Asked::default());
    let a = asked(args(&["--device", "mlx5_1", KEEP_FLAG]));
    assert_eq!(a.device.as_deref(), Some("mlx5_1"));
    assert!(a.keep);
    assert_eq!(
        asked(args(&["--device=irdma0"])).device.as_deref(),
        Some("irdma0")
    );
}

/// A sysfs class directory of fake devices: (name, driver or None for a software device,
/// port states).
fn class(tag: &str, devices: &[(&str, Option<&str>, &[&str])]) -> PathBuf {
    let root = std::env::temp_dir().join(format!("provider-env-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for (name, driver, states) in devices {
        let dev = root.join(name);
        std::fs::create_dir_all(dev.join("device")).unwrap();
        if let Some(d) = driver {
            let target = root.join("drivers").join(d);
            std::fs::create_dir_all(&target).unwrap();
            std::os::unix::fs::symlink(&target, dev.join("device/driver")).unwrap();
        }
        for (i, s) in states.iter().enumerate() {
            let p = dev.join(format!("ports/{}", i + 1));
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("state"), s).unwrap();
        }
    }
    root
}

#[test]
fn only_the_providers_of_the_devices_in_use_are_set() {
    let c = class(
        "mixed",
        &[
            ("mlx5_0", Some("mlx5_core"), &["4: ACTIVE"]),
            ("mlx4_0", Some("mlx4_core"), &["1: DOWN"]),
            ("irdma0", Some("irdma"), &["4: ACTIVE"]),
            ("rxe0", None, &["4: ACTIVE"]),
        ],
    );
    // No --device: the providers of the devices with an ACTIVE port, mlx4 (down) not among them.
    assert_eq!(providers_in_use(&c, None), vec![&PROVIDERS[0]]);
    // --device names one: its provider alone, or none for a provider that reads no variable.
    assert_eq!(providers_in_use(&c, Some("mlx4_0")), vec![&PROVIDERS[1]]);
    assert!(providers_in_use(&c, Some("irdma0")).is_empty());
    assert!(providers_in_use(&c, Some("rxe0")).is_empty());
    assert!(providers_in_use(&c, Some("nonexistent")).is_empty());
    let _ = std::fs::remove_dir_all(&c);
}

#[test]
fn the_users_own_settings_are_kept_and_nothing_is_set_twice() {
    let mlx5 = &PROVIDERS[0];
    let mlx4 = &PROVIDERS[1];
    assert_eq!(to_set(&[mlx5], |_| false), mlx5.vars.to_vec());
    assert_eq!(
        to_set(&[mlx5], |n| n == "MLX5_SINGLE_THREADED"),
        vec![
            ("MLX_QP_ALLOC_TYPE", "PREFER_HUGE"),
            ("MLX_CQ_ALLOC_TYPE", "PREFER_HUGE")
        ]
    );
    assert!(to_set(&[mlx5], |_| true).is_empty());
    // mlx4 gets its single-threaded mode, not mlx5's variables.
    assert_eq!(
        to_set(&[mlx4], |_| false),
        vec![("MLX4_SINGLE_THREADED", "1")]
    );
    assert_eq!(to_set(&[mlx5, mlx4], |_| false).len(), 4);
    assert!(to_set(&[], |_| false).is_empty());
}
