//! One error type for the crate: what failed, the errno, and what a person can do about it.

use std::fmt;
use std::io;
use std::time::Duration;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong below a benchmark. The variant is the kind of failure, kept up to
/// the binary's one-line message (and, later, its exit code).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A verbs (or libc) call failed.
    Verb {
        /// The call that failed, e.g. `ibv_reg_mr`.
        verb: &'static str,
        /// The errno it left (0 when the call reported no errno).
        errno: i32,
        /// What to try, when something useful can be said.
        hint: Option<&'static str>,
    },
    /// A work completion with a status other than success.
    Completion {
        /// Its status.
        status: WcStatus,
        /// `ibv_wc_opcode` value as reported (may be undefined for error CQEs).
        opcode: u32,
        /// The `wr_id` of the failed work request.
        wr_id: u64,
        /// Provider-specific error code.
        vendor_err: u32,
    },
    /// The request cannot work as asked (bad flag combination, unknown device, wrong GID index…).
    Config(String),
    /// A tool's input is unusable (a missing or malformed file, an unknown metric): exit code 2,
    /// like a usage error.
    Usage(String),
    /// Something expected did not happen in time (a completion, a peer, a registry key).
    Timeout {
        /// What was awaited, as a sentence fragment ("no completion (0 of 1 arrived)").
        what: String,
        /// How long it was awaited.
        after: Duration,
        /// What the waiting side suspects, if anything ("the peer is gone or the QP is stuck").
        hint: Option<&'static str>,
    },
    /// The registry (memcached) could not be reached or answered badly.
    Registry {
        /// `HOST:PORT` of the registry.
        addr: String,
        /// What we were doing ("publishing server-0").
        what: String,
        /// The I/O or protocol error underneath.
        source: io::Error,
        /// What to do about it, when something useful can be said.
        hint: Option<&'static str>,
    },
    /// A peer or a counter broke the protocol we rely on (malformed entry, invariant broken).
    Protocol(String),
    /// `--verify` found data that is not what the peer should have written.
    Verify(String),
    /// The peer went away (or was never alive: a killed run's entry) during setup or the run.
    PeerLost {
        /// The peer's registry name.
        peer: String,
        /// How it was noticed.
        what: String,
    },
    /// A stop was requested (SIGINT/SIGTERM) before there was anything to measure.
    Stopped(String),
    /// A server told to expect N peers saw fewer come before it was stopped or gave up (the
    /// message says which did not): exit code 5.
    Incomplete(String),
    /// A check ran and found a problem (`fleet`'s bad pairs or unreachable hosts, `history
    /// check`'s regressions): exit code 6, told apart from not being able to check at all.
    Finding(String),
    /// An error and what the fabric saw meanwhile ("the link of rxe0:1 went DOWN at 7.2 s"):
    /// exits as the error does.
    Noted {
        /// The error.
        error: Box<Error>,
        /// What the port states and counters add.
        note: String,
    },
}

impl Error {
    /// A failed call, with errno taken from the thread's `errno`.
    pub(crate) fn last_os(verb: &'static str) -> Self {
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
        Self::verb(verb, errno)
    }

    /// A failed call that returned its errno (as the post/modify verbs do).
    pub(crate) fn verb(verb: &'static str, errno: i32) -> Self {
        Error::Verb {
            verb,
            errno,
            hint: hint_for(verb, errno),
        }
    }

    /// This error with `note` after it (see [`Error::Noted`]).
    pub(crate) fn noted(self, note: impl Into<String>) -> Self {
        Error::Noted {
            error: Box::new(self),
            note: note.into(),
        }
    }

    pub(crate) fn config(msg: impl Into<String>) -> Self {
        Error::Config(msg.into())
    }

    pub(crate) fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }

    pub(crate) fn protocol(msg: impl Into<String>) -> Self {
        Error::Protocol(msg.into())
    }

    pub(crate) fn timeout(
        what: impl Into<String>,
        after: Duration,
        hint: Option<&'static str>,
    ) -> Self {
        Error::Timeout {
            what: what.into(),
            after,
            hint,
        }
    }

    /// The process exit code for this failure (documented in the README): 1 setup failure,
    /// 3 peer lost, 4 verification failed (`history check`: a regression), 5 expected peers did not all come, 130 stopped before
    /// anything was measured (2 is clap's, for usage errors).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::PeerLost { .. } => 3,
            Error::Verify(_) => 4,
            Error::Stopped(_) => 130,
            Error::Incomplete(_) => 5,
            Error::Finding(_) => 6,
            Error::Usage(_) => 2,
            Error::Noted { error, .. } => error.exit_code(),
            _ => 1,
        }
    }

    /// True for a [`Error::Timeout`].
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Noted { error, .. } => error.is_timeout(),
            e => matches!(e, Error::Timeout { .. }),
        }
    }

    /// The status of a completion error, if this is one.
    pub fn completion_status(&self) -> Option<WcStatus> {
        match self {
            Error::Completion { status, .. } => Some(*status),
            Error::Noted { error, .. } => error.completion_status(),
            _ => None,
        }
    }

    /// The errno of a failed call, if this is one.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Verb { errno, .. } => Some(*errno),
            _ => None,
        }
    }
}

