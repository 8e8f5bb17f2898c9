//! One error type for the crate: what failed, the errno, and what a person can do about it.

use std::fmt;
use std::io;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong below a benchmark.
#[derive(Debug)]
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
        /// `ibv_wc_status` value.
        status: u32,
        /// `ibv_wc_opcode` value as reported (may be undefined for error CQEs).
        opcode: u32,
        /// The `wr_id` of the failed work request.
        wr_id: u64,
        /// Provider-specific error code.
        vendor_err: u32,
    },
    /// The request cannot work as asked (bad flag combination, unknown device, wrong GID index…).
    Config(String),
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

    pub(crate) fn config(msg: impl Into<String>) -> Self {
        Error::Config(msg.into())
    }

    /// The `ibv_wc_status` of a completion error, if this is one.
    pub fn completion_status(&self) -> Option<u32> {
        match self {
            Error::Completion { status, .. } => Some(*status),
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

/// Human name of an `ibv_wc_status`, as `ibv_wc_status_str` spells it.
pub fn wc_status_name(status: u32) -> &'static str {
    const NAMES: [&str; 23] = [
        "success",
        "local length error",
        "local QP operation error",
        "local EE context operation error",
        "local protection error",
        "Work Request Flushed Error",
        "memory management operation error",
        "bad response error",
        "local access error",
        "remote invalid request error",
        "remote access error",
        "remote operation error",
        "transport retry counter exceeded",
        "RNR retry counter exceeded",
        "local RDD violation error",
        "remote invalid RD request",
        "aborted error",
        "invalid EE context number",
        "invalid EE context state",
        "fatal error",
        "response timeout error",
        "general error",
        "TM error",
    ];
    NAMES
        .get(status as usize)
        .copied()
        .unwrap_or("unknown status")
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
                "work completion error: {} (status {status}, opcode {opcode}, wr_id {wr_id}, vendor_err {vendor_err:#x})",
                wc_status_name(*status)
            ),
            Error::Config(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {}

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
            status: 10,
            opcode: 0,
            wr_id: 7,
            vendor_err: 0x88,
        };
        assert_eq!(e.completion_status(), Some(10));
        assert_eq!(
            e.to_string(),
            "work completion error: remote access error (status 10, opcode 0, wr_id 7, vendor_err 0x88)"
        );
    }

    #[test]
    fn hugepage_failure_says_how_to_reserve() {
        let e = Error::verb("shmget(SHM_HUGETLB)", libc::ENOMEM);
        assert!(e.to_string().contains("nr_hugepages"), "{e}");
    }
}
