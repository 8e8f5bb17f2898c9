//! The operations a send WR performs, and which transports carry them.

use super::QpType;
use crate::error::{Error, Result};
use crate::sys;
use sys::ibv_wr_opcode as O;

/// The operation of a send work request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// RDMA WRITE.
    Write,
    /// RDMA WRITE with immediate (host order).
    WriteImm(u32),
    /// RDMA READ into the local buffer.
    Read,
    /// SEND.
    Send,
    /// SEND with immediate (host order).
    SendImm(u32),
    /// 8-byte FETCH_AND_ADD; the old value lands in the local buffer.
    FetchAdd(u64),
    /// 8-byte CMP_AND_SWP (compare, swap); the old value lands in the local buffer.
    CmpSwap(u64, u64),
}

impl Op {
    pub(crate) fn opcode(self) -> u32 {
        match self {
            Op::Write => O::IBV_WR_RDMA_WRITE,
            Op::WriteImm(_) => O::IBV_WR_RDMA_WRITE_WITH_IMM,
            Op::Read => O::IBV_WR_RDMA_READ,
            Op::Send => O::IBV_WR_SEND,
            Op::SendImm(_) => O::IBV_WR_SEND_WITH_IMM,
            Op::FetchAdd(_) => O::IBV_WR_ATOMIC_FETCH_AND_ADD,
            Op::CmpSwap(..) => O::IBV_WR_ATOMIC_CMP_AND_SWP,
        }
    }
    /// Needs a remote address and rkey.
    pub fn is_remote(self) -> bool {
        !matches!(self, Op::Send | Op::SendImm(_))
    }
    /// FETCH_AND_ADD or CMP_AND_SWP.
    pub fn is_atomic(self) -> bool {
        matches!(self, Op::FetchAdd(_) | Op::CmpSwap(..))
    }
    /// The HCA writes the local buffer (READ response, atomic's old value): never inline.
    pub fn reads_into_local(self) -> bool {
        matches!(self, Op::Read) || self.is_atomic()
    }

    /// Refuses an operation the transport does not carry (a UD QP made with `ibv_create_qp_ex`
    /// has no WRITE builder at all: calling one would jump through a NULL pointer).
    pub fn check_transport(self, t: QpType) -> Result<()> {
        match t {
            QpType::Ud if self.is_remote() => Err(Error::config("UD QPs only SEND")),
            QpType::Uc if self.reads_into_local() => {
                Err(Error::config("UC QPs cannot READ or run atomics"))
            }
            _ => Ok(()),
        }
    }
}
