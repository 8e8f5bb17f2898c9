//! perftest's out-of-band TCP channel (port 18515 by default): the connection, the version and
//! system-data exchanges, the MTU agreement, the QP keys, the end-of-test reports and the closing.
//!
//! Every exchange is symmetric and ordered the same way on both sides: the client writes its
//! message, then reads the server's; the server reads, then writes. Each message is one `write()`
//! of a fixed size, because perftest reads each with a single `read()` of exactly that size.
//! Numbers are big-endian (perftest's `hton_*`), strings NUL-padded.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::family::Family;
use super::keys::{Dest, KEY_MSG_SIZE, KEY_MSG_SIZE_GID, KEY_STRUCT_SIZE};
use crate::control::Attention;
use crate::error::{Error, Result};

/// The perftest protocol we speak: Debian 12's perftest 4.5+0.17 calls itself 6.06. A peer that
/// announces 6.28 or later sees our number and skips the parameter negotiation it added then.
pub const PROTOCOL_VERSION: &str = "6.06";
/// Bytes of the version message (perftest's MAX_VERSION).
const VERSION_BYTES: usize = 16;
/// perftest refuses peers older than this.
const OLDEST_PEER: f64 = 5.70;
/// How long one step of the set-up (a key, a version) may take once both sides are connected.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(30);
/// After a stop request, how long a set-up read still waits for the peer.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How often a blocked read looks at the stop flag.
const READ_SLICE: Duration = Duration::from_millis(200);

/// How long a read may wait.
#[derive(Debug, Clone, Copy)]
pub enum Wait {
    /// Set-up steps: the peer is right there, so silence means it is stuck or gone.
    Setup,
    /// The peer is running its test (a `-D 600` run, a long `-a` sweep): wait for as long as
    /// it takes, but end on a stop request or when the peer closes the connection.
    Test,
}

impl Wait {
    /// After a stop request a set-up read still waits a little, so that a stopped side closes
    /// properly with a peer that answers (a stopped --run_infinitely client meets its server).
    /// `stopped` is when the read first saw the request.
    pub(super) fn in_stop_grace(self, stopped: &mut Option<Instant>) -> bool {
        let t = *stopped.get_or_insert_with(Instant::now);
        matches!(self, Wait::Setup) && t.elapsed() < STOP_GRACE
    }
}

/// What carries the exchange.
enum Link {
    /// perftest's default: a TCP connection.
    Tcp(TcpStream),
    /// `-R`: an RC QP connected through RDMA CM.
    #[cfg(has_rdmacm)]
    Cm(Box<super::cm_link::CmLink>),
}

/// The connected exchange channel.
pub struct Channel {
    link: Link,
    is_client: bool,
    peer: String,
    /// The peer's version, as `atof` reads it.
    peer_version: f64,
    /// A stop ends a wait for the peer.
    attention: Attention,
}

/// The number at the start of a version string, as C's `atof` reads it (0 when there is none).
pub fn leading_number(s: &str) -> f64 {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .take_while(|&(i, c)| c.is_ascii_digit() || (c == '.' && !s[..i].contains('.')))
        .last()
        .map_or(0, |(i, c)| i + c.len_utf8());
    s[..end].parse().unwrap_or(0.0)
}

/// A TCP connection to `to`, from `source` when given (`--source_ip`).
fn connect_from(
    source: Option<std::net::IpAddr>,
    to: &std::net::SocketAddr,
    timeout: Duration,
) -> std::io::Result<TcpStream> {
    let Some(ip) = source else {
        return TcpStream::connect_timeout(to, timeout);
    };
    let domain = socket2::Domain::for_address(*to);
    let socket = socket2::Socket::new(domain, socket2::Type::STREAM, None)?;
    socket.bind(&std::net::SocketAddr::from((ip, 0)).into())?;
    socket.connect_timeout(&(*to).into(), timeout)?;
    Ok(socket.into())
}

