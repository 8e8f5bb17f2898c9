//! The README's exit-code scheme, walked: every binary and every rdma-bench subcommand that takes
//! a duration, a size or a count refuses a value outside that flag's range with exit code 2 and
//! one line on stderr naming the flag, before it looks for a device. The binaries come from
//! src/bin and the subcommands from `rdma-bench --help`, so a new one cannot be left out.

use std::path::Path;
use std::process::Command;

/// Values no duration, size or count can take.
const BAD_SECS: [&str; 3] = ["-1", "0", "1x"];
const BAD_SIZE: [&str; 2] = ["-1", "12Q"];
const BAD_COUNT: [&str; 3] = ["-1", "0", "many"];

/// Runs `bin args` and asserts the usage code with a one-line refusal that names `flag`.
fn refused_as_usage(bin: &Path, args: &[&str], flag: &str) {
    let out = Command::new(bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{} runs: {e}", bin.display()));
    let err = String::from_utf8_lossy(&out.stderr);
    let name = bin.file_name().unwrap().to_string_lossy();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{name} {args:?}: exit {:?}, not 2 (usage); stderr: {err}",
        out.status.code()
    );
    assert!(out.stdout.is_empty(), "{name} {args:?} printed on stdout");
    // clap's refusal is its error line and a usage hint; ours is one line.
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains(flag) || err.contains(&format!("'{flag}")),
        "{name} {args:?}: the refusal does not name {flag}: {err}"
    );
}

/// The long flags a `--help` text lists.
fn flags_of(bin: &Path, sub: &[&str]) -> Vec<String> {
    let out = Command::new(bin)
        .args(sub)
        .arg("--help")
        .output()
        .expect("--help runs");
    assert!(
        out.status.success(),
        "{} {sub:?} --help failed",
        bin.display()
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            // "-s, --size <SIZE>": the long flag after the short one.
            let l = match l.as_bytes() {
                [b'-', c, b',', b' ', ..] if *c != b'-' => &l[4..],
                _ => l,
            };
            l.starts_with("--")
                .then(|| l.split([' ', '=']).next().unwrap().to_string())
        })
        .collect()
}

fn bin_dir() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_rdma-bench"))
        .parent()
        .unwrap()
}

#[test]
fn every_benchmark_binary_refuses_a_bad_duration_size_and_count_with_2() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin");
    let mut walked = 0;
    for entry in std::fs::read_dir(src).unwrap() {
        let name = entry
            .unwrap()
            .file_name()
            .to_string_lossy()
            .replace(".rs", "");
        if name == "rdma-bench" {
            continue;
        }
        let bin = bin_dir().join(&name);
        let flags = flags_of(&bin, &[]);
        let has = |f: &str| flags.iter().any(|x| x == f);
        // Every benchmark has the common flags: a duration and an operation count.
        assert!(has("--duration") && has("--iters"), "{name}: {flags:?}");
        for v in BAD_SECS {
            refused_as_usage(&bin, &[&format!("--duration={v}")], "--duration");
        }
        // rc-swarm checks its values once it knows its rank.
        let rank: &[&str] = if name == "rc-swarm" {
            &["--process-id=0", "--num-processes=2"]
        } else {
            &[]
        };
        let counts = [
            "--iters",
            "--num-threads",
            "--num-clients",
            "--num-servers",
            "--num-workers",
            "--num-ud-qps",
            "--num-server-threads",
            "--max-num-clients",
            "--num-server-ports",
            "--num-client-ports",
            "--qps-per-client",
            "--samples",
            "--window",
            "--window-size",
            "--vms-per-process",
        ];
        for flag in counts.into_iter().filter(|f| has(f)) {
            for v in BAD_COUNT {
                let arg = format!("{flag}={v}");
                refused_as_usage(&bin, &[rank, &[arg.as_str()]].concat(), flag);
            }
        }
        // Its message size, under whichever name the original gave it.
        let size = ["--size", "--buf-size", "--value-size"]
            .into_iter()
            .find(|f| has(f));
        if let Some(size) = size {
            for v in BAD_SIZE {
                let arg = format!("{size}={v}");
                refused_as_usage(&bin, &[rank, &[arg.as_str()]].concat(), size);
            }
        }
        walked += 1;
    }
    assert!(walked >= 18, "only {walked} benchmark binaries found");
}

#[test]
fn every_subcommand_refuses_a_bad_duration_size_and_count_with_2() {
    let tool = Path::new(env!("CARGO_BIN_EXE_rdma-bench"));
    let help = Command::new(tool).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    let subs: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|s| *s != "help")
        .collect();
    assert!(
        subs.contains(&"write-bw") && subs.contains(&"fleet"),
        "{subs:?}"
    );
    // (flag, the values to try, positional arguments the subcommand needs to reach its checks).
    let mut probed = Vec::new();
    for sub in &subs {
        let flags = flags_of(tool, &[sub]);
        let positional: &[&str] = match *sub {
            "fleet" => &["a,b"],
            "sweep" => &["--", "rw-tput-sender"],
            _ => &[],
        };
        let secs = ["--duration", "--run-timeout"];
        let sizes = ["--size", "--value-size"];
        let counts = [
            "--iters",
            "--lat-iters",
            "--reps",
            "--passes",
            "--num-keys",
            "--post_list",
            "--recv_post_list",
        ];
        for flag in &flags {
            let values: &[&str] = if secs.contains(&flag.as_str()) {
                &BAD_SECS
            } else if sizes.contains(&flag.as_str()) {
                &BAD_SIZE
            } else if counts.contains(&flag.as_str()) {
                &BAD_COUNT
            } else {
                continue;
            };
            for v in values {
                // FLAG=VALUE: a value that starts with '-' is the flag's, not an argument.
                let arg = format!("{flag}={v}");
                let mut args = vec![*sub, arg.as_str()];
                args.extend_from_slice(positional);
                refused_as_usage(tool, &args, flag);
            }
            probed.push(format!("{sub} {flag}"));
        }
    }
    // The eight perftest tools' -D and -n (and -s but for the atomics), fleet's three, sweep's
    // and kv-bench's.
    assert!(
        probed.len() >= 8 * 2 + 6 + 3 + 2 + 3,
        "only {} flags probed: {probed:?}",
        probed.len()
    );
}
