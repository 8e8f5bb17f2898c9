//! One run of a command a tool drives (a sweep's runs, a fleet's ssh sessions): spawned without
//! a shell, stdout and stderr captured, stopped when the tool is.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::control::Attention;
use crate::error::{Error, Result};

/// What a run left.
#[derive(Debug)]
pub struct Outcome {
    /// stdout, then stderr.
    pub output: String,
    /// Exit code (None: killed by a signal).
    pub code: Option<i32>,
    /// Wall-clock time.
    pub seconds: f64,
    /// The sweep was stopped (SIGINT/SIGTERM) while this run went on.
    pub interrupted: bool,
    /// The run outlived its time limit and was stopped.
    pub timed_out: bool,
}

/// How long a stopped sweep waits for its child to end on its own after a SIGINT (our benchmarks
/// and run-local.sh end cleanly on it) before killing it.
const GRACE: Duration = Duration::from_secs(3);

/// How long the output may still trickle in after the child ended (a grandchild that outlives
/// it keeps the pipe open).
const DRAIN: Duration = Duration::from_secs(5);

/// A pipe read into a buffer by a thread of its own, as it comes.
struct Captured {
    buf: Arc<Mutex<Vec<u8>>>,
    done: Arc<AtomicBool>,
}

impl Captured {
    fn start(mut r: impl Read + Send + 'static) -> Captured {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let done = Arc::new(AtomicBool::new(false));
        let (b, d) = (Arc::clone(&buf), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = r.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                if let Ok(mut b) = b.lock() {
                    b.extend_from_slice(&chunk[..n]);
                }
            }
            d.store(true, Ordering::Release);
        });
        Captured { buf, done }
    }

    /// What came, once the pipe closed or `until` passed.
    fn text(&self, until: Instant) -> String {
        while !self.done.load(Ordering::Acquire) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let b = self.buf.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&b).into_owned()
    }
}

/// Runs `argv` with `env` added to the environment; a run still going after `limit` is
/// stopped as a stopped tool stops it (SIGINT, then SIGKILL after a grace).
pub fn run(
    argv: &[String],
    env: &[(&str, String)],
    attention: Attention,
    limit: Option<Duration>,
) -> Result<Outcome> {
    let start = Instant::now();
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::config(format!("cannot run {}: {e}", argv[0])))?;
    let out = child.stdout.take().map(Captured::start);
    let err = child.stderr.take().map(Captured::start);
    let mut stopped_at: Option<Instant> = None;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(_) => break None,
        }
        if stopped_at.is_none()
            && !attention.stop_requested()
            && limit.is_some_and(|l| start.elapsed() >= l)
        {
            timed_out = true;
        }
        if attention.stop_requested() || timed_out {
            let at = *stopped_at.get_or_insert_with(|| {
                // The stop may not have come from a terminal (which signals the child as well):
                // ask the child to stop as our benchmarks and run-local.sh understand it.
                let _ = Command::new("kill")
                    .args(["-INT", &child.id().to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                Instant::now()
            });
            if at.elapsed() >= GRACE {
                let _ = child.kill();
                break child.wait().ok();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let until = Instant::now() + DRAIN;
    let mut output = out.map(|c| c.text(until)).unwrap_or_default();
    if let Some(e) = err.map(|c| c.text(until)) {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&e);
    }
    Ok(Outcome {
        output,
        code: status.and_then(|s| s.code()),
        seconds: start.elapsed().as_secs_f64(),
        interrupted: attention.stop_requested() || (stopped_at.is_some() && !timed_out),
        timed_out,
    })
}
