//! Reading a running child's stdout up to a line that proves it has got somewhere, so that a
//! test signals it then, not after a fixed wait that a busy guest can outlast.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::process::Child;
use std::time::{Duration, Instant};

/// Reads `c`'s stdout line by line until `enough` returns true for a line (60 s at most), and
/// returns the lines read. The pipe goes back to `c`, so that what follows is read as usual;
/// the caller puts the returned text in front of it. `what` names what is awaited in a failure.
pub fn read_stdout_until(
    c: &mut Child,
    what: &str,
    mut enough: impl FnMut(&str) -> bool,
) -> String {
    let mut pipe = c.stdout.take().expect("stdout is piped");
    let mut text = String::new();
    let mut line = Vec::new();
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no {what} within 60 s:\n{text}"
        );
        let mut fd = libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the pipe we hold.
        if unsafe { libc::poll(&mut fd, 1, 100) } <= 0 {
            continue;
        }
        // One byte at a time: nothing past the line is taken from the pipe.
        let mut b = [0u8; 1];
        let n = pipe.read(&mut b).expect("reading the child's stdout");
        assert!(n == 1, "stdout ended before {what}:\n{text}");
        line.push(b[0]);
        if b[0] == b'\n' {
            let l = String::from_utf8_lossy(&line).into_owned();
            text.push_str(&l);
            line.clear();
            if enough(&l) {
                c.stdout = Some(pipe);
                return text;
            }
        }
    }
}