fn hint_for(verb: &str, errno: i32) -> Option<&'static str> {
    match (verb, errno) {
        ("ibv_reg_mr", libc::ENOMEM) | ("ibv_reg_mr", libc::EPERM) => {
            Some("raise the locked-memory limit (`ulimit -l unlimited`, or memlock in limits.conf)")
        }
        ("ibv_create_qp" | "ibv_create_qp_ex" | "ibv_create_cq", libc::ENOMEM) => {
            Some("the device is out of queue resources or `ulimit -l` is too low")
        }
        ("ibv_create_qp" | "ibv_create_qp_ex", libc::EINVAL) => {
            Some("queue depth, SGE count or max inline data exceed what the device supports (ibv_devinfo -v)")
        }
        ("ibv_modify_qp", libc::EINVAL) => {
            Some("check the GID index (show_gids, ibv_devinfo -v), the port and the peer's QP attributes")
        }
        ("ibv_modify_qp", libc::ETIMEDOUT) | ("ibv_create_ah", libc::ETIMEDOUT) => {
            Some("no route to the peer's GID: check addresses and that the GID index has an IP")
        }
        ("ibv_open_device", _) | ("ibv_get_device_list", _) => {
            Some("is the RDMA stack loaded? (`ibv_devices`; for Soft-RoCE see bench_scripts/softroce.sh)")
        }
        ("mmap(MAP_HUGETLB)" | "shmget(SHM_HUGETLB)", libc::ENOMEM | libc::EPERM | libc::EINVAL) => Some(
            "reserve hugepages: `echo 256 > /proc/sys/vm/nr_hugepages` (or run with --hugepages off)",
        ),
        ("mbind", libc::EINVAL) => Some("no such NUMA node (numactl -H)"),
        _ => None,
    }
}

fn errno_name(errno: i32) -> Option<&'static str> {
    Some(match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ENETUNREACH => "ENETUNREACH",
        _ => return None,
    })
}

/// The status of a work completion (`enum ibv_wc_status`; the values are the verbs ABI's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WcStatus {
    /// `IBV_WC_SUCCESS`.
    Success,
    /// `IBV_WC_LOC_LEN_ERR`.
    LocalLength,
    /// `IBV_WC_LOC_QP_OP_ERR`.
    LocalQpOperation,
    /// `IBV_WC_LOC_EEC_OP_ERR`.
    LocalEecOperation,
    /// `IBV_WC_LOC_PROT_ERR`.
    LocalProtection,
    /// `IBV_WC_WR_FLUSH_ERR`: the QP went to the error state with this WR outstanding.
    WrFlush,
    /// `IBV_WC_MW_BIND_ERR`.
    MwBind,
    /// `IBV_WC_BAD_RESP_ERR`.
    BadResponse,
    /// `IBV_WC_LOC_ACCESS_ERR`.
    LocalAccess,
    /// `IBV_WC_REM_INV_REQ_ERR`.
    RemoteInvalidRequest,
    /// `IBV_WC_REM_ACCESS_ERR`.
    RemoteAccess,
    /// `IBV_WC_REM_OP_ERR`.
    RemoteOperation,
    /// `IBV_WC_RETRY_EXC_ERR`: the transport's retries ran out (the peer did not answer).
    RetryExceeded,
    /// `IBV_WC_RNR_RETRY_EXC_ERR`: the peer had no RECV posted, retries ran out.
    RnrRetryExceeded,
    /// Another status (`ibv_wc_status` value).
    Other(u32),
}

impl WcStatus {
    /// The status of an `ibv_wc_status` value.
    pub fn from_raw(raw: u32) -> WcStatus {
        use WcStatus::*;
        match raw {
            0 => Success,
            1 => LocalLength,
            2 => LocalQpOperation,
            3 => LocalEecOperation,
            4 => LocalProtection,
            5 => WrFlush,
            6 => MwBind,
            7 => BadResponse,
            8 => LocalAccess,
            9 => RemoteInvalidRequest,
            10 => RemoteAccess,
            11 => RemoteOperation,
            12 => RetryExceeded,
            13 => RnrRetryExceeded,
            n => Other(n),
        }
    }

    /// The `ibv_wc_status` value.
    pub fn raw(self) -> u32 {
        use WcStatus::*;
        match self {
            Success => 0,
            LocalLength => 1,
            LocalQpOperation => 2,
            LocalEecOperation => 3,
            LocalProtection => 4,
            WrFlush => 5,
            MwBind => 6,
            BadResponse => 7,
            LocalAccess => 8,
            RemoteInvalidRequest => 9,
            RemoteAccess => 10,
            RemoteOperation => 11,
            RetryExceeded => 12,
            RnrRetryExceeded => 13,
            Other(n) => n,
        }
    }

    /// The name libibverbs gives it (`ibv_wc_status_str`), e.g. "remote access error".
    pub fn name(self) -> &'static str {
        crate::sys::wc_status_str(self.raw())
    }
}

