//! Direct TCP exchange of `QpInfo`s between a server and a client (perftest-style tools): both
//! send theirs and read the other's, within a deadline.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::now_ms;
use super::wire::{decode, encode, Entry, VALUE_LEN};
use crate::error::{Error, Result};
use crate::verbs::QpInfo;

const MAGIC: &[u8; 4] = b"RBX1";
const MAX_QPS: u32 = 4096;

fn io(what: &str, peer: &str, e: std::io::Error) -> Error {
    Error::config(format!("QP exchange with {peer}: {what}: {e}"))
}

fn swap(mut s: TcpStream, peer: &str, mine: &[QpInfo], deadline: Instant) -> Result<Vec<QpInfo>> {
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(10));
    s.set_read_timeout(Some(left))
        .map_err(|e| io("socket", peer, e))?;
    s.set_write_timeout(Some(left))
        .map_err(|e| io("socket", peer, e))?;
    let mut out = Vec::with_capacity(8 + mine.len() * VALUE_LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(mine.len() as u32).to_le_bytes());
    for info in mine {
        out.extend_from_slice(&encode(&Entry {
            info: *info,
            run_id: 0,
            published_ms: now_ms(),
            beat: 0,
        }));
    }
    s.write_all(&out).map_err(|e| io("sending", peer, e))?;
    let mut head = [0u8; 8];
    s.read_exact(&mut head)
        .map_err(|e| io("reading", peer, e))?;
    if &head[..4] != MAGIC {
        return Err(Error::protocol(format!(
            "QP exchange with {peer}: the peer does not speak rdma-bench's exchange"
        )));
    }
    let n = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
    if n > MAX_QPS {
        return Err(Error::protocol(format!(
            "QP exchange with {peer}: peer claims {n} QPs"
        )));
    }
    let mut theirs = Vec::with_capacity(n as usize);
    let mut buf = [0u8; VALUE_LEN];
    for i in 0..n {
        s.read_exact(&mut buf).map_err(|e| io("reading", peer, e))?;
        let e = decode(&buf)
            .map_err(|why| Error::protocol(format!("QP exchange with {peer}: entry {i}: {why}")))?;
        theirs.push(e.info);
    }
    Ok(theirs)
}

/// Listens on `bind`, accepts one client within `timeout`, and swaps QP infos with it.
pub fn serve(bind: SocketAddr, mine: &[QpInfo], timeout: Duration) -> Result<Vec<QpInfo>> {
    let l = TcpListener::bind(bind).map_err(|e| io("listening", &bind.to_string(), e))?;
    l.set_nonblocking(true)
        .map_err(|e| io("listening", &bind.to_string(), e))?;
    let deadline = Instant::now() + timeout;
    loop {
        match l.accept() {
            Ok((s, peer)) => {
                s.set_nonblocking(false)
                    .map_err(|e| io("socket", &peer.to_string(), e))?;
                return swap(s, &peer.to_string(), mine, deadline);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(Error::timeout(
                        format!("no client connected to {bind}"),
                        timeout,
                        None,
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(io("accepting", &bind.to_string(), e)),
        }
    }
}

/// Connects to a server (retrying until it listens, within `timeout`) and swaps QP infos.
pub fn connect(server: SocketAddr, mine: &[QpInfo], timeout: Duration) -> Result<Vec<QpInfo>> {
    let deadline = Instant::now() + timeout;
    loop {
        match TcpStream::connect_timeout(&server, Duration::from_secs(1)) {
            Ok(s) => return swap(s, &server.to_string(), mine, deadline),
            Err(e) if Instant::now() >= deadline => {
                return Err(Error::timeout(
                    format!("cannot reach the server at {server} ({e})"),
                    timeout,
                    None,
                ))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}
