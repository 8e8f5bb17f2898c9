//! rc-swarm on one device: two processes (as two machines) with emulated VMs, READs and WRITEs;
//! ranks taken from srun's and mpirun's variables and from a real `mpirun`; a short sweep; a
//! killed process; a Ctrl-C on one process that ends the whole swarm.

use crate::common::bench_run;
use crate::common::memcached;
use crate::common::swarm;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bench_run::{device_args, finish_all};
use memcached::Memcached;
use swarm::check_machine;

const BIN: &str = env!("CARGO_BIN_EXE_rc-swarm");

/// One rc-swarm process with `args` (and `env`), on the device, against `m`.
fn spawn(m: &Memcached, args: &[&str], env: &[(&str, &str)], secs: &str) -> Child {
    Command::new(BIN)
        .args(args)
        .args(device_args())
        .args([
            "--registry",
            &m.addr(),
            "--duration",
            secs,
            "--json",
            "--connect-timeout",
            "60",
        ])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rc-swarm runs")
}

/// Two processes with `flags`, given their ranks by flags.
fn two(flags: &[&str]) -> Vec<String> {
    let m = Memcached::start();
    let procs = (0..2)
        .map(|p| {
            let id = p.to_string();
            let mut a = vec!["--process-id", &id, "--num-processes", "2"];
            a.extend(flags);
            (
                spawn(&m, &a, &[], "3"),
                if p == 0 { "process 0" } else { "process 1" },
            )
        })
        .collect();
    finish_all(procs)
}

#[test]
fn two_processes_read_with_two_vms_each_then_write() {
    let base = ["--num-threads", "2", "--vms-per-process", "2"];
    let read = [
        &base[..],
        &["--do-read", "1", "--size", "32", "--window-size", "8"],
    ]
    .concat();
    let outs = two(&read);
    for (p, out) in outs.iter().enumerate() {
        // 2 processes × 2 VMs = 4 QPs per thread, the 2 for the other process connected.
        check_machine(out, p, 2, 4, 2);
        assert!(out.contains("READ 32 B"), "{out}");
    }
    let write = [
        &base[..],
        &["--do-read", "0", "--size", "16", "--allsig", "0"],
    ]
    .concat();
    for (p, out) in two(&write).iter().enumerate() {
        check_machine(out, p, 2, 4, 2);
        assert!(out.contains("WRITE 16 B"), "{out}");
    }
}

#[test]
fn ranks_come_from_srun_and_mpirun_variables() {
    let m = Memcached::start();
    let flags = ["--num-threads", "1"];
    let slurm: Vec<_> = (0..2)
        .map(|p| {
            let id = p.to_string();
            let env = [("SLURM_PROCID", id.as_str()), ("SLURM_NTASKS", "2")];
            (spawn(&m, &flags, &env, "2"), "srun rank")
        })
        .collect();
    for (p, out) in finish_all(slurm).iter().enumerate() {
        assert!(
            out.contains(&format!("main: Process {p} of 2 (Slurm (srun))")),
            "{out}"
        );
        check_machine(out, p, 1, 2, 1);
    }
    let ompi: Vec<_> = (0..2)
        .map(|p| {
            let id = p.to_string();
            let env = [
                ("OMPI_COMM_WORLD_RANK", id.as_str()),
                ("OMPI_COMM_WORLD_SIZE", "2"),
            ];
            (spawn(&m, &flags, &env, "2"), "mpirun rank")
        })
        .collect();
    for (p, out) in finish_all(ompi).iter().enumerate() {
        assert!(
            out.contains(&format!("main: Process {p} of 2 (Open MPI (mpirun))")),
            "{out}"
        );
    }
}

#[test]
fn a_real_mpirun_launches_the_swarm() {
    let m = Memcached::start();
    let out = Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2", BIN])
        .args([
            "--num-threads",
            "1",
            "--registry",
            &m.addr(),
            "--duration",
            "2",
        ])
        .args(["--connect-timeout", "60"])
        .args(device_args())
        .output()
        .expect("mpirun (Debian's openmpi-bin, installed by softroce.sh setup) runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mpirun failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for p in 0..2 {
        assert!(
            stdout.contains(&format!("main: Process {p} of 2 (Open MPI (mpirun))")),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("Machine {p} average: ")),
            "{stdout}"
        );
    }
}