impl fmt::Display for WcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Verb { verb, errno, hint } => {
                let text = io::Error::from_raw_os_error(*errno);
                write!(f, "{verb} failed: ")?;
                if *errno == 0 {
                    write!(f, "no errno reported")?;
                } else {
                    // io::Error appends " (os error N)"; keep only the message.
                    let msg = text.to_string();
                    let msg = msg.split(" (os error").next().unwrap_or(&msg);
                    match errno_name(*errno) {
                        Some(name) => write!(f, "{msg} ({name})")?,
                        None => write!(f, "{msg} (errno {errno})")?,
                    }
                }
                if let Some(hint) = hint {
                    write!(f, " — {hint}")?;
                }
                Ok(())
            }
            Error::Completion { status, opcode, wr_id, vendor_err } => write!(
                f,
                "work completion error: {status} (status {}, opcode {opcode}, wr_id {wr_id}, vendor_err {vendor_err:#x})",
                status.raw()
            ),
            Error::Config(msg)
            | Error::Usage(msg)
            | Error::Protocol(msg)
            | Error::Stopped(msg)
            | Error::Incomplete(msg)
            | Error::Finding(msg) => f.write_str(msg),
            Error::PeerLost { peer, what } => write!(f, "peer {peer} is gone: {what}"),
            Error::Verify(msg) => write!(f, "verify: {msg}"),
            Error::Timeout { what, after, hint } => {
                write!(f, "{what} within {}", fmt_secs(*after))?;
                if let Some(hint) = hint {
                    write!(f, ": {hint}")?;
                }
                Ok(())
            }
            Error::Registry {
                addr,
                what,
                source,
                hint,
            } => {
                write!(f, "registry at {addr}: {what}: {source}")?;
                if let Some(hint) = hint {
                    write!(f, " ({hint})")?;
                }
                Ok(())
            }
            Error::Noted { error, note } => write!(f, "{error}; {note}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Registry { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A duration for messages: whole seconds from 10 s up, else as many decimals as it takes
/// ("0.3 s", "2.5 s", "60 s"), never a misleading "0 s".
pub fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 || s.fract() == 0.0 {
        format!("{s:.0} s")
    } else if s >= 0.1 {
        format!("{:.1} s", (s * 10.0).round() / 10.0)
    } else {
        format!("{:.0} ms", s * 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reg_mr_enomem_says_what_to_raise() {
        let e = Error::verb("ibv_reg_mr", libc::ENOMEM);
        assert_eq!(
            e.to_string(),
            "ibv_reg_mr failed: Cannot allocate memory (ENOMEM) — raise the locked-memory limit \
             (`ulimit -l unlimited`, or memlock in limits.conf)"
        );
    }

    #[test]
    fn unknown_errno_is_numbered_and_unhinted() {
        let e = Error::verb("ibv_alloc_pd", 1234);
        assert!(e.to_string().starts_with("ibv_alloc_pd failed: "), "{e}");
        assert!(e.to_string().ends_with("(errno 1234)"), "{e}");
    }

    #[test]
    fn completion_error_names_the_status() {
        let e = Error::Completion {
            status: WcStatus::from_raw(10),
            opcode: 0,
            wr_id: 7,
            vendor_err: 0x88,
        };
        assert_eq!(e.completion_status(), Some(WcStatus::RemoteAccess));
        assert_eq!(
            e.to_string(),
            "work completion error: remote access error (status 10, opcode 0, wr_id 7, vendor_err 0x88)"
        );
    }

    #[test]
    fn short_timeouts_are_not_zero_seconds() {
        assert_eq!(fmt_secs(Duration::from_millis(300)), "0.3 s");
        assert_eq!(fmt_secs(Duration::from_millis(20)), "20 ms");
        assert_eq!(fmt_secs(Duration::from_millis(2500)), "2.5 s");
        assert_eq!(fmt_secs(Duration::from_secs(60)), "60 s");
        let e = Error::timeout(
            "no completion (0 of 1 arrived)",
            Duration::from_millis(300),
            None,
        );
        assert!(e.is_timeout());
        assert_eq!(e.to_string(), "no completion (0 of 1 arrived) within 0.3 s");
    }

    #[test]
    fn registry_errors_keep_their_source() {
        use std::error::Error as _;
        let e = Error::Registry {
            addr: "127.0.0.1:11211".into(),
            what: "publishing server-0".into(),
            source: io::Error::new(io::ErrorKind::TimedOut, "timed out"),
            hint: None,
        };
        assert_eq!(
            e.to_string(),
            "registry at 127.0.0.1:11211: publishing server-0: timed out"
        );
        assert_eq!(e.source().unwrap().to_string(), "timed out");
    }

    #[test]
    fn hugepage_failure_says_how_to_reserve() {
        let e = Error::verb("shmget(SHM_HUGETLB)", libc::ENOMEM);
        assert!(e.to_string().contains("nr_hugepages"), "{e}");
    }
}
