//! The memcached text-protocol commands the registry needs (set, get, touch, delete, version;
//! set and touch also without waiting for the answer).
//! A hand-written subset, not a client crate: it is ~100 lines, has no TLS or async baggage, and
//! bounds every read so a misbehaving server cannot make us allocate or block without limit.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const MAX_LINE: u64 = 1024;
const MAX_VALUE: usize = 1 << 20;

pub(crate) struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

fn protocol(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl Conn {
    pub(crate) fn connect(
        addr: SocketAddr,
        timeout: Duration,
        answer: Duration,
    ) -> io::Result<Conn> {
        let s = TcpStream::connect_timeout(&addr, timeout)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(answer))?;
        s.set_write_timeout(Some(answer))?;
        let writer = s.try_clone()?;
        let mut c = Conn {
            reader: BufReader::new(s),
            writer,
        };
        // A server that is not memcached is caught here, not at the first lookup.
        c.writer.write_all(b"version\r\n")?;
        let line = c.line()?;
        if !line.starts_with("VERSION ") {
            return Err(protocol(format!(
                "not a memcached server (answered {line:?})"
            )));
        }
        Ok(c)
    }

    /// How long a read waits for the answer from now on.
    pub(crate) fn answer_within(&mut self, d: Duration) -> io::Result<()> {
        self.reader.get_ref().set_read_timeout(Some(d))
    }

    fn line(&mut self) -> io::Result<String> {
        let mut buf = Vec::new();
        (&mut self.reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut buf)?;
        if buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "registry closed the connection",
            ));
        }
        if !buf.ends_with(b"\r\n") {
            return Err(protocol("over-long or truncated reply line".into()));
        }
        buf.truncate(buf.len() - 2);
        String::from_utf8(buf).map_err(|_| protocol("reply line is not UTF-8".into()))
    }

    /// Stores `value` under `key`, expiring `ttl_s` seconds from now (0: never).
    pub(crate) fn set(&mut self, key: &str, value: &[u8], ttl_s: u32) -> io::Result<()> {
        let mut req = format!("set {key} 0 {ttl_s} {}\r\n", value.len()).into_bytes();
        req.extend_from_slice(value);
        req.extend_from_slice(b"\r\n");
        self.writer.write_all(&req)?;
        match self.line()?.as_str() {
            "STORED" => Ok(()),
            other => Err(protocol(format!("set {key}: registry answered {other:?}"))),
        }
    }

    pub(crate) fn get(&mut self, key: &str) -> io::Result<Option<Vec<u8>>> {
        self.writer.write_all(format!("get {key}\r\n").as_bytes())?;
        let header = self.line()?;
        if header == "END" {
            return Ok(None);
        }
        let mut parts = header.split(' ');
        let len = match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("VALUE"), Some(k), Some(_flags), Some(len)) if k == key => {
                len.parse::<usize>().ok()
            }
            _ => None,
        }
        .filter(|&l| l <= MAX_VALUE)
        .ok_or_else(|| protocol(format!("get {key}: unexpected reply {header:?}")))?;
        let mut value = vec![0u8; len + 2];
        self.reader.read_exact(&mut value)?;
        if !value.ends_with(b"\r\n") {
            return Err(protocol(format!("get {key}: value not terminated")));
        }
        value.truncate(len);
        match self.line()?.as_str() {
            "END" => Ok(Some(value)),
            other => Err(protocol(format!("get {key}: expected END, got {other:?}"))),
        }
    }

    /// Stores `value` under `key` without waiting for the answer (memcached's `noreply`): for the
    /// once-a-second heartbeat, which must cost the posting thread as little as possible. A
    /// registry that went away is noticed by the next command that reads.
    pub(crate) fn set_noreply(&mut self, key: &str, value: &[u8], ttl_s: u32) -> io::Result<()> {
        let mut req = format!("set {key} 0 {ttl_s} {} noreply\r\n", value.len()).into_bytes();
        req.extend_from_slice(value);
        req.extend_from_slice(b"\r\n");
        self.writer.write_all(&req)
    }

    /// Pushes `key`'s expiry to `ttl_s` seconds from now, without waiting for the answer.
    pub(crate) fn touch_noreply(&mut self, key: &str, ttl_s: u32) -> io::Result<()> {
        self.writer
            .write_all(format!("touch {key} {ttl_s} noreply\r\n").as_bytes())
    }

    pub(crate) fn delete(&mut self, key: &str) -> io::Result<()> {
        self.writer
            .write_all(format!("delete {key}\r\n").as_bytes())?;
        match self.line()?.as_str() {
            "DELETED" | "NOT_FOUND" => Ok(()),
            other => Err(protocol(format!(
                "delete {key}: registry answered {other:?}"
            ))),
        }
    }
}