#[test]
fn a_killed_process_ends_the_others_with_a_clear_line() {
    let m = Memcached::start();
    let flags = ["--num-threads", "1", "--vms-per-process", "2"];
    let p0 = spawn(
        &m,
        &[&flags[..], &["--process-id", "0", "--num-processes", "2"]].concat(),
        &[],
        "60",
    );
    let mut p1 = spawn(
        &m,
        &[&flags[..], &["--process-id", "1", "--num-processes", "2"]].concat(),
        &[],
        "60",
    );
    // Let them connect and measure, then kill process 1 as a crash would.
    std::thread::sleep(Duration::from_secs(8));
    p1.kill().expect("kill process 1");
    let _ = p1.wait();
    let started = Instant::now();
    let out = p0.wait_with_output().expect("process 0 ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "peer lost is exit 3:\n{stdout}\n{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "process 0 took {:?} to notice",
        started.elapsed()
    );
    assert!(
        stderr.contains("rc-swarm: ") && stderr.contains("on_proc_1"),
        "{stderr}"
    );
    assert!(stdout.contains("main: run failed: "), "{stdout}");
}

#[test]
fn ctrl_c_on_one_process_ends_the_whole_swarm() {
    let m = Memcached::start();
    let flags = ["--num-threads", "1"];
    let p0 = spawn(
        &m,
        &[&flags[..], &["--process-id", "0", "--num-processes", "2"]].concat(),
        &[],
        "60",
    );
    let p1 = spawn(
        &m,
        &[&flags[..], &["--process-id", "1", "--num-processes", "2"]].concat(),
        &[],
        "60",
    );
    std::thread::sleep(Duration::from_secs(8));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(p1.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let outs = finish_all(vec![(p0, "process 0"), (p1, "process 1")]);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(
        outs[0].contains("main: process 1 finished: stopping"),
        "{}",
        outs[0]
    );
    check_machine(&outs[0], 0, 1, 2, 1);
    check_machine(&outs[1], 1, 1, 2, 1);
}

#[test]
fn a_short_sweep_writes_the_original_sweep_file_and_a_csv() {
    let dir = std::env::temp_dir().join(format!("rc-swarm-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tiny.conf");
    std::fs::write(
        &conf,
        "DESCRIPTION=\"16-byte read\"\nSIZE=16\nDO_READ=1\nALLSIG=1\nTHREADS=(1)\n\
         VMS_PER_PROCESS=(1 2)\nWINDOW_SIZE=(8)\nUNSIG_BATCH=(4)\n",
    )
    .unwrap();
    let out_base = dir.join("result");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/bench_scripts/rc-swarm/sweep.sh"
    );
    let mut dev = vec![];
    for a in device_args() {
        dev.push(a);
    }
    let out = Command::new(script)
        .arg(&conf)
        .args(["--local", "2"])
        .args(&dev)
        .env("SWEEP_DURATION", "2")
        .env("SWEEP_OUT", &out_base)
        .env(
            "RDMA_BENCH_BIN_DIR",
            std::path::Path::new(BIN).parent().unwrap(),
        )
        .output()
        .expect("sweep.sh runs");
    assert!(
        out.status.success(),
        "sweep failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let txt = std::fs::read_to_string(out_base.with_extension("txt")).unwrap();
    let lines: Vec<&str> = txt.lines().collect();
    assert_eq!(lines[0], "Experiment settings:", "{txt}");
    assert_eq!(lines[1], "1. Operation type = 16-byte read", "{txt}");
    // Two points (1 and 2 VMs per process): six #define lines, then one average per machine.
    let blocks: Vec<&[&str]> = lines[5..].chunks(8).collect();
    assert_eq!(blocks.len(), 2, "{txt}");
    for (b, vms) in blocks.iter().zip([1, 2]) {
        assert_eq!(b[0], "#define SIZE 16", "{txt}");
        assert_eq!(b[1], format!("#define VM_PER_MACHINE {vms}"), "{txt}");
        assert_eq!(b[2], "#define WINDOW_SIZE 8", "{txt}");
        assert_eq!(b[3], "#define NUM_WORKERS 2", "{txt}");
        assert_eq!(b[4], "#define UNSIG_BATCH 4", "{txt}");
        assert_eq!(b[5], "#define ALLSIG 1", "{txt}");
        for (m, line) in b[6..].iter().enumerate() {
            let v: f64 = line
                .strip_prefix(&format!("Machine {m} average: "))
                .and_then(|r| r.strip_suffix(" M/s"))
                .unwrap_or_else(|| panic!("bad line {line:?}:\n{txt}"))
                .parse()
                .unwrap();
            assert!(v > 0.0, "{txt}");
        }
    }
    let csv = std::fs::read_to_string(out_base.with_extension("csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows[0],
        "size,do_read,use_uc,allsig,unsig_batch,vms_per_process,window_size,threads,machines,num_workers,machine,average_mops,error"
    );
    assert_eq!(rows.len(), 5, "{csv}");
    for r in &rows[1..] {
        let f: Vec<&str> = r.split(',').collect();
        assert_eq!(f.len(), 13, "{r}");
        assert!(f[11].parse::<f64>().unwrap() > 0.0, "{r}");
        assert_eq!(f[12], "\"\"", "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