impl Channel {
    /// Connects (from `source` when given) to a server at `host:port` over `family`, retrying
    /// until `timeout` (the server may still be starting) or a stop request.
    pub fn connect(
        source: Option<std::net::IpAddr>,
        family: Family,
        host: &str,
        port: u16,
        timeout: Duration,
        attention: Attention,
    ) -> Result<Channel> {
        let peer = match family {
            Family::V4 => format!("{host}:{port}"),
            Family::V6 => format!("[{host}]:{port}"),
        };
        let deadline = Instant::now()
            .checked_add(timeout)
            .ok_or_else(|| Error::config("--connect-timeout is too large"))?;
        loop {
            // perftest's channel is of one family (AF_INET, or AF_INET6 with --ipv6-addr).
            let a = family.resolve(host, port)?;
            let why = match connect_from(source, &a, Duration::from_secs(1)) {
                Ok(stream) => return Channel::ready(stream, true, peer, attention),
                Err(e) => e,
            };
            if Instant::now() >= deadline || attention.stop_requested() {
                return Err(Error::Timeout {
                    what: format!("no server answered at {peer} ({why})"),
                    after: timeout,
                    hint: Some("start the server side first, with the same -p and flags"),
                });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits for one client on `port` of `ip` (all addresses of `family` when None), for as
    /// long as it takes or until a stop request.
    pub fn accept(
        ip: Option<std::net::IpAddr>,
        family: Family,
        port: u16,
        attention: Attention,
    ) -> Result<Channel> {
        let at = ip.unwrap_or(family.unspecified());
        let listener = TcpListener::bind((at, port)).map_err(|e| {
            Error::config(format!(
                "cannot listen on TCP port {port} of {at}: {e} (another server running? pick one \
                 with -p)"
            ))
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::config(format!("listening socket: {e}")))?;
        loop {
            match listener.accept() {
                Ok((stream, addr)) => {
                    stream
                        .set_nonblocking(false)
                        .map_err(|e| Error::config(format!("accepted socket: {e}")))?;
                    return Channel::ready(stream, false, addr.ip().to_string(), attention);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if attention.stop_requested() {
                        return Err(Error::Stopped("stopped while waiting for a client".into()));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(Error::config(format!("accept on port {port}: {e}"))),
            }
        }
    }

    fn ready(
        stream: TcpStream,
        is_client: bool,
        peer: String,
        attention: Attention,
    ) -> Result<Channel> {
        stream
            .set_nodelay(true)
            .and_then(|()| stream.set_read_timeout(Some(READ_SLICE)))
            .map_err(|e| Error::config(format!("TCP channel to {peer}: {e}")))?;
        Ok(Channel {
            link: Link::Tcp(stream),
            is_client,
            peer,
            peer_version: 0.0,
            attention,
        })
    }

    /// A channel over an RDMA CM link (`-R`).
    #[cfg(has_rdmacm)]
    pub fn over_cm(link: super::cm_link::CmLink, is_client: bool, peer: String) -> Channel {
        Channel {
            attention: link.attention(),
            link: Link::Cm(Box::new(link)),
            is_client,
            peer,
            peer_version: 0.0,
        }
    }

    /// True when the exchange runs over RDMA CM (`-R`).
    pub fn is_cm(&self) -> bool {
        !matches!(self.link, Link::Tcp(_))
    }

    /// The peer's protocol version.
    pub fn peer_version(&self) -> f64 {
        self.peer_version
    }

    /// One symmetric exchange of `mine` for the peer's message of `theirs.len()` bytes.
    pub fn exchange(&mut self, mine: &[u8], theirs: &mut [u8], wait: Wait) -> Result<()> {
        if self.is_client {
            self.send(mine)?;
            self.recv(theirs, wait)
        } else {
            self.recv(theirs, wait)?;
            self.send(mine)
        }
    }

    fn send(&mut self, msg: &[u8]) -> Result<()> {
        match &mut self.link {
            Link::Tcp(stream) => stream.write_all(msg).map_err(|e| Error::PeerLost {
                peer: self.peer.clone(),
                what: format!("perftest channel: {e}"),
            }),
            #[cfg(has_rdmacm)]
            Link::Cm(link) => link.send(msg),
        }
    }

    // Without librdmacm the match has one arm.
    #[allow(clippy::infallible_destructuring_match)]
    fn recv(&mut self, buf: &mut [u8], wait: Wait) -> Result<()> {
        let stream = match &mut self.link {
            Link::Tcp(stream) => stream,
            #[cfg(has_rdmacm)]
            Link::Cm(link) => return link.recv(buf, wait),
        };
        let start = Instant::now();
        let mut stopped = None;
        let mut got = 0;
        while got < buf.len() {
            match stream.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(Error::PeerLost {
                        peer: self.peer.clone(),
                        what: "it closed the perftest channel".into(),
                    })
                }
                Ok(n) => got += n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if self.attention.stop_requested() && !wait.in_stop_grace(&mut stopped) {
                        return Err(Error::Stopped(format!(
                            "stopped while waiting for {}",
                            self.peer
                        )));
                    }
                    if matches!(wait, Wait::Setup) && start.elapsed() > SETUP_TIMEOUT {
                        return Err(Error::Timeout {
                            what: format!("no answer from {} on the perftest channel", self.peer),
                            after: SETUP_TIMEOUT,
                            hint: Some(
                                "the peer is stuck, or is not perftest/rdma-bench with the same test and flags",
                            ),
                        });
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::PeerLost {
                        peer: self.peer.clone(),
                        what: format!("perftest channel: {e}"),
                    })
                }
            }
        }
        Ok(())
    }

    /// Versions first (perftest's `exchange_versions`): refuses a peer older than perftest 5.70,
    /// as perftest does.
    pub fn exchange_versions(&mut self) -> Result<()> {
        let mut mine = [0u8; VERSION_BYTES];
        mine[..PROTOCOL_VERSION.len()].copy_from_slice(PROTOCOL_VERSION.as_bytes());
        let mut theirs = [0u8; VERSION_BYTES];
        self.exchange(&mine, &mut theirs, Wait::Setup)?;
        let text: String = theirs
            .iter()
            .take_while(|&&b| b != 0)
            .map(|&b| b as char)
            .collect();
        self.peer_version = leading_number(&text);
        if self.peer_version < OLDEST_PEER {
            return Err(Error::Protocol(format!(
                "{} speaks perftest protocol {text:?}; perftest {OLDEST_PEER:.2} or later is needed",
                self.peer
            )));
        }
        Ok(())
    }

    /// `--dont_xchg_versions`: no versions are exchanged; the peer is taken to speak ours.
    pub fn assume_own_version(&mut self) {
        self.peer_version = leading_number(PROTOCOL_VERSION);
    }

    /// Page size and cache-line size (perftest's `check_sys_data`); both sides keep the larger.
    pub fn exchange_sys_data(&mut self, cycle_buffer: u32, cache_line: u32) -> Result<(u32, u32)> {
        if self.peer_version < 5.32 {
            return Ok((cycle_buffer, cache_line));
        }
        let mut theirs = [0u8; 4];
        self.exchange(&cycle_buffer.to_be_bytes(), &mut theirs, Wait::Setup)?;
        let rem_cycle = u32::from_be_bytes(theirs);
        self.exchange(&cache_line.to_be_bytes(), &mut theirs, Wait::Setup)?;
        let rem_line = u32::from_be_bytes(theirs);
        let (cycle, line) = (cycle_buffer.max(rem_cycle), cache_line.max(rem_line));
        // Buffers are laid out from these: refuse what no machine has.
        if !cycle.is_power_of_two() || !line.is_power_of_two() || line > cycle || cycle > 1 << 30 {
            return Err(Error::Protocol(format!(
                "{} sent page size {rem_cycle} and cache line {rem_line}: not a machine's",
                self.peer
            )));
        }
        Ok((cycle, line))
    }

    /// The path MTU (perftest's `check_mtu`): each side sends its `ibv_mtu` value (1 = 256 B …
    /// 5 = 4096 B) as a decimal string; both use the smaller.
    pub fn exchange_mtu(&mut self, mtu: u32) -> Result<u32> {
        if self.peer_version < 5.1 {
            return Ok(mtu);
        }
        let len = if self.peer_version >= 5.31 { 2 } else { 4 };
        let mut mine = [0u8; 4];
        let digits = mtu.to_string();
        mine[..digits.len().min(3)].copy_from_slice(&digits.as_bytes()[..digits.len().min(3)]);
        let mut theirs = [0u8; 4];
        self.exchange(&mine[..len], &mut theirs[..len], Wait::Setup)?;
        let text: String = theirs
            .iter()
            .take_while(|&&b| b.is_ascii_digit())
            .map(|&b| b as char)
            .collect();
        let rem: u32 = text.parse().unwrap_or(0);
        Ok(if (1..=5).contains(&rem) && rem < mtu {
            rem
        } else {
            mtu
        })
    }

    /// One QP key each way (perftest's `ctx_hand_shake`), also used as a bare barrier.
    pub fn hand_shake(&mut self, mine: &Dest, with_gid: bool, wait: Wait) -> Result<Dest> {
        self.hand_shake_then(mine, with_gid, wait, || Ok(()))
    }

    /// [`hand_shake`](Self::hand_shake), running `between` on the server after it has the
    /// client's key and before it answers (the `-R` server opens its test listener there, so
    /// that the client never finds the port closed).
    pub fn hand_shake_then(
        &mut self,
        mine: &Dest,
        with_gid: bool,
        wait: Wait,
        between: impl FnOnce() -> Result<()>,
    ) -> Result<Dest> {
        if self.is_cm() {
            let mut theirs = [0u8; KEY_STRUCT_SIZE];
            if self.is_client {
                self.send(&mine.encode_raw())?;
                self.recv(&mut theirs, wait)?;
            } else {
                self.recv(&mut theirs, wait)?;
                between()?;
                self.send(&mine.encode_raw())?;
            }
            return Ok(Dest::decode_raw(&theirs));
        }
        let len = if with_gid {
            KEY_MSG_SIZE_GID
        } else {
            KEY_MSG_SIZE
        };
        let mut theirs = vec![0u8; len];
        if self.is_client {
            self.send(&mine.encode(with_gid))?;
            self.recv(&mut theirs, wait)?;
        } else {
            self.recv(&mut theirs, wait)?;
            between()?;
            self.send(&mine.encode(with_gid))?;
        }
        Dest::decode(&theirs, with_gid)
    }

    /// The end-of-test BW reports (perftest's `xchg_bw_reports`), five exchanges.
    pub fn exchange_bw_report(&mut self, mine: &BwReport) -> Result<BwReport> {
        let mut b8 = [0u8; 8];
        self.exchange(&mine.size.to_be_bytes(), &mut b8, Wait::Setup)?;
        let size = u64::from_be_bytes(b8);
        let iters = if self.peer_version >= 5.33 {
            self.exchange(&mine.iters.to_be_bytes(), &mut b8, Wait::Setup)?;
            u64::from_be_bytes(b8)
        } else {
            let mut b4 = [0u8; 4];
            self.exchange(&(mine.iters as u32).to_be_bytes(), &mut b4, Wait::Setup)?;
            u64::from(u32::from_be_bytes(b4))
        };
        let mut num = |v: f64| -> Result<f64> {
            let mut b = [0u8; 8];
            self.exchange(&v.to_bits().to_be_bytes(), &mut b, Wait::Setup)?;
            Ok(f64::from_bits(u64::from_be_bytes(b)))
        };
        Ok(BwReport {
            size,
            iters,
            bw_peak: num(mine.bw_peak)?,
            bw_avg: num(mine.bw_avg)?,
            msg_rate: num(mine.msg_rate)?,
        })
    }

    /// perftest's `ctx_close_connection`: a last key exchange, then "done" each way. We read the
    /// peer's "done" before closing, so that our close never resets a peer still writing it.
    pub fn close(&mut self, mine: &Dest, with_gid: bool) -> Result<()> {
        self.hand_shake(mine, with_gid, Wait::Setup)?;
        self.close_after_handshake()
    }

    /// The "done" of [`close`](Self::close), for a side whose last handshake had to wait for
    /// the peer's whole run. Over RDMA CM perftest sends none.
    pub fn close_after_handshake(&mut self) -> Result<()> {
        if self.is_cm() {
            return Ok(());
        }
        self.send(b"done\0")?;
        let mut done = [0u8; 5];
        let _ = self.recv(&mut done, Wait::Setup);
        Ok(())
    }
}

/// One side's BW result as perftest exchanges it (MB/s or Gb/s as the side's report format says).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BwReport {
    /// Message size.
    pub size: u64,
    /// Iterations.
    pub iters: u64,
    /// Peak bandwidth.
    pub bw_peak: f64,
    /// Average bandwidth.
    pub bw_avg: f64,
    /// Messages per second, millions.
    pub msg_rate: f64,
}

#[cfg(test)]
mod tests;
