//! UD multicast: attaching a QP to a group (`ibv_attach_mcast`) and detaching it.

use super::{QpType, QueuePair};
use crate::error::{Error, Result};
use crate::sys;
use crate::verbs::Gid;

impl QueuePair {
    /// Attaches this UD QP to the multicast group `mgid` (`mlid`: the group's LID on
    /// InfiniBand, 0 on RoCE, where the GID alone names it): it then receives the datagrams sent
    /// to the group. It stays attached until it is destroyed.
    pub fn attach_multicast(&mut self, mgid: Gid, mlid: u16) -> Result<()> {
        if self.qp_type != QpType::Ud {
            return Err(Error::config(format!(
                "only a UD QP can join a multicast group (this one is {})",
                self.qp_type.name()
            )));
        }
        let gid = sys::ibv_gid { raw: mgid.0 };
        // SAFETY: the QP is alive and `gid` is a valid GID for the call's duration.
        let rc = unsafe { sys::ibv_attach_mcast(self.raw.as_ptr(), &gid, mlid) };
        if rc != 0 {
            return Err(Error::verb("ibv_attach_mcast", rc));
        }
        self.groups.push((mgid, mlid));
        Ok(())
    }

    /// Detaches every group this QP joined (on drop, before the QP is destroyed). A failure
    /// is not reported: destroying the QP detaches it in any case.
    pub(super) fn detach_groups(&mut self) {
        for (mgid, mlid) in self.groups.drain(..) {
            let gid = sys::ibv_gid { raw: mgid.0 };
            // SAFETY: the QP is alive (this runs before `ibv_destroy_qp`).
            unsafe { sys::ibv_detach_mcast(self.raw.as_ptr(), &gid, mlid) };
        }
    }
}
